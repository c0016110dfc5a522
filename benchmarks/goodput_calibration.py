"""Calibrate the goodput instrument on a finished run: null draws and planted doses.

    python benchmarks/goodput_calibration.py RUN_DIR [--draws 20] [--doses 0.1 0.2 0.4] [--engine inline] [--set KEY=VALUE]

* **Null draws.** The null control (raw's documents drawn by an id hash at the controlled recipe's token
  count) is trained for ``--draws`` independent draw families (``proxy.null_draw`` = 0 .. N-1) at the run's
  main point and seeds; each gives a 95% interval of ``null - raw``. Nominal coverage: about 19 of 20 contain
  0 (1x).
* **Planted doses.** The planted control at each rate of ``--doses`` (``proxy.planted``): its multiplier
  and whether it is called worse; the multipliers should fall as the dose rises.

Everything else (raw's trunk and branches, the recipes) is reused from the run's ``proxy/`` folder: only
the null draws and the planted doses train. Reports go to ``RUN_DIR/calibration/*.json``; the summary,
as JSON, to stdout and ``RUN_DIR/calibration/summary.json``.

``--fresh`` (independent replicates): every null draw trains its own fresh seeds of raw and of the
controlled recipe (draw ``k``: seeds ``--seed0 + n k .. --seed0 + n k + n - 1``, null family ``k``), so no
two draws share a run and their intervals are independent checks. Raw is finished at T/2 and T only
(``curve: [0.5, 1]``): the calibration reads the paired difference at T, not the multiplier's range. It also
re-estimates the noise of the controlled recipe's paired difference on those seeds (never used to choose the
point or the learning rate) and the detectable effect that noise gives at ``n`` seeds with the calls'
interval. Reports go to ``RUN_DIR/calibration/fresh/``.

``--collect [MORE_RUN_DIRS]`` trains nothing: it gathers every ``calibration/fresh/draw<k>.json`` of RUN_DIR
and of the further run directories (draws made in several sittings) into one summary (coverage with its
Clopper-Pearson interval, the pooled noise of the controlled recipe and its detectable effect), as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path
from typing import Any


def _phase(run_dir: Path, section: dict[str, Any], report: str, engine: Any) -> dict[str, Any]:
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext, load_manifest

    manifest = load_manifest(run_dir)
    ctx = RunContext(
        run_dir=run_dir,
        config=manifest.get("config") or {},
        engine=engine,
        manifest=manifest,
        section=parse_section(section),
    )
    run_phase(ctx, report_name=report)
    return json.loads((run_dir / report).read_text())


def _fresh(args: argparse.Namespace, base: dict[str, Any], engine: Any) -> dict[str, Any]:
    """Independent replicates: each null draw trains its own fresh seeds of raw and the controlled recipe."""
    from curate.goodput.calls import diff_call
    from curate.proxy import stats

    n = args.seeds_per_draw
    controlled = base.get("controls_for") or "curated"
    fresh = {
        **base,
        "controls": ["null"],
        "curve": [0.5, 1],
        "ladder": [],
        "recipes": {
            k: v
            for k, v in (base.get("recipes") or {}).items()
            if k in (base.get("baseline", "raw"), controlled)
        },
    }
    draws = []
    for k in range(args.first_draw, args.first_draw + args.draws):
        seeds = list(range(args.seed0 + n * k, args.seed0 + n * k + n))
        t0 = time.perf_counter()
        g = _phase(
            args.run_dir, {**fresh, "null_draw": k, "seeds": seeds}, f"calibration/fresh/draw{k}.json", engine
        )
        nul = g["controls"]["null"]["diff_bpb"]
        rec = g["recipes"][controlled]["paired"]["diff_bpb"]
        draws.append(
            {
                "draw": k,
                "seeds": seeds,
                "null": nul,
                "contains_0": diff_call(nul["ci_low"], nul["ci_high"]) == "not_called",
                controlled: rec,
                "wall_s": round(time.perf_counter() - t0, 1),
            }
        )
        print(
            f"draw {k} seeds {seeds}: null {nul['value']:+.4f} [{nul['ci_low']:+.4f}, {nul['ci_high']:+.4f}]"
            f" contains 0: {draws[-1]['contains_0']}; {controlled} {rec['value']:+.4f} (sd {rec['sd']:.4f})"
            f"; {draws[-1]['wall_s']} s",
            flush=True,
        )
    inside = sum(d["contains_0"] for d in draws)
    lo, hi = stats.proportion_interval(inside, len(draws))  # Clopper-Pearson, 95%
    # the controlled recipe's paired-difference noise on fresh seeds: within-draw variances pooled
    sd = math.sqrt(sum(d[controlled]["sd"] ** 2 for d in draws) / len(draws))
    dof = len(draws) * (n - 1)
    delta = stats.mde(sd, n)  # at n seeds, with the calls' own interval (df n - 1)
    return {
        "mode": "fresh",
        "seeds_per_draw": n,
        "draws": draws,
        "null_inside": f"{inside} of {len(draws)}",
        "null_inside_ci95": [round(lo, 3), round(hi, 3)],
        "interval": "each draw: paired t-interval of null - raw over its own n fresh seeds, df n - 1",
        "controlled": controlled,
        "sd_diff_bpb_fresh": sd,
        "sd_dof": dof,
        "mde_bpb_at_n": delta,
        "mde_multiplier_at_n": _mde_multiplier(args.run_dir, delta),
    }


def collect(dirs: list[Path], controlled: str = "curated", n: int = 3) -> dict[str, Any]:
    """Every fresh draw written under ``dirs`` (``calibration/fresh/draw<k>.json``), one summary. A draw
    number found twice is refused (two sittings that drew the same seeds are not independent)."""
    from curate.goodput.calls import diff_call
    from curate.proxy import stats

    found: dict[int, Path] = {}
    for d in dirs:
        for f in sorted((d / "calibration" / "fresh").glob("draw*.json")):
            k = int(f.stem.removeprefix("draw"))
            if k in found:
                raise SystemExit(f"--collect: draw {k} is in {found[k]} and in {f}")
            found[k] = f
    draws = []
    for k in sorted(found):
        g = json.loads(found[k].read_text())
        nul, rec = g["controls"]["null"]["diff_bpb"], g["recipes"][controlled]["paired"]["diff_bpb"]
        draws.append(
            {
                "draw": k,
                "seeds": g["seeds"],
                "null_minus_raw": nul,
                "contains_0": diff_call(nul["ci_low"], nul["ci_high"]) == "not_called",
                f"{controlled}_minus_raw": rec,
            }
        )
    inside = sum(d["contains_0"] for d in draws)
    lo, hi = stats.proportion_interval(inside, len(draws))  # Clopper-Pearson, 95%
    sd = math.sqrt(sum(d[f"{controlled}_minus_raw"]["sd"] ** 2 for d in draws) / len(draws))
    return {
        "draws": len(draws),
        "null_inside": inside,
        "null_inside_ci95": [round(lo, 3), round(hi, 3)],
        "null_mean_diff_bpb": sum(d["null_minus_raw"]["value"] for d in draws) / len(draws),
        f"{controlled}_mean_diff_bpb": sum(d[f"{controlled}_minus_raw"]["value"] for d in draws) / len(draws),
        f"sd_{controlled}_minus_raw_bpb": sd,
        "sd_dof": len(draws) * (n - 1),
        "mde_bpb_at_n": stats.mde(sd, n),
        "per_draw": draws,
    }


def _mde_multiplier(run_dir: Path, delta: float) -> dict[str, Any] | None:
    """``+-delta`` as multipliers on the run's own measured baseline curve (its goodput.json)."""
    from curate.proxy.statistics.analysis import Baseline

    path = run_dir / "goodput.json"
    if not path.exists():
        return None
    g = json.loads(path.read_text())
    c = g.get("baseline_curve") or {}
    if not c.get("budgets"):
        return None
    b = Baseline(c["budgets"], c["per_seed"], float(g["budget"]))
    worse, sw = b.multiplier(delta)
    better, sb = b.multiplier(-delta)
    return {
        "worse": worse,
        "better": better,
        "bounds": {"worse": sw, "better": sb},
        "curve": f"{run_dir.name}/goodput.json baseline_curve ({len(c['per_seed'])} seeds)",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--first-draw", type=int, default=0)
    ap.add_argument("--doses", type=float, nargs="*", default=[0.1, 0.2, 0.4])
    ap.add_argument("--engine", default="inline", choices=["inline", "ray"])
    ap.add_argument("--fresh", action="store_true", help="independent replicates: fresh raw seeds per draw")
    ap.add_argument("--seeds-per-draw", type=int, default=3)
    ap.add_argument("--seed0", type=int, default=1000, help="the first fresh seed (never used elsewhere)")
    ap.add_argument(
        "--collect", type=Path, nargs="*", default=None, help="gather the fresh draws of RUN_DIR and these"
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a proxy key as `curate proxy --set` does (e.g. the tokenizer the run was measured with)",
    )
    args = ap.parse_args()
    if args.collect is not None:
        out = collect([args.run_dir, *args.collect], n=args.seeds_per_draw)
        mult = _mde_multiplier(args.run_dir, out["mde_bpb_at_n"])
        print(json.dumps({**out, "mde_multiplier_at_n": mult}, indent=1))
        return

    from curate.core.engine import make_engine
    from curate.proxy.cli import set_dotted
    from curate.runtime.context import load_manifest

    base = dict((load_manifest(args.run_dir).get("config") or {}).get("proxy") or {})
    for kv in args.set:
        set_dotted(base, kv)
    base.pop("search", None)
    base["ablate"] = False
    engine = make_engine(args.engine, progress=False)
    out: dict[str, Any] = {"run_dir": str(args.run_dir), "null": [], "planted": []}
    t0 = time.perf_counter()
    if args.fresh:
        (args.run_dir / "calibration" / "fresh").mkdir(parents=True, exist_ok=True)
        try:
            out = _fresh(args, base, engine)
        finally:
            engine.shutdown()
        out["wall_s"] = round(time.perf_counter() - t0, 1)
        dst = args.run_dir / "calibration" / "fresh"
        dst.mkdir(parents=True, exist_ok=True)
        (dst / f"summary{args.first_draw}.json").write_text(json.dumps(out, indent=1))
        print(json.dumps({k: v for k, v in out.items() if k != "draws"}, indent=1))
        return
    try:
        for k in range(args.first_draw, args.first_draw + args.draws):
            g = _phase(
                args.run_dir,
                {**base, "null_draw": k, "controls": ["null"]},
                f"calibration/null{k}.json",
                engine,
            )
            n = g["controls"]["null"]
            out["null"].append({"draw": k, "diff_bpb": n["diff_bpb"], "contains_1": n["contains_1"]})
            print(
                f"null draw {k}: {n['diff_bpb']['value']:+.4f} [{n['diff_bpb']['ci_low']:+.4f}, "
                f"{n['diff_bpb']['ci_high']:+.4f}] contains 1: {n['contains_1']}",
                flush=True,
            )
        for p in args.doses:
            g = _phase(
                args.run_dir,
                {**base, "planted": p, "controls": ["planted"]},
                f"calibration/planted{p:g}.json",
                engine,
            )
            c = g["controls"]["planted"]
            out["planted"].append(
                {
                    "fraction": p,
                    "diff_bpb": c["diff_bpb"],
                    "multiplier": c["multiplier"],
                    "called_worse": c["called_worse"],
                }
            )
            print(
                f"planted {p:g}: {c['diff_bpb']['value']:+.4f} bpb, called worse: {c['called_worse']}",
                flush=True,
            )
    finally:
        engine.shutdown()
    covered = [d["contains_1"] for d in out["null"]]
    out["null_contains_1"] = f"{sum(covered)} of {len(covered)}"
    mults = [d["multiplier"]["value"] for d in out["planted"]]
    out["planted_ordered"] = all(a >= b for a, b in itertools.pairwise(mults))
    out["smallest_dose_called"] = min(
        (d["fraction"] for d in out["planted"] if d["called_worse"]), default=None
    )
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    (args.run_dir / "calibration").mkdir(exist_ok=True)
    (args.run_dir / "calibration" / "summary.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k not in ("null", "planted")}, indent=1))


if __name__ == "__main__":
    main()
