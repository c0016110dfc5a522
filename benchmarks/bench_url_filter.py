"""url_filter_v1's per-core throughput (MB of text per CPU-second) for the capacity model (curate plan).

Reads every document that has a URL from ../shared/corpora/web, runs the stage on parts of 2,000
documents in this process and prints docs, text bytes, CPU seconds and MB per CPU-second:

    .venv/bin/python benchmarks/bench_url_filter.py

Measured 2026-12-03 on the 2-core shared machine: 1,670 documents, 5.08 MB, 0.056-0.065 CPU-s,
78-90 MB/CPU-s (curate/plan/model.py uses the lower, 78.1).
"""

from __future__ import annotations

import glob
import gzip
import json
import time
from pathlib import Path

import pyarrow as pa

from curate.core import schema
from curate.core.registry import STAGES

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "web"


def main() -> None:
    rows = []
    for f in sorted(glob.glob(str(CORPUS / "*.jsonl.gz"))):
        with gzip.open(f, "rt") as fh:
            rows += [d for d in map(json.loads, fh) if d.get("url")]
    table = pa.table(
        {
            "id": [str(i) for i in range(len(rows))],
            "text": [r.get("text", "") for r in rows],
            "source": ["web"] * len(rows),
            "url": [r["url"] for r in rows],
        }
    )
    stage = STAGES.get("url_filter_v1")()
    stage.ensure_setup()
    stage.process(table.slice(0, 100))  # warm up
    c0 = time.process_time()
    for i in range(0, table.num_rows, 2000):
        stage.process(table.slice(i, 2000))
    cpu = time.process_time() - c0
    nbytes = schema.text_bytes(table)
    print(
        f"docs {table.num_rows:,} text {nbytes / 1e6:.2f} MB cpu {cpu:.3f} s -> {nbytes / 1e6 / cpu:.1f} MB/cpu-s"
    )


if __name__ == "__main__":
    main()
