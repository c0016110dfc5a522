"""Per-stage attribution: leave-one-stage-out proxy runs ("which filter pays, which costs").

For every stage that rejected documents (the ``stage`` column of ``rejected/``, quarantine excluded) the
ablation adds the recipe ``without_<stage>`` = kept/ ∪ the rows that stage rejected (a proxy recipe with
``without_stages: [<stage>]``), and trains it beside the baseline and the plain curated recipe with the
run's own proxy settings (model, budget, seeds, eval sets, tokenizer) at the main point, without
controls or ladder. Runs already in ``proxy/`` with the same configuration (the baseline, the curated
recipe) are reused; the ablation's report goes to ``ablation/goodput.json``, never over ``goodput.json``.

A stage's effect is the paired difference ``d = H_curated - H_without`` (mean headline bpb at T, per
seed; :func:`curate.proxy.statistics.analysis.paired`): negative = the stage *pays* (its removals lower the target
bpb), positive = it *costs*, called only where the t-interval excludes 0. The same interval is reported
as a ratio of multipliers ``m_with / m_without`` (:func:`curate.proxy.statistics.analysis.relative_multiplier`) and
as a ratio of data goodputs ``g_with / g_without = (y_with / y_without) · m_with / m_without`` (yields are
token counts: exact, so the goodput CI is the multiplier CI scaled).

Caveat: the rows a stage rejected never reached the stages after it, so ``without_<stage>`` also skips
those later stages for them: the effect measured is of the stage *at its place in the pipeline*.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from curate.core import schema
from curate.core.errors import PhaseError
from curate.io import runfiles
from curate.io.files import atomic_write_json
from curate.proxy import stats
from curate.proxy.assembly.assemble import Analysis
from curate.proxy.kinds.kept import Kept
from curate.proxy.spec.config import ProxyConfig
from curate.proxy.statistics import analysis
from curate.proxy.statistics.descriptive import finite_or_none
from curate.runtime.context import RunContext

REPORT = "ablation/goodput.json"
PREFIX = "without_"


def removed_by_stage(run_dir: Path, manifest: dict[str, Any]) -> dict[str, int]:
    """Rows each stage rejected (quarantine excluded), in the manifest's stage order."""
    counts: dict[str, int] = {}
    for f in runfiles.parts(run_dir, "rejected"):
        t = runfiles.read_table(f, columns=[schema.STAGE, schema.REASON])
        q = pc.fill_null(pc.starts_with(t.column(schema.REASON), schema.QUARANTINE_PREFIX), False)
        for s in t.filter(pc.invert(q)).column(schema.STAGE).to_pylist():
            counts[s] = counts.get(s, 0) + 1
    order = [str(s.get("name")) for s in manifest.get("stages") or []]
    return dict(
        sorted(counts.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    )


def ablation_config(cfg: ProxyConfig, stages: list[str]) -> tuple[ProxyConfig, str, str]:
    """The proxy configuration of the ablation, derived from the run's: its baseline, its plain kept/
    recipe (``curated`` if it has none) and one ``without_<stage>`` recipe per stage, at the main point
    only (no ladder, no controls, no follow-ups); returns (config, baseline, subject)."""
    plain = [r for r in cfg.recipes if isinstance(r, Kept) and r.plain]
    subject = plain[0] if plain else Kept("curated")
    base = next(r for r in cfg.recipes if r.name == cfg.baseline)
    recipes = {base.name: base, subject.name: subject}
    for s in stages:
        name = PREFIX + s
        if name in recipes:
            raise PhaseError(f"ablate: recipe name {name!r} clashes with a recipe of the run")
        recipes[name] = Kept(name, without_stages=[s])
    out = cfg.follow_up(recipes=list(recipes.values()), baseline=base.name)
    return out, base.name, subject.name


def _scaled(block: dict[str, Any], factor: float) -> dict[str, Any]:
    return {
        k: (finite_or_none(block[k] * factor) if block[k] is not None else None)
        for k in ("value", "ci_low", "ci_high")
    }


def effects(a: Analysis, subject: str, stages: dict[str, int]) -> dict[str, Any]:
    """Each stage's paired effect (see the module docstring), from the measurement's analysis: each
    recipe's headline bpb per seed, the baseline's measured curve and the report."""
    report, base, h_with = a.report, a.base, a.heads[subject]
    y_with = report["recipes"][subject]["yield"]
    out = {}
    for stage, n in stages.items():
        recipe = PREFIX + stage
        h_without = a.heads[recipe]
        iv = analysis.paired(h_with, h_without)
        mult = analysis.relative_multiplier(base, float(h_without[:, -1].mean()), iv)
        mult["method"] = (
            "m_with / m_without = t_base(R + d) / t_base(R), d = H_with - H_without (R: without's bpb)"
        )
        y_without = report["recipes"][recipe]["yield"]
        ratio = y_with / y_without if y_without else math.nan
        c = analysis.call(iv)
        out[stage] = {
            "recipe": recipe,
            "removed_docs": n,
            "diff_bpb_with_minus_without": iv.as_dict(),
            "per_seed_diff": (h_with[:, -1] - h_without[:, -1]).tolist(),
            "call": {"better": "pays", "worse": "costs", "not_called": "not_called"}[c],
            "multiplier_effect": mult,
            "yield": {"with": y_with, "without": y_without, "ratio": finite_or_none(ratio)},
            "goodput_effect": {
                **_scaled(mult, ratio),
                "method": "(y_with / y_without) x multiplier_effect (yields are exact token counts)",
            },
            "multiplier": {
                "with": report["recipes"][subject]["multiplier"],
                "without": report["recipes"][recipe]["multiplier"],
            },
            "goodput": {
                "with": report["recipes"][subject]["goodput"],
                "without": report["recipes"][recipe]["goodput"],
            },
        }
    return out


def _why_skipped(record: dict[str, Any]) -> str:
    """Why a stage that rejected no document has no ``without_`` recipe. A stage that changed text (a
    redacting ``pii_v1``, ``normalize_v1``) is not "the curated recipe itself": raw and every recipe are
    built from the stored rows, which hold its output, so no recipe can leave it out."""
    if record.get("bytes_in") is not None and record.get("bytes_in") != record.get("bytes_out"):
        return (
            "changed text but removed no documents: raw and every recipe hold its output, so stored rows "
            "cannot ablate it (a filter's reject mode can be ablated)"
        )
    return "removed no documents (its ablation is the curated recipe itself)"


def run_ablation(ctx: RunContext, stages: list[str] | None = None) -> dict[str, Any]:
    """Train the leave-one-stage-out recipes and write ``ablation.json``; returns its content.
    ``stages``: ablate only these (each must have rejected documents); default every stage that did."""
    from curate.proxy.design.measure import Experiment, measure

    removed = removed_by_stage(ctx.run_dir, ctx.manifest)
    records = {str(s.get("name")): s for s in ctx.manifest.get("stages") or []}
    skipped = {s: _why_skipped(rec) for s, rec in records.items() if s != "read" and s not in removed}
    if stages is not None:
        unknown = [s for s in stages if s not in removed]
        if unknown or not stages:
            raise PhaseError(
                f"ablate: --stages {','.join(stages)}: {', '.join(unknown) or 'none given'} rejected no "
                f"document in {ctx.run_dir}; stages that did: {', '.join(removed) or 'none'}"
            )
        skipped |= {s: "not asked for (--stages)" for s in removed if s not in stages}
        removed = {s: n for s, n in removed.items() if s in stages}
    if not removed:
        raise PhaseError(
            f"ablate: no stage of {ctx.run_dir} rejected a document (quarantine aside): nothing to ablate"
        )
    cfg, baseline, subject = ablation_config(ProxyConfig.narrow(ctx.section), list(removed))
    m = measure(ctx, Experiment(cfg, report=REPORT))
    report = m.report
    out = {
        "baseline": baseline,
        "subject": subject,
        "recipes": [r.name for r in cfg.recipes],
        "point": {"model": cfg.model, "budget": report["budget"], "seeds": list(cfg.seeds)},
        "headline": list(cfg.headline),
        "stages": effects(m.analysis, subject, removed),
        "skipped": skipped,
        "report": REPORT,
        "statistics": stats.METHOD + ", level 0.95; effects are with minus without the stage",
        "caveat": "rows a stage rejected never reached the later stages: without_<stage> skips those for them too",
    }
    atomic_write_json(ctx.path("ablation.json"), out, indent=1, allow_nan=False)
    return out
