"""Example rejected documents for the report, a few per reason.

Read row group by row group, only where a still-needed reason occurs, stopping as soon as every reason
has its examples.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core import schema
from curate.io import runfiles


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


def sample_examples(
    rejected: list[Path],
    reasons: list[str],
    *,
    per_reason: int = 3,
    max_chars: int = 600,
    mask: Callable[[str | None], str | None] | None = None,
) -> dict[str, list[Example]]:
    """Up to ``per_reason`` rejected documents for each reason, the first ones in file order, their text
    and detail passed through ``mask`` (the run's PII stage, :func:`curate.filters.pii.masker`) when given.

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
                    shown = text[: max_chars + 200]  # masked whole around the cut, then cut
                    if mask is not None:
                        shown = mask(shown) or ""
                        row["detail"] = mask(row.get("detail"))
                    out[row[schema.REASON]].append(
                        Example(
                            id=str(row.get(schema.ID)),
                            source=str(row.get(schema.SOURCE) or ""),
                            stage=str(row.get(schema.STAGE) or ""),
                            reason=row[schema.REASON],
                            text=shown[:max_chars],
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
