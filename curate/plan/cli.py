"""``curate plan``: what a pipeline costs. Without ``--bytes``: the run as it stands, on this machine (the
curation and the proxy phase's CPU-seconds and wall time, :mod:`curate.plan.estimate`, what ``curate run``
prints before it starts). With ``--bytes``: projected wall time, shuffle bytes, memory and bottleneck at a
corpus size (:mod:`curate.plan.model`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EXAMPLE = """example:
  curate plan pipelines/demo.yaml                                                  # this run, on this machine
  curate plan pipelines/web.yaml --docs 1e9 --bytes 1e12 --nodes 16 --cores 32
  curate plan pipelines/web.yaml --docs 100e6 --bytes 100e9 --nodes 1 --cores 64 --dup-rate 0.2
  curate plan pipelines/web.yaml --bytes 1e9 --cores 2 --from-run runs/web_pilot   # calibrated by a pilot
  curate plan pipelines/web.yaml --docs 1e6 --bytes 1e9 --engine inline              # one process, one core

Stage rates are per-core throughputs measured by this repository's benchmarks (BENCHMARKS.md); the proxy
trainer's speed is measured on this machine once (cached in ~/.cache/curate/speed.json); see docs/scale.md
for what the model assumes and how far it has been checked.
"""


def _number(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1e9 or 5000000, not {text!r}") from None


def _plan(args: argparse.Namespace) -> int:
    from curate.pipeline.config import load_pipeline
    from curate.plan.model import format_plan, pilot_from_manifest, pipeline_stage_names, project

    cfg = load_pipeline(args.pipeline, list(args.set or []))
    if args.bytes is None:
        from curate.plan.estimate import estimate_run, format_estimate

        print(format_estimate(estimate_run(cfg, engine=args.engine)))
        return 0
    names, driver_components = pipeline_stage_names(cfg)
    engine = args.engine or cfg.engine.kind
    pilot = None
    if args.from_run:
        path = Path(args.from_run) / "manifest.json"
        if not path.exists():
            raise SystemExit(
                f"curate plan: --from-run {args.from_run}: no manifest.json (not a finished run)"
            )
        pilot = pilot_from_manifest(json.loads(path.read_text()), names, where=str(args.from_run))
    plan = project(
        names,
        docs=args.docs,
        nbytes=args.bytes,
        nodes=args.nodes,
        cores=args.cores,
        dup_rate=args.dup_rate,
        driver_components=driver_components,
        pilot=pilot,
        engine=engine,
    )
    print(format_plan(plan))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="project wall time, shuffle bytes, memory and bottleneck at a corpus size",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("pipeline", help="pipeline YAML")
    p.add_argument(
        "--docs", type=_number, help="documents in the corpus (default: estimated from --bytes, and said so)"
    )
    p.add_argument(
        "--bytes",
        type=_number,
        help="bytes of document text to project to (without it: the pipeline's own input, on this machine)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config key by dotted path, as curate run",
    )
    p.add_argument("--nodes", type=_number, default=1, help="worker nodes (default 1)")
    p.add_argument("--cores", type=_number, default=8, help="CPU cores per node (default 8)")
    p.add_argument(
        "--dup-rate", type=float, default=0.1, help="share of documents in near-duplicate clusters (0.1)"
    )
    p.add_argument(
        "--engine",
        choices=("ray", "inline"),
        help="the engine the run will use (default: the pipeline's engine.kind, else ray); inline is one "
        "process on one core, its dedup stages without a shuffle",
    )
    p.add_argument(
        "--from-run",
        help="a finished run of the same pipeline (a smaller pilot): use its per-stage rates and the "
        "share of the text each stage saw instead of the built-in rates",
    )
    p.set_defaults(func=_plan)
