"""Foundation throughput: read + normalize + exact dedup + write over ../shared/corpora/web/*.jsonl.gz.

Runs the same pipeline on the inline engine (one process, one core) and on the embedded Ray engine
(all cores), and reports docs/s, MB/s (UTF-8 text read) and the peak RSS of the whole process tree.

    .venv/bin/python benchmarks/bench_pipeline.py [--glob '../shared/corpora/web/*.jsonl.gz']
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import CORPORA, PeakMemory, machine
from curate.config import parse_pipeline
from curate.engine import make_engine
from curate.runner import run_pipeline

PIPELINE = """
name: bench_foundation
input: {{path: '{glob}', format: jsonl}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default=str(CORPORA / "web" / "*.jsonl.gz"))
    ap.add_argument("--engines", default="inline,ray")
    args = ap.parse_args()
    if not list(Path(args.glob).parent.glob(Path(args.glob).name)):
        print(f"skip: no files match {args.glob} (../shared/corpora absent)")
        return 0
    cfg = parse_pipeline(PIPELINE.format(glob=args.glob))
    rows = []
    for kind in args.engines.split(","):
        out = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
        with PeakMemory() as mem:
            engine = make_engine(kind, progress=False)
            t0 = time.perf_counter()
            m = run_pipeline(cfg, out / "run", engine=engine, phases=False)
            wall = time.perf_counter() - t0
            engine.shutdown()
        read = next(s for s in m["stages"] if s["name"] == "read")
        docs, mb = read["docs_in"], read["bytes_out"] / 1e6
        rows.append(
            {
                "engine": kind,
                "workers": m["engine"]["num_workers"],
                "docs": docs,
                "MB": round(mb, 1),
                "wall_s": round(wall, 2),
                "docs_per_s": round(docs / wall),
                "MB_per_s": round(mb / wall, 2),
                "peak_rss_MiB": round(mem.peak / 2**20),
                "kept": m["accounting"]["kept"],
                "exact_duplicates": m["removed_by_reason"].get("exact_dedup_v1:duplicate", 0),
            }
        )
        shutil.rmtree(out, ignore_errors=True)
    print(f"machine: {machine()}")
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
