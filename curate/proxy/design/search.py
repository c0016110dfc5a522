"""Recipe search over stored score columns by successive halving (``curate search``, ``proxy.search``).

```yaml
proxy:
  search:
    columns:                                  # candidates: one per (column, bound, value) ...
      dsir_v1.resample_key: {min_quantile: [0.5, 0.8, 0.9]}
      gopher_quality_v1.word_count: {min: [50, 100]}
    product: false                            # ... or true: every combination of one option per column
    without_stages: []                        # candidates draw from kept/ plus the rows these stages rejected
    toggle_stages: []                         # stages a candidate may leave out (each alone, or every subset
                                              # with product: true), beside the column options
    sample: null                              # N: a seeded random subset of N candidates (random search)
    seed: 0
    objective: multiplier                     # or goodput (yield x multiplier), or data_limited (each
                                              # candidate's share of raw's pool repeated against the pool
                                              # repeated, at proxy.data_limited's first k)
    eta: 3                                    # each rung keeps the best ceil(n / eta)
    rungs: [{budget: 75000, seeds: 1}, {budget: 300000, seeds: 3}]   # default: T/4 with 1 seed, then T
    confirm_seeds: 3                          # fresh seeds (after every seed used) for the winner vs baseline
```

Every rung trains the surviving candidates and the baseline with the run's proxy settings at the rung's
budget and seeds (``proxy/search/rung<k>/``; the report in ``search/rung<k>.json``), scores them by the
objective (the paired statistic's point value, :mod:`curate.proxy.statistics.analysis`) and advances the best
``ceil(n / eta)`` (at least one). A value beyond the baseline's measured range is a bound (``>2.00``): it
ranks above every measured value below it, and bounds at one end are ordered by their measured bpb
difference (:func:`rank_key`). A candidate that selects too little data to train on is reported as
``empty`` and dropped, not a crash. The last rung's best is the winner; it is then trained again with
**fresh seeds** beside the baseline (``proxy/search/confirm/``), and its CI comes from those runs only,
so it is not inflated by having been picked as the best of many. ``search.json`` holds every candidate's
numbers per rung, the goodput-vs-yield Pareto front of the last rung and the confirmation;
``search/winner.yaml`` is the run's pipeline with the winner's rules as a final ``select:`` (quantiles
resolved to absolute thresholds over kept/). Finished runs are reused, so a rerun resumes.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from curate.io.files import atomic_write_json, atomic_write_text
from curate.proxy.design.halving import successive_halving
from curate.proxy.errors import EmptyRecipeError
from curate.proxy.kinds import RunFiles
from curate.proxy.kinds.kept import Kept
from curate.proxy.spec.config import ProxyConfig
from curate.proxy.spec.limited import DataLimitedSpec
from curate.proxy.spec.search import SearchSpec
from curate.runtime.context import RunContext


def _phase(ctx: RunContext, cfg: ProxyConfig, tag: str, empty: dict[str, str]) -> dict[str, Any]:
    """One measurement for a rung (or the confirmation); a candidate with too little data becomes
    ``empty[name]`` and the measurement is made without it (finished shards and runs are reused)."""
    from curate.proxy.design.measure import Experiment, measure

    while True:
        try:
            return measure(ctx, Experiment(cfg, report=f"search/{tag}.json", runs_dir=f"search/{tag}")).report
        except EmptyRecipeError as e:
            if e.recipe == cfg.baseline or e.recipe not in [r.name for r in cfg.recipes]:
                raise
            empty[e.recipe] = f"selects only {e.tokens} tokens: nothing to train on"
            cfg = dataclasses.replace(cfg, recipes=[r for r in cfg.recipes if r.name != e.recipe])


SIDE = {">": 1, None: 0, "<": -1}  # a bound above its value, a measured value, a bound below it


def rank_key(rec: dict[str, Any], objective: str) -> tuple[float, int, float]:
    """A recipe's sort key for the search (lowest first), from its ``goodput.json`` entry: the objective's
    value, descending; at the same value a bound above it (``>2.00``: the baseline's measured range ends
    there, the recipe is beyond it) before a measured value, before a bound below it; then the paired bpb
    difference against the baseline (measured, lower is better), so two bounds at the same end are
    ordered by what was measured, not by name."""
    block = rec[objective]
    side = SIDE[(block.get("bounds") or {}).get("value")]
    return (-float(block["value"]), -side, float(rec["paired"]["diff_bpb"]["value"]))


def _objective_records(rep: dict[str, Any], objective: str) -> dict[str, dict[str, Any]]:
    """Each recipe's record as :func:`rank_key` reads it: its ``goodput.json`` entry, or for the
    data-limited objective its data-limited goodput at the arm's k and the paired difference there."""
    if objective != "data_limited":
        return rep["recipes"]
    return {
        e["recipe"]: {"data_limited": e["goodput"], "paired": {"diff_bpb": e["diff_bpb"]}}
        for e in rep.get("data_limited") or []
        if e["role"] == "recipe"
    }


def _numbers(rec: dict[str, Any], objective_rec: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {
        "multiplier": rec["multiplier"],
        "goodput": rec["goodput"],
        "yield": rec["yield"],
        "docs": rec["docs"],
        "tokens_kept": rec["tokens_kept"],
    }
    if objective_rec is not None and "data_limited" in objective_rec:
        out["data_limited"] = objective_rec["data_limited"]
    return out


def pareto(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names not dominated in (yield, goodput), both higher-is-better, by yield descending."""
    front = [
        n
        for n, (y, g) in points.items()
        if not any(y2 >= y and g2 >= g and (y2, g2) != (y, g) for y2, g2 in points.values())
    ]
    return sorted(front, key=lambda n: (-points[n][0], n))


def run_search(ctx: RunContext, spec: SearchSpec) -> dict[str, Any]:
    """The search (see the module docstring); writes ``search.json`` and ``search/winner.yaml``."""
    cfg = ProxyConfig.narrow(ctx.section)
    base = next(r for r in cfg.recipes if r.name == cfg.baseline)
    if isinstance(base, Kept):  # its select rules only
        base = Kept(base.name, list(base.select))
    empty: dict[str, str] = {}
    per_rung: list[dict[str, Any]] = []

    limited = (
        DataLimitedSpec(k=[cfg.data_limited.k[0]], repetition=[])
        if spec.objective == "data_limited" and cfg.data_limited is not None
        else None
    )

    def at(names: list[str], budget: int, seeds: list[int]) -> ProxyConfig:
        """The run's proxy settings with the baseline and these candidates at ``budget`` and ``seeds``,
        at that point only (no ladder, controls or follow-ups; the data-limited arm at one k when the
        objective is data-limited goodput)."""
        recipes = [base] + [Kept(n, list(spec.candidates[n]), spec.without(n)) for n in names]
        return cfg.follow_up(
            recipes=list({r.name: r for r in recipes}.values()),
            budget=budget,
            seeds=seeds,
            data_limited=limited,
        )

    keys: dict[tuple[str, int], tuple[float, int, float]] = {}

    def evaluate(names: list[str], k: int) -> dict[str, float | None]:
        rung = spec.rungs[k]
        rep = _phase(ctx, at(names, rung.budget, list(rung.seeds)), f"rung{k}", empty)
        recs = _objective_records(rep, spec.objective)
        per_rung.append({n: _numbers(rep["recipes"][n], recs.get(n)) for n in names if n in rep["recipes"]})
        scores = {n: (recs[n][spec.objective]["value"] if n in recs else None) for n in names}
        keys.update({(n, k): rank_key(recs[n], spec.objective) for n in names if scores[n] is not None})
        for n in names:
            if scores[n] is None and n not in empty:
                # trained, but the multiplier is not finite (off the baseline's curve): not rankable
                empty[n] = f"{spec.objective} not finite at rung {k}: cannot be ranked"
        return scores

    winner, history = successive_halving(
        sorted(spec.candidates), len(spec.rungs), spec.eta, evaluate, lambda n, k: keys[(n, k)]
    )
    out: dict[str, Any] = {
        "objective": spec.objective,
        "baseline": cfg.baseline,
        "rungs": [{"budget": r.budget, "seeds": list(r.seeds)} for r in spec.rungs],
        "eta": spec.eta,
        "candidates": {
            n: {"rules": spec.candidates[n], **({"without_stages": spec.off[n]} if n in spec.off else {})}
            for n in sorted(spec.candidates)
        },
        "history": [{**h, "numbers": per_rung[i]} for i, h in enumerate(history)],
        "empty": empty,
        "winner": winner,
    }
    for n, why in empty.items():
        out["candidates"][n]["empty"] = why
    last = per_rung[-1] if per_rung else {}
    pts = {
        n: (v["yield"], v["goodput"]["value"]) for n, v in last.items() if v["goodput"]["value"] is not None
    }
    out["pareto_last_rung"] = [{"recipe": n, "yield": pts[n][0], "goodput": pts[n][1]} for n in pareto(pts)]
    if winner is not None:
        full = spec.rungs[-1]
        rep = _phase(ctx, at([winner], full.budget, list(spec.confirm_seeds)), "confirm", empty)
        recs = _objective_records(rep, spec.objective)
        out["confirmation"] = {
            "seeds": list(spec.confirm_seeds),
            **_numbers(rep["recipes"][winner], recs.get(winner)),
        }
        out["winner_pipeline"] = _write_winner(ctx, winner, spec.candidates[winner], spec.without(winner))
    atomic_write_json(ctx.path("search.json"), out, indent=1, allow_nan=False)
    return out


def _stage_name(entry: Any) -> str | None:
    """The name ``without_stages`` uses for a pipeline ``stages:`` entry: its label, else its stage."""
    if not isinstance(entry, dict):
        return None
    if entry.get("label"):
        return str(entry["label"])
    from curate.pipeline.config import STAGE_KEYS

    return next((str(entry[k]) for k in STAGE_KEYS if isinstance(entry.get(k), str)), None)


def _write_winner(
    ctx: RunContext, name: str, rules: list[dict[str, Any]], without: list[str] | None = None
) -> str:
    """The run's pipeline with the winner's rules as a final ``select:`` (absolute thresholds over the
    rows the candidates drew from; none when it has no rules) and without the stages it left out."""
    import yaml

    files = RunFiles(ctx.kept_files(), ctx.rejected_files())
    resolved = Kept(name, list(rules), list(without or [])).resolved(files).select
    config = json.loads(json.dumps(ctx.config))
    stages = [e for e in config.get("stages") or [] if _stage_name(e) not in set(without or [])]
    config["stages"] = [*stages, *([{"select": resolved, "label": "search_winner"}] if resolved else [])]
    path = Path(ctx.path("search", "winner.yaml"))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, f"# curate search winner: {name}\n" + yaml.safe_dump(config, sort_keys=False))
    return str(path.relative_to(ctx.run_dir))


def format_table(result: dict[str, Any]) -> str:
    """Every candidate's objective per rung, the winner and its confirmation, as a terminal table."""

    def f(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}"

    rungs = result["rungs"]
    head = f"{'candidate':<48}" + "".join(
        f" {'rung ' + str(k) + ' @' + str(r['budget']):>16}" for k, r in enumerate(rungs)
    )
    lines = [f"search by {result['objective']} vs {result['baseline']} (eta {result['eta']})", head]
    for name in result["candidates"]:
        cells = []
        for h in result["history"]:
            got = (h.get("numbers") or {}).get(name, {}).get(result["objective"]) or {}
            mark = (got.get("bounds") or {}).get("value") or ""  # '>2.000': beyond the measured range
            cells.append(f" {mark + f(h['scores'][name]) if name in h['scores'] else '':>16}")
        note = "  empty: " + result["empty"][name] if name in result["empty"] else ""
        lines.append(f"{name:<48}{''.join(cells)}{note}")
    c = result.get("confirmation")
    if c:
        m, g = c["multiplier"], c["goodput"]
        lines.append(
            f"winner {result['winner']} on fresh seeds {c['seeds']}: multiplier {f(m['value'])} "
            f"[{f(m['ci_low'])}, {f(m['ci_high'])}], goodput {f(g['value'])} [{f(g['ci_low'])}, {f(g['ci_high'])}], "
            f"yield {f(c['yield'])}; pipeline {result['winner_pipeline']}"
        )
    else:
        lines.append("no winner: every candidate was empty")
    return "\n".join(lines)
