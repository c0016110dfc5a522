"""Does the cheap verdict transfer? The transfer study's numbers from a finished ladder run.

    curate run pipelines/transfer_ladder.yaml --output runs/transfer_ladder
    python benchmarks/transfer_ladder.py runs/transfer_ladder \\
        [--json benchmarks/results/transfer_ladder-web-DATE.json] [--svg docs/figures/transfer_ladder.svg]

Reads ``RUN_DIR/goodput.json`` (its ``ladder`` block: every point finished, cooled down, with its seeds) and
reports, per point: its compute per run and against the cheapest point, the CPU-seconds its runs took
(single-thread runs: their training seconds), each recipe's multiplier against the baseline with its
paired interval and call, the pairs it calls, its detectable effect, its controls, and its decision
accuracy against the top (reference) point over the pairs the top point calls, with the bootstrap
interval over seeds (:func:`curate.proxy.stats.decision_accuracy_interval`). Then the recommendation:
decision accuracy per CPU-second of each cheaper point, and, per recipe, whether its multiplier falls
as compute grows (the cheapest point's interval against the top point's). Nothing is fitted or
extrapolated: every number is read from finished runs. The figure is the report's ladder chart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import machine
from curate.report.trust import multiplier_ci


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def summarize(g: dict[str, Any]) -> dict[str, Any]:
    """The study's block from a ladder run's goodput.json."""
    lad = g.get("ladder") or {}
    pts = sorted(lad.get("points") or [], key=lambda p: p["compute_flops_per_run"])
    if len(pts) < 2:
        raise SystemExit("transfer_ladder: goodput.json has fewer than two ladder points")
    roles = {r: v.get("role", "recipe") for r, v in (g.get("recipes") or {}).items()}
    controls = {r for r, k in roles.items() if k == "control"}
    base, cheap, top = g.get("baseline"), pts[0], pts[-1]
    out_pts = []
    for p in pts:
        recipes = {  # each recipe's bpb per seed too: the decision accuracy's bootstrap recomputes from them
            r: {
                "multiplier": v.get("multiplier"),
                "call": v.get("call"),
                "diff_bpb": v.get("diff_bpb"),
                "per_seed_bpb_at_T": v.get("per_seed_bpb_at_T"),
            }
            for r, v in p["recipes"].items()
        }
        acc = p.get("decision_accuracy_vs_reference")
        out_pts.append(
            {
                "name": p["name"],
                "model": p["model"],
                "budget": p["budget"],
                "seeds": p["seeds"],
                "params": p["params"],
                "tokens_per_param": p["tokens_per_param"],
                "compute_flops_per_run": p["compute_flops_per_run"],
                "compute_x_cheapest": p["compute_flops_per_run"] / cheap["compute_flops_per_run"],
                "cpu_s": p["device_s"],
                "recipes": recipes,
                "called_pairs": [f"{c['a']} vs {c['b']}" for c in p.get("called_pairs") or []],
                "mde_multiplier": p.get("mde_multiplier"),
                "decision_accuracy": acc,
                "decision_accuracy_ci": p.get("decision_accuracy_ci"),
                "decision_pairs": p.get("decision_pairs"),
                "decision_accuracy_per_cpu_hour": acc / (p["device_s"] / 3600) if acc is not None else None,
            }
        )
    trend = {}
    for r in top["recipes"]:
        if r == base or r in controls:
            continue
        a, b = (
            (cheap["recipes"].get(r) or {}).get("multiplier") or {},
            top["recipes"][r].get("multiplier") or {},
        )
        if a.get("value") is None or b.get("value") is None:
            continue
        trend[r] = {
            "cheapest": a["value"],
            "top": b["value"],
            "falls": b["value"] < a["value"],
            "intervals_overlap": None
            if None in (a.get("ci_low"), a.get("ci_high"), b.get("ci_low"), b.get("ci_high"))
            else not (a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"]),
        }
    return {
        "reference": top["name"],
        "cheapest": cheap["name"],
        "compute_ratio_top_vs_cheapest": top["compute_flops_per_run"] / cheap["compute_flops_per_run"],
        "baseline": base,
        "controls": sorted(controls),
        "top_called_pairs": out_pts[-1]["called_pairs"],
        "points": out_pts,
        "multiplier_trend": trend,
        "method": "decision accuracy: the share of the pairs of non-control recipes (baseline included) the top "
        "point calls that a point orders as the top point does, by mean final bpb of its finished runs; "
        "interval: percentile bootstrap, each point's seeds resampled with replacement, 2,000 draws",
    }


def table(s: dict[str, Any]) -> str:
    recipes = [r for r in s["points"][-1]["recipes"]]
    head = ["point", "compute", "CPU-s", *recipes, "decision accuracy"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for p in s["points"]:
        acc = p["decision_accuracy"]
        ci = p["decision_accuracy_ci"]
        acc_s = (
            "— (reference)" if acc is None else f"{acc:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")
        )
        cells = [
            p["name"],
            f"{p['compute_x_cheapest']:.1f}x",
            f"{p['cpu_s']:,.0f}",
            *[
                multiplier_ci((p["recipes"].get(r) or {}).get("multiplier"))
                + f" {(p['recipes'].get(r) or {}).get('call', '')}"
                for r in recipes
            ],
            acc_s + f" of {p['decision_pairs']}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--json", type=Path, default=None, help="write the study's block here")
    ap.add_argument(
        "--svg", type=Path, default=None, help="write the figure (the report's ladder chart) here"
    )
    args = ap.parse_args()
    g = json.loads((args.run_dir / "goodput.json").read_text())
    s = summarize(g)
    s = {
        "date": dt.date.today().isoformat(),
        "commit": _commit(),
        "cpu": machine(),
        "command": f"python benchmarks/transfer_ladder.py {args.run_dir.name}",
        **s,
    }
    print(table(s))
    for r, t in s["multiplier_trend"].items():
        print(
            f"{r}: {t['cheapest']:.2f}x at the cheapest point, {t['top']:.2f}x at the top"
            f" ({'falls' if t['falls'] else 'rises'}; intervals {'overlap' if t['intervals_overlap'] else 'apart'})"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    if args.svg:
        from curate.report.charts import ladder_svg

        svg = ladder_svg(g)
        if svg is None:
            raise SystemExit("transfer_ladder: no figure (fewer than two points)")
        stamp = f"<!-- {s['date']}, {s['commit']}, {s['cpu']}, {s['command']} -->\n"
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        args.svg.write_text(stamp + svg)


if __name__ == "__main__":
    main()
