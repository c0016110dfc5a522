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
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any


def _phase(run_dir: Path, section: dict[str, Any], report: str, engine: Any) -> dict[str, Any]:
    from curate.proxy.config import parse_section
    from curate.proxy.phase import run_phase
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--first-draw", type=int, default=0)
    ap.add_argument("--doses", type=float, nargs="*", default=[0.1, 0.2, 0.4])
    ap.add_argument("--engine", default="inline", choices=["inline", "ray"])
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a proxy key as `curate proxy --set` does (e.g. the tokenizer the run was measured with)",
    )
    args = ap.parse_args()

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
