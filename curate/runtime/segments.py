"""A pipeline cut into segments, and the worker that runs one segment over one unit of work.

Stages are cut into *segments* at every global stage. Segment 0 reads input shards; each later segment
first applies the previous global stage's state (its :attr:`Segment.applier`), then its row stages, to
every part the segment before wrote. After a segment, its :attr:`Segment.collector` collects a small
key table from every part (:func:`collect_keys`), which the runner reduces once.

Every unit of work writes its parts atomically and then a ``done-<unit>.json`` marker listing the
files' sizes, so a rerun can tell finished units from killed ones (:meth:`curate.runtime.runner.Runner._committed`).
"""

from __future__ import annotations

import contextlib
import pickle
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.resources import Resources
from curate.core.stage import GlobalStage, RowStage, Stage
from curate.io import shardcache
from curate.io.sources import DETAIL, Shard
from curate.io.storage import Location, read_parquet, write_parquet
from curate.runtime.tokens import TokenCounter

ORDER = schema.ORDER  # int64 part_index << 32 | row, a global input order given to global stages
READ_STAGE = "read"


@dataclass
class Segment:
    """Row stages run together on every part, between two global stages."""

    index: int
    applier: GlobalStage | None = None  # the global stage whose state is applied first (None: segment 0)
    rows: list[RowStage] = field(default_factory=list)
    collector: GlobalStage | None = None  # the global stage that collects keys after it (None at the end)
    # A stage that redacts personal data (pii_v1 in redact mode), possibly of a later segment, and the
    # labels of the stages before it (the read stage included): rows those reject are redacted by it
    # before they are written, so no value it detects reaches rejected/ unredacted (one it misses does:
    # its recall is measured, BENCHMARKS.md).
    scrubber: RowStage | None = None
    scrub_before: frozenset[str] = frozenset()

    def stages(self) -> list[Stage]:
        """The stages that run in this segment, in order (the applier first)."""
        return ([self.applier] if self.applier else []) + list(self.rows)

    def resources(self) -> Resources:
        """What one worker of this segment needs: the most any of its stages asks for."""
        stages = self.stages()
        if not stages:
            return Resources()
        return Resources(
            num_cpus=max(s.resources.num_cpus for s in stages),
            num_gpus=max(s.resources.num_gpus for s in stages),
        )


def plan_segments(stages: list[Stage]) -> list[Segment]:
    """Cut ``stages`` at every global stage."""
    segments = [Segment(0)]
    for st in stages:
        if isinstance(st, GlobalStage):
            segments[-1].collector = st
            segments.append(Segment(len(segments), applier=st))
        elif isinstance(st, RowStage):
            segments[-1].rows.append(st)
        else:
            raise TypeError(f"{st.label}: a stage is a RowStage or a GlobalStage, not {type(st).__name__}")
    scrubber = next((st for st in stages if getattr(st, "redacts_rejected", False)), None)
    if isinstance(scrubber, RowStage):
        before = frozenset([READ_STAGE, *(st.label for st in stages[: stages.index(scrubber)])])
        for seg in segments:
            seg.scrubber, seg.scrub_before = scrubber, before
    return segments


def new_stats(name: str) -> dict[str, Any]:
    """One stage's funnel row: documents, bytes and tokens in and out, removals by reason, time."""
    return {
        "name": name,
        "docs_in": 0,
        "docs_out": 0,
        "bytes_in": 0,
        "bytes_out": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "removed": {},
        "wall_s": 0.0,
        "cpu_s": 0.0,
    }


def merge_stats(into: dict[str, Any], other: dict[str, Any]) -> None:
    """Add ``other``'s counts and times to ``into`` (the same stage, another unit of work)."""
    for k in ("docs_in", "docs_out", "bytes_in", "bytes_out", "tokens_in", "tokens_out", "wall_s", "cpu_s"):
        into[k] += other.get(k, 0)
    for r, c in other["removed"].items():
        into["removed"][r] = into["removed"].get(r, 0) + c
    for k, n in other.get("counts", {}).items():  # a stage's own totals (RowStage.counters)
        into.setdefault("counts", {})[k] = into.setdefault("counts", {}).get(k, 0) + n


def value_counts(col: pa.ChunkedArray) -> tuple[list[str], list[int]]:
    """The distinct values of ``col`` and how often each occurs."""
    vc = col.value_counts()
    return vc.field(0).to_pylist(), vc.field(1).to_pylist()


def with_order(table: pa.Table, part_index: int) -> pa.Table:
    """``table`` with the ``ORDER`` column a global stage's collect and apply see."""
    order = (np.int64(part_index) << np.int64(32)) + np.arange(table.num_rows, dtype=np.int64)
    return table.append_column(ORDER, pa.array(order))


def _peel(table: pa.Table, stage_label: str) -> tuple[pa.Table, pa.Table | None, np.ndarray | None]:
    """Split rows marked in REJECT off the table, labelled with stage and reason; also the boolean mask
    of the rows kept (None when every row is kept)."""
    if schema.REJECT not in table.column_names:
        return table, None, None
    mask = pc.is_valid(table.column(schema.REJECT))
    if not pc.any(mask).as_py():
        return table.drop_columns([schema.REJECT]), None, None
    rejected = table.filter(mask)
    rejected = rejected.append_column(schema.STAGE, pa.array([stage_label] * rejected.num_rows, pa.string()))
    rejected = rejected.rename_columns(
        [schema.REASON if c == schema.REJECT else c for c in rejected.column_names]
    )
    kept = table.filter(pc.invert(mask)).drop_columns([schema.REJECT])
    return kept, rejected, ~mask.to_numpy(zero_copy_only=False)


class _RowTally:
    """UTF-8 bytes and tokens of every row of the batch in flight, counted once per distinct text.

    A stage that leaves the text as it was (every scorer and filter) is accounted from the counts of its
    input rows, filtered with the rows it keeps; a stage that rewrites text has the rows it changed counted
    again (counts are a function of the text alone). Whether the text changed is decided by comparing the
    text columns (Arrow compares buffers by pointer first, so an untouched column costs nothing), then,
    for a rewritten column, row by row."""

    def __init__(self, tokens: TokenCounter) -> None:
        self.tokens = tokens
        self.text: pa.ChunkedArray | None = None
        self.n_bytes = np.zeros(0, dtype=np.int64)
        self.n_tokens = np.zeros(0, dtype=np.int64)

    def of(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """Per-row bytes and tokens of ``table``."""
        text = table.column(schema.TEXT)
        if self.text is None or len(text) != len(self.text):
            self.text = text
            lengths = pc.binary_length(text.fill_null("")) if len(text) else pa.array([], pa.int64())
            self.n_bytes = np.asarray(lengths.to_numpy(), dtype=np.int64) if len(text) else self.n_bytes[:0]
            self.n_tokens = self.tokens.per_row(text)
        elif not text.equals(self.text):
            # The same rows, rewritten (a transform): only the rows whose text changed are counted again.
            changed = pc.fill_null(pc.not_equal(text, self.text), True)
            idx = np.flatnonzero(np.asarray(changed.to_numpy(zero_copy_only=False), dtype=bool))
            self.text = text
            if len(idx):
                rows = text.take(pa.array(idx))
                self.n_bytes = self.n_bytes.copy()
                self.n_tokens = self.n_tokens.copy()
                self.n_bytes[idx] = np.asarray(
                    pc.binary_length(rows.fill_null("")).to_numpy(), dtype=np.int64
                )
                self.n_tokens[idx] = self.tokens.per_row(rows)
        return self.n_bytes, self.n_tokens

    def keep(self, table: pa.Table, mask: np.ndarray | None) -> None:
        """``table`` holds the rows of ``mask`` (None: all) of the table last counted."""
        if mask is not None:
            self.n_bytes, self.n_tokens = self.n_bytes[mask], self.n_tokens[mask]
        self.text = table.column(schema.TEXT)


def _timed(it: Iterator[Any], s: dict[str, Any]) -> Iterator[Any]:
    """Yield from ``it``, adding the time spent producing each item (reading, decoding) to ``s``."""
    while True:
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            item = next(it)
        except StopIteration:
            return
        finally:
            s["wall_s"] += time.perf_counter() - w0
            s["cpu_s"] += time.process_time() - c0
        yield item


class SegmentWorker:
    """Built once per worker (actor): sets up the segment's stages, then processes work items."""

    def __init__(
        self,
        *,
        segment: Segment,
        source: Any,
        work: str,
        state_path: str | None,
        tokens: TokenCounter | None = None,
    ) -> None:
        self.segment = segment
        self.tokens = tokens or TokenCounter()
        self.source = source
        self.work = Location.of(work)
        self.state = None
        # Each stage's set-up (models loaded, the global stage's state read) is CPU of that stage: it is
        # added to the stage's row with the first unit this worker does.
        self.setup: dict[str, dict[str, Any]] = {}
        if segment.applier is not None:
            with self._setting_up(segment.applier.label):
                segment.applier.ensure_setup()
                # the global stage's state, in the run directory's storage (any node reads it)
                self.state = pickle.loads(Location.of(str(state_path)).read_bytes())
        for st in segment.rows:
            with self._setting_up(st.label):
                st.ensure_setup()
        if segment.scrubber is not None:
            with self._setting_up(segment.scrubber.label):
                segment.scrubber.ensure_setup()

    @contextlib.contextmanager
    def _setting_up(self, label: str) -> Iterator[None]:
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            s = self.setup.setdefault(label, new_stats(label))
            s["wall_s"] += time.perf_counter() - w0
            s["cpu_s"] += time.process_time() - c0

    def __call__(self, item: Any) -> dict[str, Any]:
        c0 = time.process_time()
        seg_dir = self.work.child(f"s{self.segment.index}")
        if self.segment.index == 0:
            shard: Shard = item
            stored = None
            if self.source.costly_read:  # the target pass's scan may have kept this shard's batches
                stored = shardcache.batches(shardcache.folder(self.work.url), shard)
            tables = self.source.read(shard) if stored is None else stored
            batches: Iterator[tuple[str, pa.Table]] = (
                (f"{shard.index:05d}-{j:05d}", t) for j, t in enumerate(tables)
            )
            unit = f"{shard.index:05d}"
        else:
            _part_index, part = item
            prev = self.work.child(f"s{self.segment.index - 1}", f"p{part}.parquet")
            batches = iter([(part, read_parquet(prev))])
            unit = part
        stats: dict[str, dict[str, Any]] = {}
        parts: list[str] = []
        files: dict[str, int] = {}  # committed by the done marker: resume checks each size
        for part, table in _timed(
            batches,
            stats.setdefault(READ_STAGE if self.segment.index == 0 else "_io", new_stats(READ_STAGE)),
        ):
            kept, rejected = self._process(table, item, stats)
            # Parts a later segment reads back (not the last segment's: they become kept/) are scratch files.
            files[f"p{part}.parquet"] = write_parquet(
                kept, seg_dir.child(f"p{part}.parquet"), scratch=self.segment.collector is not None
            )
            if rejected is not None and rejected.num_rows:
                files[f"r{part}.parquet"] = write_parquet(rejected, seg_dir.child(f"r{part}.parquet"))
            parts.append(part)
        stats.pop("_io", None)
        # The unit's CPU in no stage's row: reading a later segment's part, writing parts and the marker
        # (measured to here; the marker's own write is the little that escapes).
        io_cpu_s = time.process_time() - c0 - sum(s["cpu_s"] for s in stats.values())
        for label, s in self.setup.items():  # once per worker: its first unit carries the set-up
            merge_stats(stats.setdefault(label, new_stats(label)), s)
        self.setup = {}
        result = {
            "unit": unit,
            "parts": parts,
            "stats": stats,
            "files": files,
            "io_cpu_s": round(io_cpu_s, 4),
        }
        seg_dir.child(f"done-{unit}.json").write_json(result)
        return result

    def _process(
        self, table: pa.Table, item: Any, stats: dict[str, dict[str, Any]]
    ) -> tuple[pa.Table, pa.Table | None]:
        rejected: list[pa.Table] = []
        tally = _RowTally(self.tokens)

        def run(
            label: str, fn: Callable[[pa.Table], pa.Table], t: pa.Table, stage: RowStage | None = None
        ) -> pa.Table:
            s = stats.setdefault(label, new_stats(label))
            w0, c0 = time.perf_counter(), time.process_time()
            n_bytes, n_tokens = tally.of(t)
            s["docs_in"] += t.num_rows
            s["bytes_in"] += int(n_bytes.sum())
            s["tokens_in"] += int(n_tokens.sum())
            out = fn(t) if t.num_rows else t
            if stage is not None and out.num_rows:
                merge_stats(s, {"removed": {}, "counts": stage.counters(out)})
            if out.num_rows:
                tally.of(out)  # a stage that rewrote the text is counted again
            out, rej, kept_rows = _peel(out, label)
            tally.keep(out, kept_rows)
            if rej is not None:
                if label in self.segment.scrub_before and self.segment.scrubber is not None:
                    rej = self.segment.scrubber.scrub(rej)  # type: ignore[attr-defined]
                rejected.append(rej)
                for r, c in zip(*value_counts(rej.column(schema.REASON)), strict=True):
                    s["removed"][r] = s["removed"].get(r, 0) + c
            s["docs_out"] += out.num_rows
            s["bytes_out"] += int(tally.n_bytes.sum())
            s["tokens_out"] += int(tally.n_tokens.sum())
            s["wall_s"] += time.perf_counter() - w0
            s["cpu_s"] += time.process_time() - c0
            return out

        if self.segment.index == 0:
            table = run(READ_STAGE, lambda t: t, table)
            if DETAIL in table.column_names:
                table = table.drop_columns([DETAIL])
        if self.segment.applier is not None:
            g = self.segment.applier
            table = with_order(table, item[0])
            table = run(g.label, lambda t: g.apply(t, self.state), table)
            table = table.drop_columns([ORDER])
        for st in self.segment.rows:
            table = run(st.label, st.process, table, st)
        rej = pa.concat_tables(rejected, promote_options="permissive") if rejected else None
        if rej is not None and ORDER in rej.column_names:
            rej = rej.drop_columns([ORDER])
        return table, rej


def drop_unredacted_parts(work: Location, segments: list[Segment]) -> None:
    """After a finished run, remove the scratch parts that hold text not yet redacted: those of the
    segments before the one that runs the scrubber (pii_v1 in redact mode). Their done markers are
    rewritten without those files, so a rerun still finds every unit done and redoes nothing."""
    scrubber = segments[0].scrubber if segments else None
    if scrubber is None:
        return
    for seg in segments:
        if scrubber in seg.rows:
            break
        seg_dir = work.child(f"s{seg.index}")
        for marker in seg_dir.glob("done-*.json"):
            r = marker.read_json()
            raw = [f for f in r.get("files", {}) if f.startswith("p")]
            if raw:  # the marker first: a kill between the two leaves a unit redone, not one lost
                marker.write_json(r | {"files": {f: n for f, n in r["files"].items() if f not in raw}})
            for f in raw:
                seg_dir.child(f).remove()


def collect_keys(args: tuple[GlobalStage, str, int, str, str]) -> str:
    """One part's key table for a global stage, written to ``out`` (an engine task)."""
    stage, work, part_index, part, out = args
    stage.ensure_setup()
    table = read_parquet(Location.of(work).child(f"p{part}.parquet"))
    keys = stage.collect(with_order(table, part_index))
    # scratch: only this run reads key tables back, and their hash columns (MinHash's signatures and band
    # keys) are random 64-bit values that Parquet's dictionary encoding tries and drops: 7x the CPU of
    # writing them without (benchmarks/BENCHMARKS.md section 3)
    write_parquet(keys, Location.of(out), scratch=True)
    return out
