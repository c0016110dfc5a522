"""The mixture search (``curate mix``, ``proxy.mix``): which weights over a run's sources train best toward
the run's targets, chosen by proxy runs and a regression (RegMix, Olmix), confirmed on fresh seeds.

1. The sources: the values of ``proxy.mix.by`` (default ``source``: each input of ``input:`` as a list)
   over kept/, each tokenized through the measurement's decontamination (:mod:`curate.proxy.data.mixtures`).
2. Candidates (:func:`curate.proxy.mixfit.candidates`), designed for signal: the natural mixture (the
   data's own token shares), many mixtures spread over the whole simplex as RegMix draws its runs (sparse
   ones and near-corners among them; 6 per source by default), optionally a few around the natural
   mixture, and each source alone, all within ``max_epochs`` per source at the horizon; every one trained
   cheaply at rung 0 (half the proxy budget, one seed by default) with the run's proxy settings, on
   common random numbers (one initialisation per seed; per source, one document order).
3. The split-seed noise ceiling: a third of them measured again on one more seed; the rank correlation
   of the two seeds says how well any predictor could rank these runs (:mod:`curate.proxy.design.mixassess`).
4. The regression from weights to the headline (target) bpb at T of rung 0's mixtures within the epoch
   limit (log-linear or LightGBM, by held-out error), its k-fold held-out Spearman with a permutation
   p-value and a bootstrap interval (both refitting), and the predicted best within the epoch limit (the
   average of the best predicted, as RegMix), flagged when it lies outside the region the candidates
   sampled. With several rungs, successive halving (CLIMB) advances the best measured mixtures and the
   predicted one; the last rung's best is chosen.
5. Confirmation at the proxy budget on fresh seeds, each with a fresh document draw of every source shared
   by its mixtures (so the interval covers which documents were drawn, not only the seed): the chosen
   mixture and the best single source beside the natural mixture (the baseline), with the null control
   (the natural mixture on another document draw per seed), paired intervals and p-values, the
   detectable effect and the verdict (``proxy/mix/confirm.json``). Only this confirmation decides: the
   ``decision`` block says whether the chosen mixture was called better (what lets an export use it)
   and, in a sentence, which mixture is the better one.

``mix.json`` holds every mixture's weights, epochs, measured bpb (mean and per seed) and held-out
prediction, the regression, the choice and the confirmation. A mixture's shard repeats each source as a
run at the horizon would (:mod:`curate.proxy.data.mixtures`), so its measured multiplier prices repetition
as this proxy feels it; no factor is applied on top. Each mixture reports what Muennighoff et al. 2023's
fit would value its epochs at (``muennighoff_factor``, :func:`curate.proxy.mixfit.muennighoff_factor`) for
comparison, and the data-limited arm's repetition curve (``proxy.data_limited``) measures how this proxy's
loss to repetition compares with that fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.io.files import atomic_write_json
from curate.proxy import mixfit, stats
from curate.proxy.data.inputs import instrument
from curate.proxy.data.mixtures import MIX_SALT, build_mixture, source_shards, source_values
from curate.proxy.data.training import TrainingData
from curate.proxy.design import mixassess
from curate.proxy.design.halving import successive_halving
from curate.proxy.design.measure import Experiment, measure
from curate.proxy.design.mixassess import ceiling_block, split_subset
from curate.proxy.kinds import Recipe, control_kinds, kind
from curate.proxy.kinds.mixture import Mixture
from curate.proxy.kinds.null import Null
from curate.proxy.spec.config import ProxyConfig
from curate.proxy.spec.mix import MixSpec
from curate.proxy.statistics import analysis
from curate.runtime.context import RunContext

NULL_SALT = 0x6E756C6C  # the null control's per-seed document draw of the natural mixture
DRAW_SALT = 0x64726177  # "draw": the confirmation's per-seed document draw, shared by its mixtures


@dataclass
class Prep:
    """What every phase of the search shares: tokenizer, eval shards, the sources and their shards."""

    tok: Any
    evals: list[Any]
    eval_paths: tuple[dict[str, str], dict[str, str]]
    grams_per_set: dict[str, int]
    sources: list[str]
    shards: dict[str, dict[str, Any]]
    tokens: np.ndarray
    horizon: float
    held_out: list[str]


def prepare(ctx: RunContext, cfg: ProxyConfig, spec: MixSpec) -> Prep:
    """Eval sets, tokenizer (the run's proxy ones: ``proxy/spec.json`` must match) and source shards."""
    pdir = ctx.path("proxy")
    pdir.mkdir(parents=True, exist_ok=True)
    if not ctx.kept_files():
        raise PhaseError(f"mix: {ctx.run_dir} has no kept/ parquet files")
    inst = instrument(ctx, cfg, pdir)
    tok, evals, eval_paths, held_out = inst.tok, inst.evals, inst.eval_paths, inst.held_out
    grams_per_set = inst.grams_per_set
    names = spec.sources or source_values(ctx, spec.by, held_out)
    shards = source_shards(ctx, pdir, pdir / "mix", spec.by, names, held_out)
    keep = [s for s in names if shards[s]["tokens"] > cfg.train_config(0).seq_len + 1]
    if len(keep) < 2:
        raise PhaseError(
            f"mix: {spec.by!r} has {len(keep)} source(s) with data ({names}); a mixture needs two"
        )
    tokens = np.array([shards[s]["tokens"] for s in keep], dtype=np.float64)
    horizon = float(spec.horizon or tokens.sum())
    return Prep(tok, evals, eval_paths, grams_per_set, keep, shards, tokens, horizon, held_out)


def _train_data(
    ctx: RunContext, prep: Prep, mixtures: dict[str, np.ndarray], size: int, seeds: list[int], null: bool
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, int], str]]:
    """Each mixture's shard; returns the metas and the prefix of every (mixture, seed). Without ``null``
    (the rungs) every mixture reads each source in one document order (common random numbers). With it
    (the confirmation) each seed draws every source's documents afresh, shared by every mixture at that
    seed, so the paired interval covers which documents were drawn too; and the null control is the
    natural mixture on yet another draw per seed."""
    mdir = ctx.path("proxy", "mix", "data")
    data, prefixes = {}, {}
    salts = {s: MIX_SALT ^ (DRAW_SALT + s) for s in seeds} if null else {s: MIX_SALT for s in seeds}
    todo = dict(mixtures)
    if null:
        todo["null"] = mixtures["natural"]
        salts_null = {s: MIX_SALT ^ (NULL_SALT + s) for s in seeds}
    for n, w in todo.items():
        weights = dict(zip(prep.sources, w, strict=True))
        draws = {}
        for s in seeds:
            salt = salts_null[s] if n == "null" else salts[s]
            out = mdir / f"{n}@{size}" / (f"draw{salt:x}" if salt != MIX_SALT else "") / "train"
            draws[s] = build_mixture(out, prep.shards, weights, size=size, horizon=prep.horizon, salt=salt)
            prefixes[(n, s)] = str(out)
        data[n] = {**draws[min(draws)]}
        if null:
            data[n]["draws"] = {str(s): {k: d[k] for k in ("docs", "tokens")} for s, d in draws.items()}
    return data, prefixes


def measure_phase(
    ctx: RunContext,
    prep: Prep,
    mixtures: dict[str, np.ndarray],
    *,
    budget: int,
    seeds: list[int],
    tag: str,
    controlled: str | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray], list[dict[str, Any]], Any]:
    """Measure ``mixtures`` (``natural`` the baseline) at ``budget`` and ``seeds`` (with the null control
    when ``controlled`` names the mixture it controls), through the one measurement
    (:func:`curate.proxy.design.measure.measure`) on the mixtures' own shards; writes ``proxy/mix/<tag>.json``
    (goodput.json's schema) and returns it, each mixture's per-seed headline bpb at T, the runs' results
    and the natural mixture's measured curve (:class:`curate.proxy.statistics.analysis.Baseline`)."""
    cfg = ProxyConfig.narrow(ctx.section)
    recipes = [Mixture(n, dict(zip(prep.sources, map(float, w), strict=True))) for n, w in mixtures.items()]
    sub = cfg.follow_up(recipes=recipes, baseline="natural", budget=budget, seeds=list(seeds))
    size = max(sub.curve_budgets())  # the baseline's trunk reads the curve's longest budget
    null = controlled is not None
    data, shards = _train_data(ctx, prep, mixtures, size, list(seeds), null)
    trained: list[Recipe] = [*recipes, *([Null("null")] if null else [])]
    skipped = {c: kind(c).NOT_FOR_MIXTURES for c in control_kinds() if kind(c).NOT_FOR_MIXTURES}
    exp = Experiment(
        sub,
        report=f"proxy/mix/{tag}.json",
        runs_dir=f"mix/{tag}",
        data=TrainingData(data, trained, controlled, skipped if null else {}),
        shards=shards,
    )
    m = measure(ctx, exp)
    heads = {n: h[:, -1] for n, h in m.analysis.heads.items()}
    return m.report, heads, m.finished.results, m.analysis.base


def _mixture_rows(prep: Prep, cands: dict[str, np.ndarray], max_epochs: float) -> dict[str, dict[str, Any]]:
    out = {}
    for n, w in cands.items():
        ep = mixfit.epochs(w, prep.tokens, prep.horizon)
        out[n] = {
            "weights": {s: round(float(x), 6) for s, x in zip(prep.sources, w, strict=True)},
            "epochs": {s: round(float(x), 4) for s, x in zip(prep.sources, ep, strict=True)},
            "max_epochs": round(float(ep.max()), 4),
            "within_epoch_limit": bool(ep.max() <= max_epochs),
            "muennighoff_factor": round(mixfit.muennighoff_factor(w, ep), 6),
            "measured_bpb": {},
            "per_seed_bpb": {},
        }
    return out


def _design(prep: Prep, spec: MixSpec) -> mixfit.Design:
    runs = spec.runs if spec.runs is not None else mixfit.default_runs(len(prep.sources))
    return mixfit.Design(
        natural=mixfit.natural_weights(prep.tokens),
        spread=runs,
        local=spec.dirichlet,
        strength=spec.strength,
        temperature=spec.temperature,
        min_weight=spec.min_weight,
        concentration=spec.concentration,
    )


def run_mix(ctx: RunContext, spec: MixSpec) -> dict[str, Any]:
    """The search (module docstring); writes ``mix.json`` and returns it."""
    cfg = ProxyConfig.narrow(ctx.section)
    prep = prepare(ctx, cfg, spec)
    design = _design(prep, spec)
    cands = mixfit.candidates(
        prep.sources,
        prep.tokens,
        prep.horizon,
        design,
        max_epochs=spec.max_epochs,
        singles=spec.singles,
        seed=spec.seed,
    )
    rows = _mixture_rows(prep, cands, spec.max_epochs)
    cost = {"runs": 0, "device_s": 0.0}
    regression: dict[str, Any] = {}
    choice = None
    fitted: np.ndarray = np.zeros((0, len(prep.sources)))

    def measured(mixes: dict[str, np.ndarray], budget: int, seeds: list[int], tag: str) -> dict[str, float]:
        """``mixes`` (and the natural mixture) measured at ``budget`` on ``seeds``; each one's mean and
        per-seed headline bpb recorded under ``tag``; returns the means."""
        mixes = {"natural": cands["natural"], **mixes}
        _, heads, results, _ = measure_phase(ctx, prep, mixes, budget=budget, seeds=seeds, tag=tag)
        cost["runs"] += len(results)
        cost["device_s"] += sum(r["device_s"] for r in results)
        for n in mixes:
            rows[n]["per_seed_bpb"][tag] = {str(s): float(v) for s, v in zip(seeds, heads[n], strict=True)}
            rows[n]["measured_bpb"][tag] = float(np.mean(heads[n]))
        return {n: rows[n]["measured_bpb"][tag] for n in mixes}

    def evaluate(survivors: list[str], k: int) -> dict[str, float | None]:
        """Rung ``k``: the natural mixture and the survivors measured; at rung 0, the split seed's subset
        and the regression."""
        nonlocal regression, choice, fitted
        rung = spec.rungs[k]
        scores = measured({n: cands[n] for n in survivors}, rung.budget, list(rung.seeds), f"rung{k}")
        if k == 0:  # the regression's domain: mixtures within the epoch limit (all, if under 3 are)
            names = [n for n in scores if rows[n]["within_epoch_limit"]]
            names = names if len(names) >= 3 else list(scores)
            for n in scores:
                rows[n]["fitted"] = n in names
            ceiling = None
            subset = split_subset(names, spec.split, spec.seed)
            if subset:
                again = measured({n: cands[n] for n in subset}, rung.budget, [spec.split_seed], "split")
                ceiling = ceiling_block(scores, again, list(rung.seeds), spec.split_seed)
            fitted = np.array([cands[n] for n in names])
            y = np.array([scores[n] for n in names])
            regression, choice, preds = mixassess.regression(
                spec, fitted, y, prep.tokens, prep.horizon, design, ceiling
            )
            for n, p in zip(names, preds, strict=True):
                rows[n]["heldout_predicted_bpb"] = float(p)
            cands["predicted"] = choice.weights
            rows.update(_mixture_rows(prep, {"predicted": choice.weights}, spec.max_epochs))
        return dict(scores)

    _, halving = successive_halving(
        list(cands),
        len(spec.rungs),
        spec.eta,
        evaluate,
        lambda n, k: (rows[n]["measured_bpb"][f"rung{k}"],),  # lower bpb first
        eligible=lambda n: rows[n]["within_epoch_limit"],  # never choose over the epoch limit
        add=lambda k: ["predicted"] if k == 0 else [],
        narrow_last=False,
    )
    history = [
        {
            "rung": h["rung"],
            "budget": r.budget,
            "seeds": list(r.seeds),
            "scores": h["scores"],
            "advanced": h["advanced"],
        }
        for h, r in zip(halving, spec.rungs, strict=False)
    ]
    assert choice is not None
    last: dict[str, float] = history[-1]["scores"] if len(spec.rungs) > 1 else {}
    chosen = min(last, key=lambda n: (last[n], n)) if last else "predicted"
    region = mixfit.region(cands[chosen], fitted, prep.sources)
    out: dict[str, Any] = {
        "by": spec.by,
        "sources": [
            {
                "name": s,
                "tokens": int(t),
                "docs": prep.shards[s]["docs"],
                "natural_weight": round(float(t / prep.tokens.sum()), 6),
            }
            for s, t in zip(prep.sources, prep.tokens, strict=True)
        ],
        "held_out_sources": prep.held_out,
        "horizon": int(prep.horizon),
        "max_epochs": spec.max_epochs,
        "headline": list(cfg.headline),
        "design": {
            "spread": design.spread,
            "strength": list(design.strength),
            "temperature": design.temperature,
            "min_weight": design.min_weight,
            "local": design.local,
            "concentration": design.concentration,
            "singles": spec.singles,
            "zero_weight_share": round(float((fitted == 0).mean()), 4) if fitted.size else None,
        },
        "rungs": [{"budget": r.budget, "seeds": list(r.seeds)} for r in spec.rungs],
        "split_seed": spec.split_seed,
        "eta": spec.eta,
        "mixtures": rows,
        "history": history,
        "regression": regression,
        "chosen": {
            "name": chosen,
            **rows[chosen],
            "predicted_bpb": choice.predicted if chosen == "predicted" else None,
            "predicted_interval": list(choice.interval) if chosen == "predicted" else None,
            "region": region,
        },
    }
    conf, c_runs, c_dev = confirm(ctx, prep, spec, cands[chosen], rows, cfg.budget)
    out["confirmation"] = conf
    out["decision"] = mixassess.decision(conf, region)
    out["cost"] = {"runs": cost["runs"] + c_runs, "device_s": round(cost["device_s"] + c_dev, 3)}
    atomic_write_json(ctx.path("mix.json"), out, indent=1, allow_nan=False)
    return out


def confirm(
    ctx: RunContext,
    prep: Prep,
    spec: MixSpec,
    weights: np.ndarray,
    rows: dict[str, dict[str, Any]],
    budget: int,
) -> tuple[dict[str, Any], int, float]:
    """The chosen mixture (and the best single source measured at rung 0) against the natural mixture on
    fresh seeds, with the null control; returns the block, the runs and their device seconds."""
    singles = {
        n: r["measured_bpb"]["rung0"]
        for n, r in rows.items()
        if n.startswith("only-") and "rung0" in r["measured_bpb"]
    }
    best_single = min(singles, key=lambda n: (singles[n], n)) if singles else None
    nat = mixfit.natural_weights(prep.tokens)
    mixes = {"natural": nat, "chosen": weights}
    if best_single:
        mixes["best-single"] = np.eye(len(prep.sources))[prep.sources.index(best_single[len("only-") :])]
    rep, heads, results, base = measure_phase(
        ctx, prep, mixes, budget=budget, seeds=list(spec.confirm_seeds), tag="confirm", controlled="chosen"
    )
    block: dict[str, Any] = {
        "seeds": list(spec.confirm_seeds),
        "budget": budget,
        "report": "proxy/mix/confirm.json",
    }
    for n in mixes:
        if n == "natural":
            continue
        v = rep["recipes"][n]
        f = mixfit.muennighoff_factor(mixes[n], mixfit.epochs(mixes[n], prep.tokens, prep.horizon))
        block[n] = {
            **({"source": best_single[len("only-") :]} if n == "best-single" and best_single else {}),
            "multiplier": v["multiplier"],
            "diff_bpb": v["paired"]["diff_bpb"],
            "per_seed_diff": v["paired"]["per_seed_diff"],
            "call": v["paired"]["call"],
            "p_value": mixassess.p_value(v["paired"]["per_seed_diff"]),
            "bpb_at_T": float(np.mean(heads[n])),
            "muennighoff_factor": round(f, 6),  # for comparison: not applied (the runs repeat as the horizon)
        }
    block["natural_bpb_at_T"] = float(np.mean(heads["natural"]))
    block["per_seed_bpb"] = {
        n: {str(s): float(x) for s, x in zip(spec.confirm_seeds, h, strict=True)} for n, h in heads.items()
    }
    if "best-single" in mixes:
        iv = stats.paired_interval(heads["chosen"] - heads["best-single"])
        block["chosen_vs_best_single"] = {
            "diff_bpb": iv.as_dict(),
            "call": analysis.call(iv),
            "p_value": mixassess.p_value(list(heads["chosen"] - heads["best-single"])),
            "multiplier": analysis.relative_multiplier(base, float(np.mean(heads["best-single"])), iv),
        }
    block["controls"] = rep["controls"]
    block["power"] = rep["power"]
    block["verdict"] = rep["verdict"]["sentence"]
    block["supported"] = bool(rep["verdict"].get("supported", True))
    block["unsupported_reasons"] = list(rep["verdict"].get("unsupported_reasons") or [])
    return block, len(results), float(sum(r["device_s"] for r in results))
