"""``goodput.json`` from finished proxy runs: the descriptive curves of :mod:`curate.proxy.goodput`, with
the called numbers (multiplier, goodput, ranking, verdict) replaced by the paired statistic of
:mod:`curate.proxy.analysis`, plus controls, power, per-set decontamination, accuracy, the ladder and
the regime. The schema is documented in ``docs/goodput.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.proxy import analysis, stats
from curate.proxy.controls import controls_block, ladder_null_warning, ladder_planted_warning
from curate.proxy.goodput import RecipeCurves, finite_or_none, goodput_report, value_at
from curate.proxy.regime import regime

SCHEMA_VERSION = 2


def read_curves(out_dir: Path) -> tuple[list[int], dict[str, list[float]], dict[str, Any], dict[str, Any]]:
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in recs if r["type"] == "eval"]
    accs = [r for r in evals if "acc" in r]
    quarter = accs[0]["acc"] if len(accs) > 1 else {}
    final = accs[-1]["acc"] if accs else {}
    return (
        [r["tokens"] for r in evals],
        {k: [r["bpb"][k] for r in evals] for k in evals[0]["bpb"]},
        final,
        quarter,
    )


def _point_curves(
    items: list[Any], results: list[dict[str, Any]], point: str, recipes: list[str]
) -> tuple[
    np.ndarray, dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]
]:
    tokens: list[int] | None = None
    bpb: dict[str, dict[str, np.ndarray]] = {}
    acc: dict[str, dict[str, Any]] = {}
    res: dict[str, list[dict[str, Any]]] = {}
    for r in recipes:
        mine = [
            (it, rs) for it, rs in zip(items, results, strict=True) if it.point == point and it.recipe == r
        ]
        per_seed, finals, quarters = [], [], []
        for it, _ in mine:
            t, c, fa, qa = read_curves(Path(it.out_dir))
            if tokens is None:
                tokens = t
            elif t != tokens:
                raise PhaseError(f"proxy: {it.out_dir} evaluated at {t}, other runs at {tokens}")
            per_seed.append(c)
            finals.append(fa)
            quarters.append(qa)
        bpb[r] = {k: np.array([c[k] for c in per_seed]) for k in per_seed[0]}
        acc[r] = {
            s: {
                "at_T": _mean([f.get(s) for f in finals]),
                "at_T_over_4": _mean([q.get(s) for q in quarters]),
                "per_seed": [f.get(s) for f in finals],
            }
            for s in (finals[0] if finals else {})
        }
        res[r] = [rs for _, rs in mine]
    assert tokens is not None
    return np.asarray(tokens, dtype=np.float64), bpb, acc, res


def _mean(xs: list[Any]) -> float | None:
    v = [x for x in xs if x is not None]
    return float(np.mean(v)) if v else None


def baseline_curve(
    res_base: list[dict[str, Any]], h_base: np.ndarray, budget: int, headline: list[str]
) -> analysis.Baseline:
    """The baseline's measured curve: per seed, the headline bpb of its finished runs at every budget of
    ``proxy.curve`` (the trunk's ``branches``); without branches, the main budget alone."""
    per_seed = [r.get("branches") or {} for r in res_base]
    budgets = sorted({int(b) for b in per_seed[0]}) if per_seed and per_seed[0] else []
    if not budgets or any(sorted(int(b) for b in p) != budgets for p in per_seed) or budget not in budgets:
        return analysis.Baseline(np.array([budget]), h_base[:, -1:], budget)
    curves = np.array([[np.mean([p[str(b)][k] for k in headline]) for b in budgets] for p in per_seed])
    return analysis.Baseline(np.asarray(budgets, dtype=np.float64), curves, budget)


def _pool(heads: dict[str, np.ndarray], roles: dict[str, str]) -> analysis.Pool:
    return analysis.Pool(heads, [r for r in heads if roles.get(r, "recipe") != "control"])


def _paired_block(base: analysis.Baseline, pool: analysis.Pool, r: str, baseline: str) -> dict[str, Any]:
    iv = pool.interval(r, baseline)
    h_r, h_b = pool.heads[r], pool.heads[baseline]
    return {
        "diff_bpb": iv.as_dict(),
        "per_seed_diff": (h_r[:, -1] - h_b[:, -1]).tolist(),
        "call": analysis.call(iv),
        "multiplier": analysis.multiplier_block(base, iv),
        "method": stats.METHOD,
    }


def _point_summary(
    point: Any,
    tokens: np.ndarray,
    heads: dict[str, np.ndarray],
    baseline: str,
    res: dict[str, list[dict[str, Any]]],
    roles: dict[str, str],
    headline: list[str],
) -> dict[str, Any]:
    base = baseline_curve(res[baseline], heads[baseline], int(tokens[-1]), headline)
    pool = _pool(heads, roles)
    model = res[baseline][0]["model"]
    fpt = float(model.get("flops_per_token") or 0.0)
    per = {}
    for r, h in heads.items():
        pb = _paired_block(base, pool, r, baseline)
        per[r] = {
            "bpb_at_T": float(h[:, -1].mean()),
            "bpb_at_T_over_4": value_at(tokens, h.mean(axis=0), float(tokens[-1]) / 4),
            "diff_bpb": pb["diff_bpb"],
            "call": pb["call"],
            "multiplier": pb["multiplier"],
        }
    pw = analysis.power(base, pool, len(point.seeds))
    quarter = {r: v["bpb_at_T_over_4"] for r, v in per.items()}
    full = {r: v["bpb_at_T"] for r, v in per.items()}
    params = float(model.get("params") or 0.0)
    rk = analysis.ranking(heads, pool)
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
        "tokens_per_s": _mean([x.get("tokens_per_s") for rs in res.values() for x in rs]),
        "recipes": per,
        "ranking": rk["order"],
        "called_pairs": [p for p in rk["pairs"] if p["separated"]],
        "agreement_T_over_4_vs_T": stats.decision_accuracy(
            {r: v for r, v in quarter.items() if roles.get(r) != "control"},
            {r: v for r, v in full.items() if roles.get(r) != "control"},
        ),
        "sd_diff_bpb": pw["sd_diff_bpb"],
        "sd_dof": pw["sd_dof"],
        "mde_multiplier": pw["mde_multiplier"],
        "baseline_curve": {"budgets": [int(b) for b in base.budgets], "bpb": base.curve.tolist()},
        "anomalies": int(sum(x.get("anomalies", 0) for rs in res.values() for x in rs)),
        "rollbacks": int(sum(x.get("rollbacks", 0) for rs in res.values() for x in rs)),
        "branch_anomalies": int(sum(x.get("branch_anomalies", 0) for rs in res.values() for x in rs)),
    }


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
) -> dict[str, Any]:
    names = [r.name for r in recipes]
    points = cfg.points()
    main = points[0]
    tokens, bpb, acc, res = _point_curves(items, results, main.name, names)
    curves = {
        r: RecipeCurves(
            bpb=bpb[r],
            tokens_kept=data[r]["tokens"],
            device_s=sum(x["device_s"] for x in res[r]),
            tokens_trained=sum(x["tokens"] for x in res[r]),
        )
        for r in names
    }
    rep = goodput_report(
        curves,
        baseline=cfg.baseline,
        tokens=tokens,
        budget=int(tokens[-1]),
        n_boot=cfg.n_boot,
        headline=cfg.headline,
    )
    heads = {r: analysis.headline(bpb[r], cfg.headline) for r in names}
    base = baseline_curve(res[cfg.baseline], heads[cfg.baseline], int(tokens[-1]), cfg.headline)
    stages = ctx.manifest.get("stages") or []
    by_stage = {
        str(s.get("name") or s.get("label") or i): float(s.get("cpu_s", 0.0)) for i, s in enumerate(stages)
    }
    epochs = {r: float(tokens[-1]) / max(1, data[r]["tokens"]) for r in names}
    roles = {r.name: "recipe" for r in cfg.recipes} | {
        r.name: "control" for r in recipes if r.name not in {x.name for x in cfg.recipes}
    }
    roles[cfg.baseline] = "baseline"
    pool = _pool(heads, roles)
    for r in names:
        v = rep["recipes"][r]
        pb = _paired_block(base, pool, r, cfg.baseline)
        m = pb["multiplier"]
        y = v["yield"]
        v["multiplier"] = m
        v["goodput"] = {
            "value": finite_or_none(y * m["value"]) if m["value"] is not None else None,
            "ci": [
                finite_or_none(y * m["ci_low"]) if m["ci_low"] is not None else None,
                finite_or_none(y * m["ci_high"]) if m["ci_high"] is not None else None,
            ],
            "bounds": {"value": m["bounds"]["value"], "ci": [m["bounds"]["ci_low"], m["bounds"]["ci_high"]]},
        }
        v["effective_tokens"] = (
            finite_or_none(v["tokens_in"] * y * m["value"]) if m["value"] is not None else None
        )
        v["paired"] = {k: pb[k] for k in ("diff_bpb", "per_seed_diff", "call", "method")}
        v["bpb_at_T"]["note"] = (
            "descriptive: this recipe's own seeds (bootstrap); calls use the paired difference"
        )
        v["role"] = roles[r]
        v["epochs_at_T"] = epochs[r]
        v["accuracy"] = acc[r]
        src = next(x for x in recipes if x.name == r)
        v.update(
            {
                "rules": src.rules,
                "docs": data[r]["docs"],
                "decontaminated": data[r].get("decontaminated", 0),
                "decontaminated_by_set": data[r].get("decontaminated_by_set", {}),
                "anomalies": sum(x["anomalies"] for x in res[r]),
                "rollbacks": sum(x["rollbacks"] for x in res[r]),
                "branch_anomalies": sum(x.get("branch_anomalies", 0) for x in res[r]),
                "corrupted_docs": data[r].get("corrupted", 0),
            }
        )
        if src.source == "null":
            v["subsample_of"] = cfg.baseline
            v["draws"] = data[r].get("draws", {})  # one document draw per training seed
        cur = {} if src.source in ("raw", "null") else by_stage
        v["costs"].update({"curation_cpu_s": round(sum(cur.values()), 3), "curation_cpu_s_by_stage": cur})
    rep["ranking"] = analysis.ranking(heads, pool)
    pw = analysis.power(base, pool, len(main.seeds))
    # The verdict is about the controlled recipe (the plain curated one), else the best non-control recipe.
    subject = controlled or next((r for r in rep["ranking"]["order"] if roles[r] == "recipe"), None)
    verdict: dict[str, Any] = {"recipe": subject, "statistic": "paired difference in mean headline bpb at T"}
    if subject is not None:
        iv = pool.interval(subject, cfg.baseline)
        verdict.update(
            {
                "call": analysis.call(iv),
                "diff_bpb": iv.as_dict(),
                "multiplier": rep["recipes"][subject]["multiplier"],
                "sentence": analysis.verdict_sentence(
                    subject, cfg.baseline, iv, rep["recipes"][subject]["multiplier"], pw, cfg.headline
                ),
            }
        )
    else:
        verdict.update(
            {"call": "not_called", "sentence": "no recipe besides the baseline: nothing to compare"}
        )
    # The ladder: every point's ranking and multipliers, and decision accuracy against the largest.
    ladder = []
    for p in points:
        t_p, bpb_p, _, res_p = (
            (tokens, bpb, acc, res) if p == main else _point_curves(items, results, p.name, names)
        )
        heads_p = {r: analysis.headline(bpb_p[r], cfg.headline) for r in names}
        ladder.append(_point_summary(p, t_p, heads_p, cfg.baseline, res_p, roles, cfg.headline))
    ref = max(ladder, key=lambda q: (q["compute_flops_per_run"], q["params"]))
    # Decision accuracy (DataDecide): controls excluded, over the pairs the reference point itself called.
    ref_called = [
        (c["a"], c["b"])
        for c in ref["called_pairs"]
        if roles.get(c["a"]) != "control" and roles.get(c["b"]) != "control"
    ]
    for q in ladder:
        q["decision_accuracy_vs_reference"] = stats.decision_accuracy(
            {r: v["bpb_at_T"] for r, v in q["recipes"].items()},
            {r: v["bpb_at_T"] for r, v in ref["recipes"].items()},
            ref_called,
        )
        q["decision_pairs"] = len(ref_called)
        if q is ref:  # the reference agrees with itself by definition: nothing measured
            q["decision_accuracy_vs_reference"] = None
    ladder_block = {"reference": ref["name"], "points": ladder, "main": main.name}
    if len(ladder) > 1 and ladder[0]["decision_accuracy_vs_reference"] not in (None, 1.0):
        ladder_block["warning"] = (
            f"the main point ({main.name}) orders {1 - ladder[0]['decision_accuracy_vs_reference']:.0%} of recipe "
            f"pairs differently from the largest point ({ref['name']}): its ranking may point the wrong way"
        )
        verdict["sentence"] += f". Warning: {ladder_block['warning']}"
    warnings = [ladder_block["warning"]] if "warning" in ladder_block else []
    controls = controls_block(base, heads, cfg.baseline, controlled, controls_skipped, epochs, cfg.planted)
    if "planted" in controls and not controls["planted"]["called_worse"]:
        warnings.insert(0, controls["planted"]["message"])
    null_warning = ladder_null_warning(ladder[1:])
    if null_warning:
        ladder_block["null_separated_at"] = null_warning[0]
        warnings.append(null_warning[1])
    planted_warning = ladder_planted_warning(ladder[1:], cfg.planted)
    if planted_warning:
        ladder_block["planted_not_called_at"] = planted_warning[0]
        warnings.append(planted_warning[1])
    spikes = {r: rep["recipes"][r]["anomalies"] for r in names if rep["recipes"][r]["anomalies"]}
    if spikes:
        warnings.append(
            "loss spikes were skipped during training ("
            + ", ".join(f"{r}: {n} steps" for r, n in spikes.items())
            + "): an unstable run can move its recipe's bpb by more than the effects measured; a lower "
            "proxy.train.lr or more seeds make the verdict less sensitive to it"
        )
    eval_block = {}
    for e in evals:
        d = e.describe(e.name in cfg.headline)
        d["grams"] = grams_per_set.get(e.name, 0)
        d["decontaminated"] = {r: data[r].get("decontaminated_by_set", {}).get(e.name, 0) for r in names}
        eval_block[e.name] = d
    model = res[cfg.baseline][0]["model"]
    rep.update(
        {
            "schema_version": SCHEMA_VERSION,
            "baseline": cfg.baseline,
            "budget": int(tokens[-1]),
            "seeds": list(main.seeds),
            "eval_sets": sorted(bpb[cfg.baseline]),
            "eval_set_info": eval_block,
            "headline": list(cfg.headline),
            "model": {"name": main.model, **model},
            "controls": controls,
            "power": pw,
            "verdict": verdict,
            "warnings": warnings,
            "ladder": ladder_block,
            "regime": regime(ladder[0], ladder),
            "baseline_curve": {
                "budgets": [int(b) for b in base.budgets],
                "bpb_mean": base.curve.tolist(),
                "per_seed": base.curves.tolist(),
                "range": list(base.range),
                "method": "the baseline trained to a finished (cooled-down) model at each budget: one constant-LR "
                "trunk per seed with a cool-down branch at each budget (proxy.curve)",
            },
            "statistics": {
                "calls": stats.METHOD
                + ", level 0.95; the multiplier's CI maps the same interval through the baseline's measured "
                "curve (the mean and every seed's, the widest)",
                "pooled_over": pool.members,
                "pooled_sd_dof": pool.dof,
                "descriptive_bands": f"bootstrap over seeds ({cfg.n_boot} resamples) for per-recipe curve bands",
            },
        }
    )
    return rep
