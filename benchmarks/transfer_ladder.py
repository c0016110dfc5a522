"""Does the cheap verdict transfer? The transfer study's numbers from a finished ladder run.

    curate run pipelines/transfer_ladder.yaml --output runs/transfer_ladder
    python benchmarks/transfer_ladder.py runs/transfer_ladder \\
        [--json benchmarks/results/transfer_ladder-web-DATE.json] [--svg docs/figures/transfer_ladder.svg]

Reads ``RUN_DIR/goodput.json`` (its ``ladder`` block: every point finished, cooled down, with its seeds and
each recipe's headline bpb per seed) and recomputes from those per-seed values, with
:mod:`curate.proxy.statistics.transfer`: every pair of non-control recipes at the reference (top) point,
each cheaper point's decision accuracy against it (over every pair, weighted by the reference's confidence
in its sign, and over the reference's Holm calls; cluster-bootstrap intervals over recipes and seeds), the
noise ceiling (the top point's seeds split in halves), chance, and per recipe whether its multiplier fades
as compute grows. Per point it keeps its seeds, its compute per run relative to the main point (the web
reference point), the CPU-seconds its runs took (single-thread runs: their training seconds) and every
recipe's bpb per seed, so anyone can recompute. Nothing is fitted beyond the trend's regression, nothing
extrapolated. The figure is the report's ladder chart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import commit, machine
from curate.proxy.statistics import transfer
from curate.report.markdown import md_table

FIELDS = ("per_seed_bpb_at_T", "bpb_at_T", "multiplier", "call", "diff_bpb")


def _point(p: dict[str, Any], main: dict[str, Any]) -> dict[str, Any]:
    """One point of the study: what it is, what it cost, and every recipe's per-seed bpb and multiplier."""
    return {
        "name": p["name"],
        "model": p["model"],
        "budget": p["budget"],
        "seeds": p["seeds"],
        "params": p["params"],
        "tokens_per_param": p["tokens_per_param"],
        "compute_flops_per_run": p["compute_flops_per_run"],
        "compute": p["compute_flops_per_run"] / main["compute_flops_per_run"],
        "cpu_s": p["device_s"],
        "mde_multiplier": p.get("mde_multiplier"),
        "baseline_curve": p["baseline_curve"],
        "recipes": {r: {k: v.get(k) for k in FIELDS} for r, v in p["recipes"].items()},
    }


def summarize(g: dict[str, Any], *, draws: int = transfer.DRAWS) -> dict[str, Any]:
    """The study's block from a ladder run's goodput.json."""
    lad = g.get("ladder") or {}
    pts = sorted(lad.get("points") or [], key=lambda p: p["compute_flops_per_run"])
    if len(pts) < 2:
        raise SystemExit("transfer_ladder: goodput.json has fewer than two ladder points")
    roles = {r: v.get("role", "recipe") for r, v in (g.get("recipes") or {}).items()}
    main = next((p for p in pts if p["name"] == lad.get("main")), pts[0])
    recipes = [
        r for r in pts[-1]["recipes"] if roles.get(r) != "control" and all(r in p["recipes"] for p in pts)
    ]
    points = [_point(p, main) for p in pts]
    study_pts = study_points(points, recipes)
    s = transfer.study(study_pts, recipes, g["baseline"], draws=draws)
    return {
        "main": main["name"],
        "baseline": g["baseline"],
        "controls": sorted(r for r, k in roles.items() if k == "control"),
        "compute_unit": f"compute per run relative to the main point ({main['name']}, the web reference point)",
        "points": points,
        **s,
        "headline_width": headline_width(
            study_pts, recipes, main["name"], s["decision_accuracy"].get(main["name"]), draws=draws
        ),
        "method": "decision accuracy: per cheaper point, the share of the pairs of non-control recipes (baseline "
        "included) it orders as the reference (top) point does by mean headline bpb of its finished runs; over "
        "every pair weighted by 1 - p of the reference's paired t (all_pairs_weighted) and over the pairs the "
        "reference calls after Holm's adjustment over every pair (called); 95% cluster bootstrap, recipes and "
        "each point's seeds resampled with replacement, 2,000 draws; noise ceiling: the reference's seeds in "
        "halves, one half against the other; chance 0.5; trend: OLS of each seed's ln multiplier on log2 "
        "compute, HC3, Holm over the recipes, with the fade and growth each test detects at 80% power at 5% over "
        "the recipes tested; the point to use: the cheapest whose weighted accuracy's interval lies above "
        "chance and that no costlier cheap point beats (paired bootstrap, the same draws of recipes and "
        "reference seeds) (curate/proxy/statistics/transfer.py)",
    }


MC_SEEDS = (1, 2, 3, 4, 5)  # other seeds of the bootstrap, for its Monte Carlo error


def headline_width(
    points: list[transfer.Point],
    recipes: list[str],
    main: str,
    accuracy: dict[str, Any] | None,
    *,
    draws: int = transfer.DRAWS,
) -> dict[str, Any]:
    """The width of the headline interval (the main point's weighted accuracy against the reference) as the
    study computed it (``accuracy``, :func:`transfer.decision_accuracy`'s block at ``draws``, seed 0), then
    at other seeds of the same bootstrap and with ten times its draws: a width read against a floor is read
    with its Monte Carlo error."""
    ref = max(points, key=lambda p: p.compute)
    cheap = next(p for p in points if p.name == main)

    def width(**kw: Any) -> float:
        ci = transfer.decision_accuracy(cheap, ref, recipes, **kw)["all_pairs_weighted"]["ci"]
        return float(ci[1] - ci[0]) if ci else float("nan")

    study = (accuracy or {}).get("all_pairs_weighted", {}).get("ci")
    return {
        "study": float(study[1] - study[0]) if study else width(draws=draws),
        "other_seeds": {str(k): width(draws=draws, seed=k) for k in MC_SEEDS},
        "draws": draws,
        "more_draws": {"draws": 10 * draws, "width": width(draws=10 * draws)},
    }


def study_points(points: list[dict[str, Any]], recipes: list[str]) -> list[transfer.Point]:
    """The study's points (as :func:`summarize` writes them) as the statistics read them: anyone holding the
    JSON recomputes every accuracy from these per-seed values."""
    return [
        transfer.Point(
            p["name"],
            tuple(p["seeds"]),
            float(p["compute_flops_per_run"]),
            {r: p["recipes"][r]["per_seed_bpb_at_T"] for r in recipes},
            tuple(p["baseline_curve"]["budgets"]),
            tuple(p["baseline_curve"]["bpb"]),
            p["budget"],
        )
        for p in points
    ]


def _share(a: dict[str, Any]) -> str:
    if a.get("value") is None:
        return "—"
    ci = a.get("ci")
    return f"{a['value']:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")


def table(s: dict[str, Any]) -> str:
    """One row per point: compute, CPU-s, seeds, decision accuracy both ways; then the ceiling and chance."""
    head = [
        "point",
        "compute",
        "CPU-s",
        "seeds",
        "decision accuracy, every pair (weighted)",
        "on the top's calls",
    ]
    body = []
    for p in s["points"]:
        acc = s["decision_accuracy"].get(p["name"])
        if acc is None:
            cells = ["reference", "reference"]
        else:
            w, c = acc["all_pairs_weighted"], acc["called"]
            calls = "no pair called" if c["value"] is None else f"{_share(c)} of {c['pairs']}"
            cells = [f"{_share(w)} of {w['pairs']}", calls]
        seeds = f"{len(p['seeds'])} ({p['seeds'][0]}-{p['seeds'][-1]})"
        body.append([p["name"], f"{p['compute']:.1f}x", f"{p['cpu_s']:,.0f}", seeds, *cells])
    rows = md_table(head, body)
    nc = s["noise_ceiling"]
    rows.append(
        f"\nnoise ceiling (the top point's seeds in halves, {nc['splits']} splits): every pair "
        f"{_share(nc['all_pairs_weighted'])}, on the calls {_share(nc['called'])}; chance {s['chance']:.0%}"
    )
    hw = s.get("headline_width")
    if hw:
        others = sorted(hw["other_seeds"].values())
        rows.append(
            f"headline interval width {hw['study']:.3f} ({hw['draws']:,} draws); at {len(others)} other seeds of the "
            f"bootstrap {others[0]:.3f}-{others[-1]:.3f}; with {hw['more_draws']['draws']:,} draws "
            f"{hw['more_draws']['width']:.3f}"
        )
    ch = s["choice"]
    rows.append(f"point to use: {ch['point'] or 'none'}: {ch['reason']}")
    rows += [f"  {name} passed over: {why}" for name, why in ch["passed_over"].items()]
    if not s["seeds_disjoint"]:
        rows.append(f"warning: the points share seeds {s['shared_seeds']}: their agreement is inflated")
    return "\n".join(rows)


def _multiplier(m: dict[str, Any]) -> str:
    ci = m.get("ci")
    beyond = f" ({m['censored']} of {m['seeds']} seeds beyond the curve: bounds)" if m.get("censored") else ""
    return f"{m['value']:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + beyond


VERDICT = {"fades": "fades", "grows": "grows", "not_shown": "not shown either way", "bounded": "not tested"}


def trend_table(s: dict[str, Any]) -> str:
    """One row per recipe: its multiplier at each point (geometric mean over the point's seeds, t-interval),
    the change per doubling of compute with its interval and Holm-adjusted p, and the verdict (with the
    fade and growth a test that shows neither could have detected)."""
    rec = s["trend"]["recipes"]
    if not rec:
        return s["trend"]["summary"]
    names = [p["point"] for p in next(iter(rec.values()))["points"]]
    head = ["recipe", *names, "per doubling", "Holm p", "trend"]
    body = []
    for r, v in rec.items():
        if "ratio_per_doubling" in v:
            lo, hi = v["ci"]
            slope = f"x{v['ratio_per_doubling']:.3f} [{lo:.3f}, {hi:.3f}]"
        else:
            slope = "—"
        holm = "—" if v.get("p_holm") is None else f"{v['p_holm']:.2g}"
        said = VERDICT[v["verdict"]]
        if v["verdict"] == "not_shown" and v.get("detectable_per_doubling"):
            below, above = v["detectable_per_doubling"]
            said += f" (detectable: x{below:.3f} / x{above:.3f})"
        body.append([r, *(_multiplier(m) for m in v["points"]), slope, holm, said])
    rows = md_table(head, body)
    rows.append(f"\n{s['trend']['summary']}")
    return "\n".join(rows)


def read_goodput(run_dir: Path) -> dict[str, Any]:
    """``run_dir/goodput.json``; a clear refusal, with how far the proxy phase got, while it is not there."""
    path = run_dir / "goodput.json"
    if not path.exists():
        done = len(list((run_dir / "proxy").glob("**/seed*/result.json")))
        raise SystemExit(
            f"transfer_ladder: {path} does not exist: the run's proxy phase has not finished ({done} proxy "
            f"runs finished under {run_dir / 'proxy'}); resume it with `curate run PIPELINE --output {run_dir}`"
        )
    return json.loads(path.read_text())


def stamped(svg: str, stamp: str) -> str:
    """``svg`` with ``stamp`` (date, commit, CPU, command) as its ``<desc>``: a command's ``--`` may not stand
    in an XML comment, so a stamp there made the figure unreadable to a browser."""
    return re.sub(r"<svg\b[^>]*>", lambda m: m.group(0) + f"<desc>{html.escape(stamp)}</desc>", svg, count=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--json", type=Path, default=None, help="write the study's block here")
    ap.add_argument(
        "--svg", type=Path, default=None, help="write the figure (the report's ladder chart) here"
    )
    args = ap.parse_args()
    g = read_goodput(args.run_dir)
    s = {
        "date": dt.date.today().isoformat(),
        "commit": commit(),
        "cpu": machine(),
        "load": list(os.getloadavg()),
        "command": "python benchmarks/transfer_ladder.py " + shlex.join(sys.argv[1:]),
        **summarize(g),
    }
    print(table(s))
    print()
    print(trend_table(s))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    if args.svg:
        from curate.report.charts import ladder_svg

        svg = ladder_svg(g)
        if svg is None:
            raise SystemExit("transfer_ladder: no figure (fewer than two points)")
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        args.svg.write_text(stamped(svg, f"{s['date']}, {s['commit']}, {s['cpu']}, {s['command']}"))


if __name__ == "__main__":
    main()
