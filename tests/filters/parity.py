"""Helpers to compare our filters' keep/drop decisions with datatrove's filters on the same documents."""

from __future__ import annotations

import glob
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from curate.core import schema
from curate.core.stage import RowStage, Scorer, Transform


def run_filter(stage: Scorer | Transform, table: pa.Table) -> list[str | None]:
    """Reasons (None = kept) that ``filter: <stage>`` (a scorer) or ``transform: <stage>`` gives each
    row of ``table``."""
    step: RowStage = stage.as_filter() if isinstance(stage, Scorer) else stage
    step.ensure_setup()
    out = step.process(table)
    if schema.REJECT not in out.column_names:
        return [None] * table.num_rows
    return out.column(schema.REJECT).to_pylist()


def run_datatrove(dt_filter: Any, table: pa.Table, *, url: bool = False) -> list[str | None]:
    """datatrove's reason per row (None = kept; "dropped" when it gives no reason)."""
    from datatrove.data import Document

    reasons: list[str | None] = []
    urls = table.column("url").to_pylist() if url else [None] * table.num_rows
    for i, (text, u) in enumerate(zip(table.column(schema.TEXT).to_pylist(), urls, strict=True)):
        doc = Document(text=text or "", id=str(i), metadata={"url": u} if u else {})
        res = dt_filter.filter(doc)
        if isinstance(res, tuple):
            reasons.append(None if res[0] else res[1])
        else:
            reasons.append(None if res else "dropped")
    return reasons


@dataclass
class Agreement:
    n: int = 0
    same_decision: int = 0
    same_reason: int = 0
    disagreements: list[tuple[int, str | None, str | None]] = field(default_factory=list)
    ours_reasons: Counter = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.same_decision / self.n if self.n else 1.0


def agreement(ours: list[str | None], ref: list[str | None], *, strip: str = "") -> Agreement:
    a = Agreement()
    for i, (o, r) in enumerate(zip(ours, ref, strict=True)):
        a.n += 1
        a.ours_reasons[o] += 1
        if (o is None) == (r is None):
            a.same_decision += 1
            ro = None if o is None else o.split(":", 1)[1]
            rr = None if r is None else r.removeprefix(strip)
            a.same_reason += ro == rr
        else:
            a.disagreements.append((i, o, r))
    return a


def web_files(root: Path) -> list[str]:
    return sorted(glob.glob(str(root / "web" / "*.jsonl.gz")))
