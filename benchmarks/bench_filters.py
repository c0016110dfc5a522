"""Our four heuristic filters vs datatrove 0.10's on the same documents, in one process, one core each.

    python benchmarks/bench_filters.py [--docs-per-file N] [--batch-size B]

Documents: the first N (default 500) of every ``../shared/corpora/web/*.jsonl.gz`` file. Ours run as the
``filter:`` shorthand would (scorer + reference rules) on batches of B rows; datatrove's run their
``filter(doc)`` over Document objects, each filter on every document (datatrove's per-text word cache
is kept warm between its filters only within one document, as in its pipeline). Both warm up once
(spaCy, regexes) on 56 other documents (the next 7 of each file), outside the timing, so no measured
document is in any cache before it is measured. Threads are pinned to one
(POLARS_MAX_THREADS=1, RAYON_NUM_THREADS=1) so "per core" holds for polars too.
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import glob  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.select import Select  # noqa: E402

WARM_PER_FILE = 7


def load(n_per_file: int, warm_per_file: int = 0) -> tuple[pa.Table, pa.Table]:
    """The measured documents (first ``n_per_file`` of each file) and the warm-up documents (the next
    ``warm_per_file`` of each file, so warm-up never sees a measured document)."""
    from curate.io.readers import read_table

    files = sorted(glob.glob(str(ROOT.parent / "shared" / "corpora" / "web" / "*.jsonl.gz")))
    if not files:
        sys.exit("needs ../shared/corpora/web/*.jsonl.gz")
    measured, warm = [], []
    for f in files:
        t = read_table(f, limit=n_per_file + warm_per_file).select(["id", "text", "source"])
        measured.append(t.slice(0, n_per_file))
        warm.append(t.slice(n_per_file))
    return pa.concat_tables(measured), pa.concat_tables(warm)


def run_ours(stages: list, table: pa.Table, batch: int) -> None:
    for stage in stages:
        rules = stage.reference_rules()
        for start in range(0, table.num_rows, batch):
            part = stage.process(table.slice(start, batch))
            Select(rules=rules, prefix=stage.label).process(part)


def run_datatrove(filters: list, texts: list[str]) -> None:
    from datatrove.data import Document

    for f in filters:
        for i, text in enumerate(texts):
            f.filter(Document(text=text, id=str(i)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs-per-file", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=4096)
    args = ap.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    import datatrove.pipeline.filters as dtf

    from curate.filters.c4 import C4Quality
    from curate.filters.fineweb import FineWebQuality
    from curate.filters.gopher_quality import GopherQuality
    from curate.filters.gopher_repetition import GopherRepetition

    table, warm = load(args.docs_per_file, WARM_PER_FILE)
    texts = table.column("text").to_pylist()
    warm_texts = warm.column("text").to_pylist()
    n, mb = len(texts), sum(len(t.encode()) for t in texts) / 1e6
    pairs = [
        ("gopher_quality", GopherQuality(), dtf.GopherQualityFilter()),
        ("gopher_repetition", GopherRepetition(), dtf.GopherRepetitionFilter()),
        ("c4_quality", C4Quality(), dtf.C4QualityFilter()),
        ("fineweb_quality", FineWebQuality(), dtf.FineWebQualityFilter()),
    ]
    for _, ours, ref in pairs:  # warm-up (spaCy, regexes) on documents that are not measured
        ours.ensure_setup()
        run_ours([ours], warm, args.batch_size)
        run_datatrove([ref], warm_texts)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}; pinned to 1 core"
    )
    print(
        f"documents: {n} ({mb:.1f} MB), first {args.docs_per_file} of each web corpus file; "
        f"warm-up on the next {WARM_PER_FILE} of each"
    )
    print(
        f"{'filter':20s} {'ours docs/s':>12s} {'ours MB/s':>10s} {'dt docs/s':>10s} {'dt MB/s':>8s} {'ratio':>7s}"
    )
    tot_o = tot_d = 0.0
    for name, ours, ref in pairs:
        t0 = time.perf_counter()
        run_ours([ours], table, args.batch_size)
        t_o = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_datatrove([ref], texts)
        t_d = time.perf_counter() - t0
        tot_o += t_o
        tot_d += t_d
        print(
            f"{name:20s} {n / t_o:12.0f} {mb / t_o:10.2f} {n / t_d:10.0f} {mb / t_d:8.3f} {t_d / t_o:6.1f}x"
        )
    print(
        f"{'all four':20s} {n / tot_o:12.0f} {mb / tot_o:10.2f} {n / tot_d:10.0f} {mb / tot_d:8.3f} "
        f"{tot_d / tot_o:6.1f}x"
    )


if __name__ == "__main__":
    main()
