"""``goodput.json`` from finished proxy runs: the descriptive curves of :mod:`curate.proxy.statistics.descriptive`, with
the called numbers (multiplier, goodput, ranking, verdict) replaced by the paired statistic of
:mod:`curate.proxy.statistics.analysis`, plus controls, power, per-set decontamination, accuracy, the ladder and
the regime. The schema is documented in ``docs/goodput.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from curate.goodput.schema import SCHEMA_VERSION
from curate.proxy import stats
from curate.proxy.assembly.controls import controls_block
from curate.proxy.assembly.controls import warnings as control_warnings
from curate.proxy.assembly.ladder import ladder_points, paired_block, summarize_ladder
from curate.proxy.assembly.limited import limited_blocks
from curate.proxy.kinds import Recipe
from curate.proxy.kinds.base import Evidence
from curate.proxy.kinds.limited import Limited
from curate.proxy.statistics import analysis
from curate.proxy.statistics.curves import baseline_curve, point_curves
from curate.proxy.statistics.descriptive import RecipeCurves, finite_or_none, goodput_report
from curate.proxy.statistics.regime import regime
from curate.proxy.statistics.signal import signal_noise


@dataclass
class Analysis:
    """A measurement's analysis: ``goodput.json`` (``report``), and what designers build on without
    reading files back: each recipe's headline bpb at the main point (``heads``: seeds x eval points, the
    last at T) and the baseline's measured curve (``base``)."""

    report: dict[str, Any]
    heads: dict[str, np.ndarray]
    base: analysis.Baseline


def assemble(
    ctx: Any,
    cfg: Any,
    *,
    items: list[Any],
    results: list[dict[str, Any]],
    data: dict[str, dict[str, Any]],
    evals: list[Any],
    recipes: list[Any],
    controlled: str | None,
    controls_skipped: dict[str, str],
    grams_per_set: dict[str, int],
    shares: dict[str, dict[str, Any]],
    calls: Callable[[dict[str, np.ndarray], list[str]], dict[str, Any]] | None = None,
) -> Analysis:
    """``goodput.json`` (as a dict) from the finished runs ``results`` of ``items``: the main point's
    curves and paired calls per recipe, the verdict, the ladder over every point, controls and warnings.
    ``calls``: the decision's calls of the family's pairs from every recipe's per-seed differences with the
    baseline (a sequential design's); default Holm's adjustment of each pair's paired t-test."""
    arms = [r for r in recipes if isinstance(r, Limited)]  # the data-limited arm: reported apart
    recipes = [r for r in recipes if not isinstance(r, Limited)]
    names = [r.name for r in recipes]
    points = cfg.points()
    main = points[0]
    tokens, bpb, acc, res = point_curves(items, results, main.name, names)
    rep = goodput_report(
        _recipe_curves(names, bpb, data, res),
        baseline=cfg.baseline,
        tokens=tokens,
        budget=int(tokens[-1]),
        n_boot=cfg.n_boot,
        headline=cfg.headline,
    )
    heads = {r: analysis.headline(bpb[r], cfg.headline) for r in names}
    base = baseline_curve(res[cfg.baseline], heads[cfg.baseline], int(tokens[-1]), cfg.headline)
    epochs = {r: float(tokens[-1]) / max(1, data[r]["tokens"]) for r in names}
    roles = _roles(cfg.baseline, recipes)
    members = [r for r in names if roles[r] != "control"]
    pairs = analysis.Pairs(heads, members, cfg.baseline)  # every pair by its own paired interval
    by_stage = _stage_cpu_s(ctx.manifest)
    for r in names:
        src = next(x for x in recipes if x.name == r)
        _fill_recipe(
            rep["recipes"][r],
            paired_block(base, pairs, r, cfg.baseline),
            src=src,
            role=roles[r],
            epochs=epochs[r],
            acc=acc[r],
            data=data[r],
            res=res[r],
            baseline=cfg.baseline,
            curation_cpu_s=by_stage if src.CURATED else {},
        )
    rep["ranking"] = analysis.ranking(heads, pairs)
    subject = controlled or next((r for r in rep["ranking"]["order"] if roles[r] == "recipe"), None)
    pair = (subject, cfg.baseline) if subject else None
    pw = analysis.power(base, pairs, len(main.seeds), pair, cfg.noise)
    family = [r for r in names if roles[r] == "recipe"]
    diffs = {r: pairs.diffs(r, cfg.baseline) for r in family}
    mc = calls(diffs, family) if calls is not None else stats.holm_calls(diffs, cfg.baseline)
    _selection_adjusted(rep, base, diffs)
    verdict = _verdict(rep, pairs, pw, cfg, subject, mc)
    ladder = ladder_points(
        points,
        main,
        (tokens, bpb, acc, res),
        items=items,
        results=results,
        names=names,
        baseline=cfg.baseline,
        roles=roles,
        headline=cfg.headline,
        subject=subject,
    )
    ladder_block, ladder_warnings = summarize_ladder(
        ladder, main.name, roles, [r for r in recipes if r.ROLE == "control"], cfg
    )
    if "warning" in ladder_block:
        verdict["sentence"] += f". Warning: {ladder_block['warning']}"
    checks = [r for r in recipes if r.ROLE == "control"]
    ev = Evidence(base, heads, cfg.baseline, controlled, epochs, shares, cfg)
    controls = controls_block(ev, checks, controls_skipped)
    _support(verdict, controls)
    warnings = control_warnings(controls, checks) + ladder_warnings
    spikes = _spike_warning({r: rep["recipes"][r]["anomalies"] for r in names})
    if spikes:
        warnings.append(spikes)
    model = res[cfg.baseline][0]["model"]
    rep.update(
        {
            "schema_version": SCHEMA_VERSION,
            "baseline": cfg.baseline,
            "budget": int(tokens[-1]),
            "seeds": list(main.seeds),
            "eval_sets": sorted(bpb[cfg.baseline]),
            "eval_set_info": _eval_set_info(
                evals, cfg.headline, grams_per_set, data, names, {r: bpb[r] for r in members}
            ),
            "headline": list(cfg.headline),
            "model": {"name": main.model, **model},
            "controls": controls,
            "power": pw,
            "multiple_comparisons": mc,
            "verdict": verdict,
            "warnings": warnings,
            "ladder": ladder_block,
            "regime": regime(ladder[0], ladder),
            "baseline_curve": _baseline_curve_block(base),
            "statistics": _statistics_block(cfg.n_boot),
        }
    )
    if arms:
        _, arm_bpb, _, _ = point_curves(items, results, main.name, [a.name for a in arms])
        rep.update(
            limited_blocks(
                cfg,
                arms=arms,
                arm_heads={a: analysis.headline(v, cfg.headline) for a, v in arm_bpb.items()},
                data=data,
                base=base,
                heads=heads,
                recipes=rep["recipes"],
                family=family,
                margin=((controls.get("null") or {}).get("equivalence") or {}).get("margin"),
            )
        )
    return Analysis(rep, heads, base)


def _recipe_curves(
    names: list[str],
    bpb: dict[str, dict[str, np.ndarray]],
    data: dict[str, dict[str, Any]],
    res: dict[str, list[dict[str, Any]]],
) -> dict[str, RecipeCurves]:
    """Each recipe's per-seed curves and costs, as :func:`curate.proxy.statistics.descriptive.goodput_report` reads them."""
    return {
        r: RecipeCurves(
            bpb=bpb[r],
            tokens_kept=data[r]["tokens"],
            device_s=sum(x["device_s"] for x in res[r]),
            tokens_trained=sum(x["tokens"] for x in res[r]),
        )
        for r in names
    }


def _selection_adjusted(rep: dict[str, Any], base: analysis.Baseline, diffs: dict[str, np.ndarray]) -> None:
    """Each recipe of the decision's family gets its multiplier's interval at the family's Bonferroni
    level (``1 - 0.05 / m``): the best of ``m`` recipes, picked by its point value, keeps 95% coverage
    with it (the winner's curse of the best one's own interval)."""
    m = len(diffs)
    if m < 1:
        return
    level = 1 - (1 - analysis.LEVEL) / m
    for r, d in diffs.items():
        block = analysis.multiplier_block(base, stats.paired_interval(d, level))
        block["method"] = (
            f"the paired interval at level {level:.4g} (Bonferroni over the {m} recipes compared) mapped as the "
            "multiplier is: a recipe picked as the best of them keeps 95% coverage"
        )
        rep["recipes"][r]["multiplier_adjusted"] = block


def _roles(baseline: str, recipes: list[Recipe]) -> dict[str, str]:
    """``recipe``, ``control`` (its kind's role: built by the phase to check the instrument) or
    ``baseline``, by recipe name."""
    roles = {r.name: r.ROLE for r in recipes}
    roles[baseline] = "baseline"
    return roles


def _stage_cpu_s(manifest: dict[str, Any]) -> dict[str, float]:
    """CPU seconds of each stage of the pipeline run, by the stage's name (or label, or position)."""
    stages = manifest.get("stages") or []
    return {
        str(s.get("name") or s.get("label") or i): float(s.get("cpu_s", 0.0)) for i, s in enumerate(stages)
    }


def _fill_recipe(
    v: dict[str, Any],
    pb: dict[str, Any],
    *,
    src: Any,
    role: str,
    epochs: float,
    acc: dict[str, Any],
    data: dict[str, Any],
    res: list[dict[str, Any]],
    baseline: str,
    curation_cpu_s: dict[str, float],
) -> None:
    """Complete one recipe's block ``v`` of the descriptive report: the paired multiplier and call
    (``pb``), goodput and effective tokens from them, its role, accuracy, data counts and costs."""
    m = pb["multiplier"]
    y = v["yield"]
    v["multiplier"] = m
    g = {k: finite_or_none(y * m[k]) if m[k] is not None else None for k in ("value", "ci_low", "ci_high")}
    v["goodput"] = {**g, "bounds": dict(m["bounds"])}  # yield x multiplier: the multiplier's shape and marks
    v["effective_tokens"] = (
        finite_or_none(v["tokens_in"] * y * m["value"]) if m["value"] is not None else None
    )
    v["paired"] = {k: pb[k] for k in ("diff_bpb", "per_seed_diff", "call", "method")}
    v["bpb_at_T"]["note"] = (
        "descriptive: this recipe's own seeds (bootstrap); calls use the paired difference"
    )
    v["role"] = role
    v["epochs_at_T"] = epochs
    v["accuracy"] = acc
    v.update(
        {
            "rules": src.rules(),
            "docs": data["docs"],
            "decontaminated": data.get("decontaminated", 0),
            "decontaminated_by_set": data.get("decontaminated_by_set", {}),
            "anomalies": sum(x["anomalies"] for x in res),
            "rollbacks": sum(x["rollbacks"] for x in res),
            "branch_anomalies": sum(x.get("branch_anomalies", 0) for x in res),
            "corrupted_docs": data.get("corrupted", 0),
        }
    )
    v.update(src.report_fields(data, baseline))
    v["costs"].update(
        {"curation_cpu_s": round(sum(curation_cpu_s.values()), 3), "curation_cpu_s_by_stage": curation_cpu_s}
    )


def _verdict(
    rep: dict[str, Any],
    pairs: analysis.Pairs,
    pw: dict[str, Any],
    cfg: Any,
    subject: str | None,
    mc: dict[str, Any],
) -> dict[str, Any]:
    """The verdict on ``subject`` (the controlled recipe, else the best non-control recipe): its call is
    the Holm-adjusted one when it is in the family (``mc``), its own interval's call kept beside it."""
    verdict: dict[str, Any] = {"recipe": subject, "statistic": "paired difference in mean headline bpb at T"}
    if subject is not None:
        iv = pairs.interval(subject, cfg.baseline)
        own = analysis.call(iv)
        row = mc["pairs"].get(subject)
        mult = rep["recipes"][subject]["multiplier"]
        verdict.update(
            {
                "call": row["call"] if row else own,
                "call_unadjusted": own,
                "diff_bpb": iv.as_dict(),
                "multiplier": mult,
                "sentence": analysis.verdict_sentence(
                    subject, cfg.baseline, iv, mult, pw, cfg.headline, mc if row else None
                ),
            }
        )
    else:
        verdict.update(
            {"call": "not_called", "sentence": "no recipe besides the baseline: nothing to compare"}
        )
    return verdict


def _support(verdict: dict[str, Any], controls: dict[str, Any]) -> None:
    """``verdict.supported`` from the controls' decision (missing: supported); when not, the sentence
    opens with why, and the call stays only as a number, not a decision."""
    decision = controls.get("decision") or {"supported": True, "reasons": []}
    verdict["supported"] = bool(decision.get("supported", True))
    verdict["unsupported_reasons"] = [] if verdict["supported"] else list(decision.get("reasons") or [])
    if not verdict["supported"]:
        verdict["sentence"] = (
            (
                "inconclusive, no decision at these seeds: "
                if decision.get("inconclusive")
                else "this run cannot support a decision: "
            )
            + "; ".join(r.rstrip(". ") for r in verdict["unsupported_reasons"])
            + ". "
            + verdict["sentence"]
        )


def _spike_warning(anomalies: dict[str, int]) -> str | None:
    """A warning naming the recipes whose training skipped loss spikes; None when none did."""
    spikes = {r: n for r, n in anomalies.items() if n}
    if not spikes:
        return None
    return (
        "loss spikes were skipped during training ("
        + ", ".join(f"{r}: {n} steps" for r, n in spikes.items())
        + "): an unstable run can move its recipe's bpb by more than the effects measured; a lower "
        "proxy.train.lr or more seeds make the verdict less sensitive to it"
    )


def _eval_set_info(
    evals: list[Any],
    headline: list[str],
    grams_per_set: dict[str, int],
    data: dict[str, dict[str, Any]],
    names: list[str],
    bpb: dict[str, dict[str, np.ndarray]],
) -> dict[str, dict[str, Any]]:
    """Each eval set's description, its 13-gram count, the documents each recipe lost to it, and its
    signal and noise at T over the recipes of ``bpb`` (the baseline and the non-control recipes)."""
    out = {}
    for e in evals:
        d = e.describe(e.name in headline)
        d["grams"] = grams_per_set.get(e.name, 0)
        d["decontaminated"] = {r: data[r].get("decontaminated_by_set", {}).get(e.name, 0) for r in names}
        if all(e.name in v for v in bpb.values()):
            d["signal_noise"] = signal_noise({r: np.asarray(v[e.name])[:, -1] for r, v in bpb.items()})
        out[e.name] = d
    return out


def _baseline_curve_block(base: analysis.Baseline) -> dict[str, Any]:
    return {
        "budgets": [int(b) for b in base.budgets],
        "bpb_mean": base.curve.tolist(),
        "per_seed": base.curves.tolist(),
        "range": list(base.range),
        "method": "the baseline trained to a finished (cooled-down) model at each budget: one constant-LR "
        "trunk per seed with a cool-down branch at each budget (proxy.curve)",
    }


def _statistics_block(n_boot: int) -> dict[str, Any]:
    return {
        "calls": stats.METHOD
        + ", level 0.95, for every pair (recipes, controls, the ranking); the decision's family (each "
        "non-control recipe against the baseline) Holm-adjusted (multiple_comparisons); the multiplier's CI "
        "maps the same interval through the baseline's measured curve (the mean and every seed's, the widest)",
        "descriptive_bands": f"bootstrap over seeds ({n_boot} resamples) for per-recipe curve bands",
    }
