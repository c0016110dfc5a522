"""The ladder of ``goodput.json``: each point's summary (sizes, paired multipliers, ranking, power) and
decision accuracy against the largest point, read against the noise ceiling and chance, with the checks
that failed. The paired statistic itself is :mod:`curate.proxy.statistics.analysis`; decision accuracy
:mod:`curate.proxy.statistics.transfer`."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from curate.proxy import stats
from curate.proxy.kinds import Recipe
from curate.proxy.statistics import analysis, transfer
from curate.proxy.statistics.curves import baseline_curve, mean_or_none, point_curves


def pairs_of(heads: dict[str, np.ndarray], roles: dict[str, str], baseline: str) -> analysis.Pairs:
    """Every pair of a point by its own paired interval; controls are not members of the ranking."""
    return analysis.Pairs(heads, [r for r in heads if roles.get(r, "recipe") != "control"], baseline)


def paired_block(base: analysis.Baseline, pairs: analysis.Pairs, r: str, baseline: str) -> dict[str, Any]:
    iv = pairs.interval(r, baseline)
    h_r, h_b = pairs.heads[r], pairs.heads[baseline]
    return {
        "diff_bpb": iv.as_dict(),
        "per_seed_diff": (h_r[:, -1] - h_b[:, -1]).tolist(),
        "call": analysis.call(iv),
        "multiplier": analysis.multiplier_block(base, iv),
        "method": stats.METHOD,
    }


def point_summary(
    point: Any,
    tokens: np.ndarray,
    heads: dict[str, np.ndarray],
    baseline: str,
    res: dict[str, list[dict[str, Any]]],
    roles: dict[str, str],
    headline: list[str],
    subject: str | None = None,
) -> dict[str, Any]:
    """One ladder point's summary; its power is the verdict's pair's, ``subject`` (the controlled recipe;
    default: the point's best non-control recipe) against the baseline."""
    base = baseline_curve(res[baseline], heads[baseline], int(tokens[-1]), headline)
    pairs = pairs_of(heads, roles, baseline)
    model = res[baseline][0]["model"]
    fpt = float(model.get("flops_per_token") or 0.0)
    per = {}
    for r, h in heads.items():
        pb = paired_block(base, pairs, r, baseline)
        per[r] = {
            "bpb_at_T": float(h[:, -1].mean()),
            "per_seed_bpb_at_T": h[:, -1].tolist(),
            "diff_bpb": pb["diff_bpb"],
            "call": pb["call"],
            "multiplier": pb["multiplier"],
        }
    rk = analysis.ranking(heads, pairs)
    subject = subject or next((r for r in rk["order"] if roles.get(r, "recipe") == "recipe"), None)
    pw = analysis.power(base, pairs, len(point.seeds), (subject, baseline) if subject else None)
    params = float(model.get("params") or 0.0)
    return {
        "name": point.name,
        "model": point.model,
        "budget": int(tokens[-1]),
        "seeds": list(point.seeds),
        "params": params,
        "non_embedding": model.get("non_embedding"),
        "flops_per_token": fpt,
        "tokens_per_param": float(tokens[-1]) / params if params else None,
        "compute_flops_per_run": fpt * float(tokens[-1]),
        "device_s": float(sum(x["device_s"] for rs in res.values() for x in rs)),
        "tokens_per_s": mean_or_none([x.get("tokens_per_s") for rs in res.values() for x in rs]),
        "recipes": per,
        "ranking": rk["order"],
        "called_pairs": [p for p in rk["pairs"] if p["separated"]],
        "sd_diff_bpb": pw["sd_diff_bpb"],
        "sd_dof": pw["sd_dof"],
        "mde_multiplier": pw["mde_multiplier"],
        "baseline_curve": {"budgets": [int(b) for b in base.budgets], "bpb": base.curve.tolist()},
        "anomalies": int(sum(x.get("anomalies", 0) for rs in res.values() for x in rs)),
        "rollbacks": int(sum(x.get("rollbacks", 0) for rs in res.values() for x in rs)),
        "branch_anomalies": int(sum(x.get("branch_anomalies", 0) for rs in res.values() for x in rs)),
    }


def ladder_points(
    points: list[Any],
    main: Any,
    main_curves: tuple[Any, ...],
    *,
    items: list[Any],
    results: list[dict[str, Any]],
    names: list[str],
    baseline: str,
    roles: dict[str, str],
    headline: list[str],
    subject: str | None = None,
) -> list[dict[str, Any]]:
    """:func:`point_summary` of every point, in order; the main point's curves (``main_curves``, from
    :func:`curate.proxy.statistics.curves.point_curves`) are not read twice. ``subject``: the verdict's recipe."""
    out = []
    for p in points:
        t_p, bpb_p, _, res_p = main_curves if p == main else point_curves(items, results, p.name, names)
        heads_p = {r: analysis.headline(bpb_p[r], headline) for r in names}
        out.append(point_summary(p, t_p, heads_p, baseline, res_p, roles, headline, subject))
    return out


def decision_agreement(
    ladder: list[dict[str, Any]], ref: dict[str, Any], roles: dict[str, str]
) -> dict[str, Any]:
    """``ladder.decision_agreement``: the fraction of (point, recipe pair) comparisons in which a smaller
    point orders a pair of recipes as the reference point does, by mean headline bpb of each point's
    finished models at its own budget; every pair of non-control recipes (the baseline included), every
    point besides the reference. Nothing is read from an un-cooled checkpoint."""
    names = sorted(r for r in ref["recipes"] if roles.get(r) != "control")
    pairs = list(itertools.combinations(names, 2))
    others = [q for q in ladder if q is not ref]
    full = {r: ref["recipes"][r]["bpb_at_T"] for r in names}
    same = total = 0
    for q in others:
        small = {r: q["recipes"][r]["bpb_at_T"] for r in names if r in q["recipes"]}
        acc = stats.decision_accuracy(small, full, pairs)
        n = sum(a in small and b in small for a, b in pairs)
        if acc is not None:
            same, total = same + round(acc * n), total + n
    return {
        "value": same / total if total else None,
        "pairs": len(pairs),
        "points": [q["name"] for q in others],
        "reference": ref["name"],
        "method": "each point's order of every pair of non-control recipes (baseline included) by mean "
        "headline bpb of its finished models at its budget, against the reference point's order; the "
        "fraction that agree, over every point besides the reference (an exact tie agrees only with a tie)",
    }


def transfer_points(ladder: list[dict[str, Any]], recipes: list[str]) -> list[transfer.Point]:
    """The ladder's points as :class:`curate.proxy.statistics.transfer.Point` (per-seed headline bpb of
    ``recipes``, compute per run, the baseline's finished curve)."""
    return [
        transfer.Point(
            q["name"],
            tuple(q["seeds"]),
            float(q["compute_flops_per_run"]),
            {r: q["recipes"][r]["per_seed_bpb_at_T"] for r in recipes},
            tuple(q["baseline_curve"]["budgets"]),
            tuple(q["baseline_curve"]["bpb"]),
            q["budget"],
        )
        for q in ladder
    ]


def accuracy_against_reference(
    ladder: list[dict[str, Any]], ref: dict[str, Any], roles: dict[str, str]
) -> dict[str, Any]:
    """Each point's decision accuracy against the reference (``decision_accuracy``, set on the point; the
    reference has none) and the ladder's keys it is read against: the noise ceiling, chance, whether the
    points' seeds are disjoint (:mod:`curate.proxy.statistics.transfer`). Every non-control recipe that
    every point trained, the baseline among them."""
    recipes = [
        r for r in ref["recipes"] if roles.get(r) != "control" and all(r in q["recipes"] for q in ladder)
    ]
    pts = transfer_points(ladder, recipes)
    top = next(p for p in pts if p.name == ref["name"])
    for q, p in zip(ladder, pts, strict=True):
        if p is not top:
            q["decision_accuracy"] = transfer.decision_accuracy(p, top, recipes)
    shared = transfer.shared_seeds(pts)
    return {
        "noise_ceiling": transfer.noise_ceiling(top, recipes),
        "chance": transfer.CHANCE,
        "seeds_disjoint": not shared,
        "shared_seeds": {str(s): names for s, names in shared.items()},
        "accuracy_method": "per point, the share of the pairs of non-control recipes (baseline included) it orders "
        "as the reference point does by mean headline bpb at its budget: over every pair weighted by 1 - p of the "
        "reference's paired t (all_pairs_weighted), and over the pairs the reference calls after Holm's "
        "adjustment over every pair (called); 95% cluster bootstrap, recipes and each point's seeds resampled, "
        "2,000 draws; noise ceiling: the reference, half its seeds against the other half; chance 0.5",
    }


def summarize_ladder(
    ladder: list[dict[str, Any]], main: str, roles: dict[str, str], controls: list[Recipe], cfg: Any
) -> tuple[dict[str, Any], list[str]]:
    """The ladder's block (every point, its decision accuracy against the largest, what that is read
    against, the checks that failed) and the warnings it raises, in the order the report lists them."""
    ref = max(ladder, key=lambda q: (q["compute_flops_per_run"], q["params"]))
    block: dict[str, Any] = {"reference": ref["name"], "points": ladder, "main": main}
    warnings = []
    if len(ladder) > 1:
        block["decision_agreement"] = decision_agreement(ladder, ref, roles)
        block.update(accuracy_against_reference(ladder, ref, roles))
        called = ladder[0].get("decision_accuracy", {}).get("called", {})
        if called.get("value") is not None and called["value"] < 1.0:
            wrong = round((1.0 - called["value"]) * called["pairs"])
            block["warning"] = (
                f"the main point ({main}) orders {wrong} of the {called['pairs']} recipe pairs the largest point "
                f"({ref['name']}) calls the other way: its ranking may point the wrong way"
            )
            warnings.append(block["warning"])
    for r in sorted(controls, key=lambda r: r.ORDER):  # each control is checked at every other point, too
        failed = r.ladder_failure(ladder[1:], cfg)
        if failed:
            key, names, warning = failed
            block[key] = names
            warnings.append(warning)
    return block, warnings
