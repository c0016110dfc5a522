"""Finished proxy runs read back as curves: each run's eval points (:func:`read_curves`), a ladder
point's runs by recipe (:func:`point_curves`) and the baseline's curve of finished models
(:func:`baseline_curve`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.proxy.statistics import analysis


def read_curves(out_dir: Path) -> tuple[list[int], dict[str, list[float]], dict[str, Any]]:
    """One run's eval points: tokens, bpb per eval set, and its accuracy at T (the last eval record that has
    one; runs trained before accuracy was scored at T only also hold an un-cooled T/4 one, never read)."""
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in recs if r["type"] == "eval"]
    accs = [r for r in evals if "acc" in r]
    final = accs[-1]["acc"] if accs else {}
    return (
        [r["tokens"] for r in evals],
        {k: [r["bpb"][k] for r in evals] for k in evals[0]["bpb"]},
        final,
    )


def point_curves(
    items: list[Any], results: list[dict[str, Any]], point: str, recipes: list[str]
) -> tuple[
    np.ndarray, dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]
]:
    """The runs of one ladder point, by recipe: the shared eval tokens, bpb per eval set (seeds x points),
    accuracy at T (the mean and per seed) and the runs' result records."""
    tokens: list[int] | None = None
    bpb: dict[str, dict[str, np.ndarray]] = {}
    acc: dict[str, dict[str, Any]] = {}
    res: dict[str, list[dict[str, Any]]] = {}
    for r in recipes:
        mine = [
            (it, rs) for it, rs in zip(items, results, strict=True) if it.point == point and it.recipe == r
        ]
        per_seed, finals = [], []
        for it, _ in mine:
            t, c, fa = read_curves(Path(it.out_dir))
            if tokens is None:
                tokens = t
            elif t != tokens:
                raise PhaseError(f"proxy: {it.out_dir} evaluated at {t}, other runs at {tokens}")
            per_seed.append(c)
            finals.append(fa)
        bpb[r] = {k: np.array([c[k] for c in per_seed]) for k in per_seed[0]}
        acc[r] = {
            s: {
                "at_T": mean_or_none([f.get(s) for f in finals]),
                "per_seed": [f.get(s) for f in finals],
            }
            for s in (finals[0] if finals else {})
        }
        res[r] = [rs for _, rs in mine]
    assert tokens is not None
    return np.asarray(tokens, dtype=np.float64), bpb, acc, res


def mean_or_none(xs: list[Any]) -> float | None:
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
