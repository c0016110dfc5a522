"""When data is the limit, measured: the data-limited arm (``proxy.data_limited``) on a finished run.

One measurement on fresh seeds with the run's proxy settings, fixed seeds (no sequential stopping) and the
null control: every recipe, raw's curve, and the arm (raw's per-seed pool of ``T / k`` tokens, each
recipe's share of it, the arm's null) at each ``--k``, with raw's pool at each ``--repetition`` epoch count
for the repetition curve. It writes the ``data_limited`` list (each entry with its ``k``, recipe,
``diff_bpb`` interval and per-seed differences), the ``repetition_curve`` and, beside them, what ``yield x
multiplier`` says of each recipe, with the date, commit, CPU, load and command. Resumable: finished runs
(under ``RUN/proxy/data_limited/<tag>/``) are reused.

    python benchmarks/data_limited.py runs/demo --point demo --seeds 6 --first-seed 5000 \\
        --pipeline pipelines/demo.yaml --out benchmarks/results/data_limited-demo.json
    python benchmarks/data_limited.py runs/web --point web --seeds 6 --first-seed 5100 \\
        --pipeline pipelines/goodput_trust.yaml --out benchmarks/results/data_limited-web.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository's root

from benchmarks.gate_draws import _commit, _cpu_name, save


def section_for(
    section: dict[str, Any], seeds: list[int], k: list[float], repetition: list[float]
) -> dict[str, Any]:
    """The run's proxy settings on ``seeds``, fixed (no sequential stopping), with the null control and
    the data-limited arm; no ladder, search or mixture search."""
    out = {
        key: v for key, v in section.items() if key not in ("sequential", "ladder", "search", "mix", "ablate")
    }
    out.update(
        {
            "seeds": list(seeds),
            "controls": ["null"],
            "data_limited": {"k": list(k), "repetition": list(repetition)},
        }
    )
    return out


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """What the results file keeps of one measurement's ``goodput.json``."""
    recipes = {
        r: {
            "role": v["role"],
            "yield": v["yield"],
            "multiplier": v["multiplier"],
            "goodput_trained_once": v["goodput"],
            "per_seed_diff": v["paired"]["per_seed_diff"],
            "epochs_at_T": v["epochs_at_T"],
        }
        for r, v in report["recipes"].items()
    }
    null = report["controls"].get("null") or {}
    return {
        "recipes": recipes,
        "null": {k: null.get(k) for k in ("diff_bpb", "passed", "equivalence", "message")},
        "verdict": report["verdict"]["sentence"],
        "data_limited": report.get("data_limited") or [],
        "repetition_curve": report.get("repetition_curve") or {},
        "baseline_curve": report["baseline_curve"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a finished run directory (kept/, rejected/, manifest.json)")
    ap.add_argument("--point", required=True, help="the point's name in the output (demo, web)")
    ap.add_argument("--seeds", type=int, required=True)
    ap.add_argument(
        "--first-seed", type=int, required=True, help="fresh seeds: no setting was chosen on them"
    )
    ap.add_argument("--k", type=float, nargs="+", default=[1.0, 4.0])
    ap.add_argument("--repetition", type=float, nargs="*", default=[1.0, 2.0, 4.0, 8.0, 16.0])
    ap.add_argument(
        "--pipeline",
        type=Path,
        help="take the proxy settings from this pipeline file (default: the run's own)",
    )
    ap.add_argument("--engine", default="ray", choices=["ray", "inline"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    from curate.core.engine import make_engine
    from curate.proxy.design.measure import Experiment, measure
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext, load_manifest

    manifest = load_manifest(args.run)
    config = manifest.get("config") or {}
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if args.pipeline:
        import yaml

        written = (yaml.safe_load(args.pipeline.read_text()) or {}).get("proxy") or {}
    else:
        written = config.get("proxy") or {}
    section = section_for(dict(written), seeds, args.k, args.repetition)
    tag = f"s{seeds[0]}-{len(seeds)}"
    engine = make_engine(args.engine, progress=True)
    t0, load0 = time.process_time(), os.getloadavg()[0]
    try:
        ctx = RunContext(
            run_dir=args.run,
            config=config,
            engine=engine,
            manifest=manifest,
            section=None,
            pipeline_path=manifest.get("pipeline"),
        )
        m = measure(
            ctx,
            Experiment(
                parse_section(section),
                report=f"proxy/data_limited/{tag}.json",
                runs_dir=f"data_limited/{tag}",
            ),
        )
    finally:
        engine.shutdown()
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.point] = {
        "date": datetime.date.today().isoformat(),
        "commit": _commit(),
        "cpu": _cpu_name(),
        "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "command": "python benchmarks/data_limited.py " + " ".join(sys.argv[1:]),
        "run": str(args.run),
        "pipeline": str(args.pipeline) if args.pipeline else manifest.get("pipeline"),
        "model": section.get("model"),
        "budget": section.get("budget"),
        "seeds": seeds,
        "k": args.k,
        "repetition": args.repetition,
        "runs": len(m.finished.items),
        "device_s": round(sum(x["device_s"] for x in m.finished.results), 1),
        "driver_cpu_s": round(time.process_time() - t0, 1),
        **figures(m.report),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save(args.out, results)
    for e in results[args.point]["data_limited"]:
        print(e.get("sentence") or e.get("message"))
    print(results[args.point]["repetition_curve"].get("sentence", ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
