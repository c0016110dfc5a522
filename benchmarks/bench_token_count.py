"""The accounting's whitespace-word count: the numpy byte count (``curate.runtime.tokens.whitespace_word_counts``)
against polars' ``str.count_matches(r"\\S+")`` on the web corpora, interleaved, one thread, CPU seconds;
the two totals must be equal.

    POLARS_MAX_THREADS=1 .venv/bin/python benchmarks/bench_token_count.py
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl
import pyarrow as pa

from benchmarks._common import CORPORA, machine
from curate.runtime.tokens import whitespace_word_counts


def regex_counts(a: pa.Array) -> np.ndarray:
    return pl.Series(a).fill_null("").str.count_matches(r"\S+").to_numpy()


def main() -> None:
    print(machine())
    texts: list[str] = []
    for f in sorted((CORPORA / "web").glob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            texts += [json.loads(line).get("text") or "" for line in fh]
    chunks = [pa.array(texts[i : i + 1800]) for i in range(0, len(texts), 1800)]
    mb = sum(c.nbytes for c in chunks) / 1e6
    totals = set()
    for rep in range(3):
        for name, count in (("regex", regex_counts), ("numpy", whitespace_word_counts)):
            t = time.process_time()
            n = sum(int(count(c).sum()) for c in chunks)
            dt = time.process_time() - t
            totals.add(n)
            print(f"rep {rep} {name}: {n:,} words, {dt:.3f} CPU-s, {mb / dt:.0f} MB/s")
    print("totals equal" if len(totals) == 1 else f"TOTALS DIFFER: {totals}")


if __name__ == "__main__":
    main()
