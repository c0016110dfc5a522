"""The report's score histograms: one per numeric score column, kept rows against rejected rows.

A histogram spans the data only: from the smallest to the largest finite value of the column, kept and
rejected together. A select threshold outside that span is named beside the chart, never stretches its
axis; a column whose values are all equal is one bin, shown as such ("all 0").

Large runs stay cheap: a column's range comes from the Parquet row-group statistics, and the counts from
one read per file of just its score columns, streamed file by file into fixed bins.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core import schema
from curate.io import runfiles

log = logging.getLogger(__name__)

# Columns of rejected/ that are bookkeeping, never scores.
NOT_SCORES = {
    schema.ID,
    schema.TEXT,
    schema.SOURCE,
    schema.STAGE,
    schema.REASON,
    schema.DUPLICATE_OF,
    "detail",
    "url",
}


@dataclass
class Threshold:
    """A select rule's bound on a score column, to mark on its histogram."""

    column: str
    kind: str  # "min", "max" or "equals"
    value: float
    stage: str


@dataclass
class Histogram:
    """Counts of one numeric score column over fixed bins, for kept rows and for rejected rows that carry it."""

    column: str
    edges: np.ndarray
    kept: np.ndarray
    rejected: np.ndarray
    n_kept: int
    n_rejected: int
    n_missing: int  # null or NaN values (kept and rejected together)
    mean_kept: float | None
    thresholds: list[Threshold] = field(default_factory=list)
    removed: int = 0  # documents the select rules on this column removed

    @property
    def lo(self) -> float:
        """The smallest finite value of the column (kept and rejected rows)."""
        return float(self.edges[0])

    @property
    def hi(self) -> float:
        """The largest finite value of the column (kept and rejected rows)."""
        return float(self.edges[-1])

    @property
    def constant(self) -> bool:
        """Whether every finite value is the same (one bin of no width)."""
        return self.lo == self.hi

    def inside(self, th: Threshold) -> bool:
        """Whether a threshold lies within the data's range (drawn as a line), not beyond it (named)."""
        return self.lo <= th.value <= self.hi


def _is_numeric(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t)) and not pa.types.is_boolean(t)


def score_columns(files: list[Path], *, limit: int = 32, always: tuple[str, ...] = ()) -> list[str]:
    """Numeric ``<stage>.<field>`` columns found in the files' schemas: ``always`` (the columns whose
    rules removed documents) first, whatever their number, then up to ``limit`` others in first-seen
    order."""
    cols: list[str] = []
    for f in files:
        for fld in runfiles.read_schema(f):
            if (
                fld.name not in NOT_SCORES
                and "." in fld.name
                and _is_numeric(fld.type)
                and fld.name not in cols
            ):
                cols.append(fld.name)
    first = [c for c in always if c in cols]
    others = [c for c in cols if c not in first]
    if len(others) > limit:
        log.info("report: showing %d of %d other score columns", limit, len(others))
    return first + others[:limit]


def _finite(col: pa.ChunkedArray) -> np.ndarray:
    a = np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    return a[np.isfinite(a)]


def _stat_ranges(pf: pq.ParquetFile, cols: list[str]) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Min/max of ``cols`` from the file's row-group statistics; the columns without usable stats."""
    meta = pf.metadata
    ranges: dict[str, tuple[float, float]] = {}
    missing: list[str] = []
    if meta.num_row_groups == 0:
        return ranges, missing
    index = {meta.row_group(0).column(j).path_in_schema: j for j in range(meta.num_columns)}
    for col in cols:
        if col not in index:
            missing.append(col)
            continue
        lo, hi, known = math.inf, -math.inf, True
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            st = rg.column(index[col]).statistics
            if st is not None and st.has_null_count and st.null_count == rg.num_rows:
                continue  # all null: nothing to range over
            if st is None or not st.has_min_max:
                known = False
                break
            lo, hi = min(lo, float(st.min)), max(hi, float(st.max))
        if lo <= hi and not (math.isfinite(lo) and math.isfinite(hi)):
            known = False  # an infinite value: the finite range comes from the values
        if not known:
            missing.append(col)
        elif lo <= hi:
            ranges[col] = (lo, hi)
    return ranges, missing


def histograms(
    kept: list[Path],
    rejected: list[Path],
    cols: list[str],
    marks: dict[str, list[Threshold]],
    *,
    bins: int = 40,
) -> list[Histogram]:
    """One histogram per column; bins span the finite kept and rejected values, and nothing else (a
    threshold beyond them does not widen them). A column of one value has one bin, ``[v, v]``.

    The range comes from the Parquet row-group statistics (read from the values only where a file has
    none, or an infinite value); the counts from one read per file of just its score columns.
    """
    lo = dict.fromkeys(cols, math.inf)
    hi = dict.fromkeys(cols, -math.inf)
    present: dict[Path, list[str]] = {}
    for f in kept + rejected:
        pf = runfiles.parquet_file(f)
        names = set(pf.schema_arrow.names)
        present[f] = [c for c in cols if c in names]
        ranges, unknown = _stat_ranges(pf, present[f])
        if unknown:
            t = pf.read(columns=unknown)
            for c in unknown:
                v = _finite(t.column(c))
                if len(v):
                    ranges[c] = (float(v.min()), float(v.max()))
        for c, (a, b) in ranges.items():
            lo[c], hi[c] = min(lo[c], a), max(hi[c], b)
    edges: dict[str, np.ndarray] = {}
    for c in cols:
        if math.isfinite(lo[c]) and math.isfinite(hi[c]):
            edges[c] = np.array([lo[c], hi[c]]) if hi[c] == lo[c] else np.linspace(lo[c], hi[c], bins + 1)
    counts = {(c, g): np.zeros(len(edges[c]) - 1, np.int64) for c in edges for g in ("kept", "rejected")}
    sums = dict.fromkeys(counts, 0.0)
    ns = dict.fromkeys(counts, 0)
    missing = dict.fromkeys(cols, 0)
    for group, files in (("kept", kept), ("rejected", rejected)):
        for f in files:
            want = [c for c in present[f] if c in edges]
            if not want:
                continue
            t = runfiles.read_table(f, columns=want)
            for c in want:
                v = _finite(t.column(c))
                missing[c] += t.num_rows - len(v)
                counts[(c, group)] += np.histogram(v, bins=edges[c])[0]
                sums[(c, group)] += float(v.sum())
                ns[(c, group)] += len(v)
    return [
        Histogram(
            column=c,
            edges=edges[c],
            kept=counts[(c, "kept")],
            rejected=counts[(c, "rejected")],
            n_kept=ns[(c, "kept")],
            n_rejected=ns[(c, "rejected")],
            n_missing=missing[c],
            mean_kept=sums[(c, "kept")] / ns[(c, "kept")] if ns[(c, "kept")] else None,
            thresholds=marks.get(c, []),
        )
        for c in cols
        if c in edges
    ]
