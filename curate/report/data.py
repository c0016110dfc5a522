"""What the report reads from a run directory, gathered cheaply and defensively.

Every input except ``manifest.json`` is optional: a run without proxy runs has no ``goodput.json``, a
run without an export has no ``export/manifest.json``, a run that rejected nothing has no
``rejected/`` parts. Large runs stay cheap: score histograms read only the numeric score columns,
streamed file by file into fixed bins, and example documents are read row group by row group, only
where a still-needed reason occurs, stopping as soon as every reason has its examples.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core import schema
from curate.io import runfiles
from curate.runtime.context import load_manifest

log = logging.getLogger(__name__)

GOODPUT = "goodput.json"
EXPORT_MANIFEST = Path("export") / "manifest.json"
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


@dataclass
class Example:
    """One rejected document, as shown in the report (text cut to ``max_chars``)."""

    id: str
    source: str
    stage: str
    reason: str
    text: str
    truncated: bool
    detail: str | None = None
    duplicate_of: str | None = None


@dataclass
class RunData:
    """Everything the report shows, loaded once."""

    run_dir: Path
    manifest: dict[str, Any]
    goodput: dict[str, Any] | None
    goodput_error: str | None
    export: dict[str, Any] | None
    histograms: list[Histogram]
    examples: dict[str, list[Example]]
    search: dict[str, Any] | None = None  # search.json (curate search), when the run has one


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    if not path.is_file():
        return None, None
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"{path.name} could not be read: {e}"
    if not isinstance(obj, dict):
        return None, f"{path.name} is not a JSON object"
    return obj, None


def thresholds(manifest: dict[str, Any]) -> dict[str, list[Threshold]]:
    """Bounds of every select rule in ``stages_resolved``, by column (``equals`` only when numeric)."""
    out: dict[str, list[Threshold]] = {}
    for st in manifest.get("stages_resolved") or []:
        rules = (st.get("params") or {}).get("rules") if isinstance(st, dict) else None
        for rule in rules or []:
            col = rule.get("column")
            if not col:
                continue
            for kind in ("min", "max", "equals"):
                v = rule.get(kind)
                if isinstance(v, bool) or not isinstance(v, int | float):
                    continue
                out.setdefault(col, []).append(
                    Threshold(col, kind, float(v), str(st.get("label") or st.get("name")))
                )
    return out


def _is_numeric(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t)) and not pa.types.is_boolean(t)


def removing_columns(manifest: dict[str, Any]) -> dict[str, int]:
    """Score column -> documents its select rules removed (only columns that removed any)."""
    from curate.runtime.manifest import deciding_columns

    by_reason = manifest.get("removed_by_reason") or {}
    out: dict[str, int] = {}
    for reason, column in deciding_columns(manifest).items():
        if by_reason.get(reason):
            out[column] = out.get(column, 0) + by_reason[reason]
    return out


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
        if not known:
            missing.append(col)
        elif lo <= hi:
            ranges[col] = (lo, hi)
    return ranges, missing
    index = {meta.row_group(0).column(j).path_in_schema: j for j in range(meta.num_columns)}
    for col in cols:
        lo, hi, ok = math.inf, -math.inf, col in index
        for g in range(meta.num_row_groups if ok else 0):
            st = meta.row_group(g).column(index[col]).statistics
            if st is None or not st.has_min_max:
                if meta.row_group(g).num_rows > (
                    st.null_count if st is not None and st.has_null_count else 0
                ):
                    ok = False
                    break
                continue
            lo, hi = min(lo, float(st.min)), max(hi, float(st.max))
        if ok and math.isfinite(lo) and math.isfinite(hi):
            ranges[col] = (lo, hi)
        elif not ok or math.isinf(lo) != math.isinf(hi):
            missing.append(col)
    return ranges, missing


def histograms(
    kept: list[Path],
    rejected: list[Path],
    cols: list[str],
    marks: dict[str, list[Threshold]],
    *,
    bins: int = 40,
) -> list[Histogram]:
    """One histogram per column; bins span kept and rejected values and every threshold of the column.

    The range comes from the Parquet row-group statistics (read from the values only where a file has
    none); the counts from one read per file of just its score columns.
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
        for th in marks.get(c, []):
            lo[c], hi[c] = min(lo[c], th.value), max(hi[c], th.value)
        if math.isfinite(lo[c]) and math.isfinite(hi[c]):
            a, b = (lo[c] - 0.5, hi[c] + 0.5) if hi[c] == lo[c] else (lo[c], hi[c])
            edges[c] = np.linspace(a, b, bins + 1)
    counts = {(c, g): np.zeros(bins, np.int64) for c in edges for g in ("kept", "rejected")}
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


def sample_examples(
    rejected: list[Path], reasons: list[str], *, per_reason: int = 3, max_chars: int = 600
) -> dict[str, list[Example]]:
    """Up to ``per_reason`` rejected documents for each reason, the first ones in file order.

    Reads only the ``reason`` column of each file, then only the row groups holding a needed row, in
    small batches up to the last needed row, and stops once every reason is served: a large run costs
    a few batches, not all rejected texts.
    """
    need = {r: per_reason for r in reasons}
    out: dict[str, list[Example]] = {r: [] for r in reasons}
    for f in rejected:
        if not any(need.values()):
            break
        pf = runfiles.parquet_file(f)
        names = set(pf.schema_arrow.names)
        if schema.REASON not in names:
            continue
        want_cols = [
            c
            for c in (
                schema.ID,
                schema.TEXT,
                schema.SOURCE,
                schema.STAGE,
                schema.REASON,
                "detail",
                schema.DUPLICATE_OF,
            )
            if c in names
        ]
        for g in range(pf.num_row_groups):
            if not any(need.values()):
                break
            col = pf.read_row_group(g, columns=[schema.REASON]).column(0)
            picks: list[np.ndarray] = []
            for r, k in need.items():
                if k > 0:
                    hit = np.flatnonzero(
                        pc.fill_null(pc.equal(col, r), False).to_numpy(zero_copy_only=False)
                    )[:k]
                    need[r] -= len(hit)
                    picks.append(hit)
            rows = np.sort(np.concatenate(picks)) if picks else np.array([], np.int64)
            if len(rows):
                t = _read_rows(pf, g, want_cols, rows)
                for row in t.to_pylist():
                    text = row.get(schema.TEXT) or ""
                    out[row[schema.REASON]].append(
                        Example(
                            id=str(row.get(schema.ID)),
                            source=str(row.get(schema.SOURCE) or ""),
                            stage=str(row.get(schema.STAGE) or ""),
                            reason=row[schema.REASON],
                            text=text[:max_chars],
                            truncated=len(text) > max_chars,
                            detail=_short(row.get("detail")),
                            duplicate_of=row.get(schema.DUPLICATE_OF),
                        )
                    )
    return out


def _read_rows(pf: pq.ParquetFile, group: int, columns: list[str], rows: np.ndarray) -> pa.Table:
    """Rows ``rows`` (sorted) of one row group, streamed in small batches up to the last one needed, so a
    huge row group of long texts is never held in memory whole."""
    parts, offset, last = [], 0, int(rows[-1])
    for batch in pf.iter_batches(batch_size=1024, row_groups=[group], columns=columns):
        sel = rows[(rows >= offset) & (rows < offset + batch.num_rows)] - offset
        if len(sel):
            parts.append(pa.Table.from_batches([batch]).take(pa.array(sel)))
        offset += batch.num_rows
        if offset > last:
            break
    return pa.concat_tables(parts)


def _short(v: Any, n: int = 200) -> str | None:
    if v is None:
        return None
    s = v if isinstance(v, str) else json.dumps(v, default=str)
    return s if len(s) <= n else s[: n - 1] + "…"


def load_run(run_dir: str | Path, *, per_reason: int = 3, bins: int = 40) -> RunData:
    """Read a finished run directory (``manifest.json`` required; everything else optional)."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    goodput, gerr = _read_json(run_dir / GOODPUT)
    if goodput is not None and not isinstance(goodput.get("recipes"), dict):
        goodput, gerr = None, f"{GOODPUT} has no 'recipes' mapping"
    export, eerr = _read_json(run_dir / EXPORT_MANIFEST)
    if eerr:
        log.warning("report: %s", eerr)
    kept = runfiles.parts(run_dir, "kept")
    rejected = runfiles.parts(run_dir, "rejected")
    removing = removing_columns(manifest)
    cols = score_columns(kept + rejected, always=tuple(sorted(removing, key=lambda c: (-removing[c], c))))
    hists = histograms(kept, rejected, cols, thresholds(manifest), bins=bins)
    for h in hists:
        h.removed = removing.get(h.column, 0)
    by_reason = manifest.get("removed_by_reason") or {}
    reasons = sorted(by_reason, key=lambda r: (-by_reason[r], r))
    examples = sample_examples(rejected, reasons, per_reason=per_reason)
    return RunData(
        run_dir=run_dir,
        manifest=manifest,
        goodput=goodput,
        goodput_error=gerr,
        export=export,
        histograms=hists,
        examples=examples,
        search=_read_json(run_dir / "search.json")[0],
    )
