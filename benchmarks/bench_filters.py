"""Our four heuristic filters vs datatrove 0.10's on the same documents, in one process, one core each.

    python benchmarks/bench_filters.py [--docs-per-file N] [--batch-size B]

Documents: the first N (default 500) of every ``../shared/corpora/web/*.jsonl.gz`` file. Ours run as the
``filter:`` shorthand would (scorer + reference rules), each batch of B rows through all four in turn;
datatrove's run their ``filter(doc)``, each document through all four in turn. Every filter sees every
document on both sides, and each side reuses its word split between filters the way its own pipeline
does (our per-batch memo; datatrove's per-text lru_cache), timed per filter. Both warm up once
(spaCy, regexes) on 56 other documents (the next 7 of each file), outside the timing, so no measured
document is in any cache before it is measured. Threads are pinned to one
(POLARS_MAX_THREADS=1, RAYON_NUM_THREADS=1) so "per core" holds for polars too. The process runs with
the allocator settings of a ``curate`` process (``curate.runtime.allocator``), which both sides share;
``CURATE_ALLOCATOR=default`` keeps the libraries' defaults. Our filters take the native module's paths
(curate/filters/_native.c) where it is built; ``CURATE_NATIVE=0`` measures their polars and numpy paths
(the runs recorded before the native module, 2026-12-05).

``--ceiling`` runs our side a second time on the same documents after the first, the word memo cleared
but every chunk's spaCy tokens now in the per-process cache: what our filters cost with spaCy's share at
zero, so the ratio our code could reach without replacing spaCy's tokenizer.

``--clock cpu`` (default) times the CPU seconds of this process (``time.process_time``: every thread,
polars' included), so neighbours on a shared machine do not stretch either side; ``--clock wall`` times
wall seconds (``time.perf_counter``) as the runs before 2026-12-03 did.
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import glob
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The allocator settings a `curate` process runs with (curate/runtime/allocator.py: freed memory kept for the next
# batch instead of page-faulted back), set before numpy, polars and pyarrow load, as the CLI sets them;
# both sides share this process. CURATE_ALLOCATOR=default keeps the libraries' defaults (the runs
# recorded before these settings, 2026-12-05).
from curate.runtime.allocator import configure  # noqa: E402

configure()
ALLOCATOR = os.environ.get("CURATE_ALLOCATOR", "tuned") != "default"

import pyarrow as pa  # noqa: E402

from curate.core.select import Select  # noqa: E402

WARM_PER_FILE = 7
CLOCK = time.process_time  # --clock: process CPU seconds (default) or wall seconds


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


def run_ours(stages: list, table: pa.Table, batch: int, *, isolated: bool = False) -> list[float]:
    """Seconds per stage. Each batch goes through all stages in turn, as in a pipeline that scores a batch
    with all four, so later stages may reuse the batch's word split (``curate.filters.words`` memo);
    ``isolated`` forgets that split before every stage."""
    from curate.filters.words import clear_word_memo

    times = [0.0] * len(stages)
    rules = [stage.reference_rules() for stage in stages]
    for start in range(0, table.num_rows, batch):
        part = table.slice(start, batch)
        for i, stage in enumerate(stages):
            if isolated:
                clear_word_memo()
            t0 = CLOCK()
            out = stage.process(part)
            Select(rules=rules[i], prefix=stage.label).process(out)
            times[i] += CLOCK() - t0
    return times


def run_datatrove(filters: list, texts: list[str], *, isolated: bool = False) -> list[float]:
    """Seconds per filter. Each document goes through all filters in turn, as in datatrove's pipeline, so
    later filters reuse its word split (datatrove's per-text ``lru_cache(5)`` in ``split_into_parts``);
    ``isolated`` runs each filter over all documents before the next, so nothing is reused. Each filter
    gets its own Document (C4QualityFilter rewrites ``doc.text``), all with the same text."""
    from datatrove.data import Document

    times = [0.0] * len(filters)
    order = (
        [(j, i) for j in range(len(filters)) for i in range(len(texts))]
        if isolated
        else [(j, i) for i in range(len(texts)) for j in range(len(filters))]
    )
    for j, i in order:
        doc = Document(text=texts[i], id=str(i))
        t0 = CLOCK()
        filters[j].filter(doc)
        times[j] += CLOCK() - t0
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs-per-file", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=4096)
    ap.add_argument(
        "--isolated",
        action="store_true",
        help="no word split shared between filters on either side (each filter alone)",
    )
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="also run ours again with spaCy's chunk tokens cached (the ratio without spaCy's cost)",
    )
    ap.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="CPU seconds of the process or wall"
    )
    ap.add_argument(
        "--ours-only",
        action="store_true",
        help="skip datatrove (its columns print nan): our side's seconds alone, e.g. to compare paths",
    )
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    import datatrove.pipeline.filters as dtf

    from curate.filters import native as N
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
    ours_stages = [ours for _, ours, _ in pairs]
    refs = [ref for _, _, ref in pairs]
    for ours in ours_stages:
        ours.ensure_setup()
    # Warm-up (spaCy, regexes) on documents that are not measured.
    run_ours(ours_stages, warm, args.batch_size)
    if not args.ours_only:
        run_datatrove(refs, warm_texts)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}; pinned to 1 core; clock {args.clock}; native module "
        + ("on" if N.enabled() else "off")
        + "; allocator "
        + ("curate's" if ALLOCATOR else "the libraries' defaults")
        + "; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(
        f"documents: {n} ({mb:.1f} MB), first {args.docs_per_file} of each web corpus file; "
        f"warm-up on the next {WARM_PER_FILE} of each; "
        + ("isolated (no shared word split)" if args.isolated else "word split shared between filters")
    )
    t_ours = run_ours(ours_stages, table, args.batch_size, isolated=args.isolated)
    t_dt = (
        [float("nan")] * len(refs) if args.ours_only else run_datatrove(refs, texts, isolated=args.isolated)
    )
    print(
        f"{'filter':20s} {'ours docs/s':>12s} {'ours MB/s':>10s} {'dt docs/s':>10s} {'dt MB/s':>8s} {'ratio':>7s}"
    )
    rows = [(name, t_o, t_d) for (name, _, _), t_o, t_d in zip(pairs, t_ours, t_dt, strict=True)]
    rows.append(("all four", sum(t_ours), sum(t_dt)))
    for name, t_o, t_d in rows:
        print(
            f"{name:20s} {n / t_o:12.0f} {mb / t_o:10.2f} {n / t_d:10.0f} {mb / t_d:8.3f} {t_d / t_o:6.1f}x"
        )
    if args.ceiling:
        from curate.filters.words import clear_word_memo

        clear_word_memo()
        t_again = run_ours(ours_stages, table, args.batch_size, isolated=args.isolated)
        print("ours again, every chunk's spaCy tokens cached (spaCy's share at zero):")
        again = [(name, t_o, t_d) for (name, _, _), t_o, t_d in zip(pairs, t_again, t_dt, strict=True)]
        again.append(("all four", sum(t_again), sum(t_dt)))
        for name, t_o, t_d in again:
            print(f"{name:20s} {n / t_o:12.0f} {mb / t_o:10.2f} {'':>10s} {'':>8s} {t_d / t_o:6.1f}x")
    print("load average at the end " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
