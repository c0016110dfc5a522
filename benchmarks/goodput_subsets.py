"""Do text targets and benchmark-gold targets agree? Re-read a finished proxy phase and recompute the
paired verdict of every recipe against the baseline with the headline restricted to one group of eval
sets (text, choice, heldout, and the configured headline), at every ladder point.

    python benchmarks/goodput_subsets.py runs/goodput_trust            # a table per ladder point
    python benchmarks/goodput_subsets.py runs/goodput_trust --json out.json

Nothing is retrained: it reads ``goodput.json`` (which sets are of which kind) and the runs'
``metrics.jsonl`` under ``proxy/`` and ``proxy/ladder/<point>/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from curate.proxy import stats
from curate.proxy.statistics import analysis


def _curves(run: Path) -> tuple[list[int], dict[str, list[float]]]:
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    ev = [r for r in recs if r["type"] == "eval"]
    return [r["tokens"] for r in ev], {k: [r["bpb"][k] for r in ev] for k in ev[0]["bpb"]}


def point_dirs(run_dir: Path, g: dict[str, Any]) -> dict[str, Path]:
    out = {}
    for p in g["ladder"]["points"]:
        out[p["name"]] = (
            run_dir / "proxy"
            if p["name"] == g["ladder"]["main"]
            else run_dir / "proxy" / "ladder" / p["name"]
        )
    return out


def subsets(g: dict[str, Any]) -> dict[str, list[str]]:
    info = g["eval_set_info"]
    groups = {
        "headline": list(g["headline"]),
        "text": [s for s, d in info.items() if d["kind"] == "text"],
        "choice": [s for s, d in info.items() if d["kind"] == "choice"],
        "heldout (fit)": [s for s, d in info.items() if d["kind"] == "heldout"],
    }
    for s in info:
        groups[s] = [s]
    return {k: v for k, v in groups.items() if v}


def analyse(run_dir: Path) -> dict[str, Any]:
    g = json.loads((run_dir / "goodput.json").read_text())
    base = g["baseline"]
    recipes = list(g["recipes"])
    out: dict[str, Any] = {}
    for point, pdir in point_dirs(run_dir, g).items():
        seeds = next(p["seeds"] for p in g["ladder"]["points"] if p["name"] == point)
        curves = {r: [_curves(pdir / r / f"seed{s}") for s in seeds] for r in recipes}
        tokens = np.asarray(curves[base][0][0], dtype=np.float64)
        per_group: dict[str, Any] = {}
        for group, sets in subsets(g).items():
            heads = {
                r: analysis.headline({k: np.array([c[1][k] for c in curves[r]]) for k in sets}, sets)
                for r in recipes
            }
            b = analysis.Baseline(tokens, heads[base].mean(axis=0))
            row = {}
            for r in recipes:
                if r == base:
                    continue
                iv = analysis.paired(heads[r], heads[base])
                m = analysis.multiplier_block(b, iv)
                row[r] = {"call": analysis.call(iv), "multiplier": m, "diff_bpb": iv.as_dict()}
            order = sorted(recipes, key=lambda r: float(heads[r][:, -1].mean()))
            per_group[group] = {"recipes": row, "order": order}
        ref = per_group["headline"]["order"]
        for v in per_group.values():
            rank = {r: i for i, r in enumerate(v["order"])}
            v["decision_accuracy_vs_headline"] = stats.decision_accuracy(
                {r: float(rank[r]) for r in recipes}, {r: float(ref.index(r)) for r in recipes}
            )
        out[point] = per_group
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    res = analyse(args.run_dir)
    for point, groups in res.items():
        recipes = list(next(iter(groups.values()))["recipes"])
        print(f"\n{point}")
        print(f"{'targets':<16}" + "".join(f"{r:>30}" for r in recipes) + "   agreement")
        for group, v in groups.items():
            cells = []
            for r in recipes:
                m = v["recipes"][r]["multiplier"]
                lo, hi = m["ci_low"], m["ci_high"]
                ci = f"[{lo:.2f},{hi:.2f}]" if lo is not None and hi is not None else "[—]"
                mark = {"better": "+", "worse": "-", "not_called": " "}[v["recipes"][r]["call"]]
                cells.append(f"{(m['value'] or float('nan')):>8.2f}x {ci:>15}{mark:>2}")
            print(
                f"{group:<16}"
                + "".join(f"{c:>30}" for c in cells)
                + f"   {v['decision_accuracy_vs_headline']:.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
