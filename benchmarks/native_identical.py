"""Our four heuristic filters' scores with and without the native module, on the whole web corpus.

    python benchmarks/native_identical.py [--docs-per-file N]

Scores every 4,096-document batch of the first N (default: all) documents of each
``../shared/corpora/web/*.jsonl.gz`` file with gopher_quality, gopher_repetition, c4_quality and
fineweb_quality, once by the native module (curate/filters/_native.c) and once by the polars and numpy
paths (``CURATE_NATIVE=0``), and compares every score column cell by cell (NaN equal to NaN). Exits 1 when
any cell differs. The fast test on 960 documents is tests/filters/test_native.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pyarrow as pa  # noqa: E402
from bench_filters import load  # noqa: E402

from curate.filters import native as N  # noqa: E402
from curate.filters import words as W  # noqa: E402
from curate.filters.c4 import C4Quality  # noqa: E402
from curate.filters.fineweb import FineWebQuality  # noqa: E402
from curate.filters.gopher_quality import GopherQuality  # noqa: E402
from curate.filters.gopher_repetition import GopherRepetition  # noqa: E402


def cells(t: pa.Table) -> dict[str, list]:
    return {c: ["nan" if v != v else v for v in t.column(c).to_pylist()] for c in t.column_names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs-per-file", type=int, default=10**9)
    args = ap.parse_args()
    if not N.built():
        sys.exit("the native module is not built (pip install -e .)")
    table, _ = load(args.docs_per_file)
    stages = [GopherQuality(), GopherRepetition(), C4Quality(), FineWebQuality()]
    scored: dict[str, list[list[pa.Table]]] = {}
    for native in ("1", "0"):
        os.environ[N.NATIVE_ENV] = native
        W.clear_word_memo()
        scored[native] = [
            [stage.process(table.slice(start, 4096)) for stage in stages]
            for start in range(0, table.num_rows, 4096)
        ]
    differing: dict[str, int] = {}
    n_cells = 0
    for on_batch, off_batch in zip(scored["1"], scored["0"], strict=True):
        for on, off in zip(on_batch, off_batch, strict=True):
            a, b = cells(on), cells(off)
            assert a.keys() == b.keys()
            for c in a:
                n_cells += len(a[c])
                differing[c] = differing.get(c, 0) + sum(x != y for x, y in zip(a[c], b[c], strict=True))
    bad = {c: k for c, k in differing.items() if k}
    print(f"documents {table.num_rows}; cells compared {n_cells:,}; differing {sum(bad.values())}")
    for c, k in sorted(bad.items()):
        print(f"  {c}: {k}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
