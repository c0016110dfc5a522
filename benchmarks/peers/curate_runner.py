"""Our side of ``bench_peers.py``: one stage kind through ``curate.run`` (the project's API), inline engine,
with the process settings the CLI gives ``curate run`` (``curate.runtime.allocator.configure``, before numpy loads).

    PYTHONPATH=. .venv/bin/python benchmarks/peers/curate_runner.py STAGE IN.jsonl OUTDIR

Writes ``OUTDIR/kept.txt`` (survivor ids, one a line), ``OUTDIR/reasons.json`` (id -> our reject reason)
and ``OUTDIR/result.json`` (``work_s``: wall seconds of the run after imports), as ``_protocol.py`` says. STAGE is one
of ``bench_peers.STAGES``; the pipeline for each is below, with the parameters of ``pipelines/web.yaml``.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

from curate.runtime.allocator import configure

configure()  # the process settings `curate run` has (allocators, idle BLAS threads), before numpy/pyarrow load

import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

import curate  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _protocol import Timed, write_reasons, write_result  # noqa: E402

# Imported here so that import time is not work, as every peer's runner imports its tool first: the modules a
# run loads lazily (the report imports matplotlib, ~8 s wall at load 30). Models and tokenizers (spaCy for
# gopher_repetition_v1, fastText) still load inside the timed work, as they do for the peers.
for _module in (
    "curate.pipeline.config",
    "curate.runtime.runner",
    "curate.io.readers",
    "curate.filters",
    "curate.filters.c4",
    "curate.filters.fineweb",
    "curate.filters.gopher_quality",
    "curate.filters.gopher_repetition",
    "curate.filters.lang",
    "curate.filters.normalize",
    "curate.filters.url",
    "curate.dedup.exact",
    "curate.dedup.minhash",
    "curate.report.phase",
    "curate.export.exporter",
    "curate.export.formats",  # every format's writer (parquet, hf_disk, megatron, memmap)
    "curate.export.plan",
    "curate.export.tokenize",
    "curate.targeting.config",
    "curate.targeting.disjoint",
    "curate.targeting.fitted",
    "curate.targeting.prepare",
    "pandas",  # pyarrow imports it on the first pa.array(), if installed (it is, for the proxy phases)
):
    importlib.import_module(_module)


HEURISTICS = [
    {"filter": "gopher_repetition_v1"},
    {"filter": "gopher_quality_v1"},
    {"filter": "c4_quality_v1"},
    {"filter": "fineweb_quality_v1"},
]
LANGID = [{"filter": "language_v1", "params": {"languages": ["en"], "threshold": 0.65}}]
PIPELINES: dict[str, list[dict]] = {
    # "read" is reading alone, as the peers' read -> write: no stage (the input is checked, quarantined
    # where bad, counted and written as Parquet). It once ran normalize_v1 as well, which no peer's read
    # does (~40% of our CPU there).
    "read": [],
    "exact": [{"dedup": "exact_dedup_v1"}],
    "minhash": [{"dedup": "minhash_dedup_v1"}],
    "heuristics": HEURISTICS,
    "langid": LANGID,
    "recipe": None,  # pipelines/web.yaml's own stage list
}


def stages_for(stage: str, root: Path) -> list[dict]:
    spec = PIPELINES[stage]
    if spec is None:
        with open(root / "pipelines" / "web.yaml") as f:
            return yaml.safe_load(f)["stages"]
    return spec


def main(argv: list[str]) -> int:
    stage, src, out = argv[0], argv[1], Path(argv[2])
    root = Path(__file__).resolve().parents[2]
    out.mkdir(parents=True, exist_ok=True)
    pipe = {
        "name": f"peers_{stage}",
        "input": {"path": str(Path(src).resolve()), "format": "jsonl"},
        "stages": stages_for(stage, root),
        "engine": {"kind": "inline"},
        "allow_empty": True,
    }
    yml = out / "pipeline.yaml"
    yml.write_text(yaml.safe_dump(pipe, sort_keys=False))
    run = out / "run"
    if run.exists():
        shutil.rmtree(run)
    with Timed(out) as t:
        curate.run(yml, output=run, engine="inline", phases=False)
        kept = [
            i
            for p in sorted((run / "kept").glob("*.parquet"))
            for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()
        ]
    reasons: dict[str, str] = {}
    for p in sorted((run / "rejected").glob("*.parquet")):
        rej = pq.read_table(p, columns=["id", "reason"])
        reasons.update(zip(rej.column("id").to_pylist(), rej.column("reason").to_pylist(), strict=True))
    write_reasons(out, reasons)
    write_result(out, kept, t.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
