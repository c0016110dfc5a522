"""Typed selection rules: ``{column, min, max, equals}`` records, checked in order.

Every rejected row gets the reason of the first failing rule. A missing value (null or NaN) fails a
rule: a document whose score could not be computed is not silently kept.

A leaf module: a scorer's reference thresholds (:meth:`curate.core.stage.Scorer.reference_rules`), the
``select`` stage and re-selection of a finished run all use these rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class Rule:
    """Keep a row when ``min <= column <= max`` (bounds inclusive) and ``column == equals``.

    ``reason`` is recorded for rejected rows; by default it spells the rule, e.g.
    ``gopher_quality_v1.word_count<50``. ``exclusive`` makes both bounds strict.
    """

    column: str
    min: float | None = None
    max: float | None = None
    equals: Any = None
    reason: str | None = None
    exclusive: bool = False

    def __post_init__(self) -> None:
        if self.min is None and self.max is None and self.equals is None:
            raise ValueError(f"rule on {self.column!r} needs at least one of min, max, equals")

    def default_reason(self) -> str:
        parts = []
        lo, hi = ("<=", ">=") if self.exclusive else ("<", ">")
        if self.min is not None:
            parts.append(f"{self.column}{lo}{self.min:g}")
        if self.max is not None:
            parts.append(f"{self.column}{hi}{self.max:g}")
        if self.equals is not None:
            parts.append(f"{self.column}!={self.equals}")
        return "|".join(parts)

    def passes(self, table: pa.Table) -> np.ndarray:
        """Boolean mask of rows that pass this rule."""
        if self.column not in table.column_names:
            raise KeyError(
                f"select: no column {self.column!r} to test; columns: {', '.join(table.column_names)}"
            )
        col = table.column(self.column)
        if self.equals is not None:
            ok = pc.fill_null(pc.equal(col, pa.scalar(self.equals)), False)
            mask = np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        else:
            mask = np.ones(table.num_rows, dtype=bool)
        if self.min is not None or self.max is not None:
            values = np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
            with np.errstate(invalid="ignore"):
                valid = ~np.isnan(values)
                if self.min is not None:
                    valid &= (values > self.min) if self.exclusive else (values >= self.min)
                if self.max is not None:
                    valid &= (values < self.max) if self.exclusive else (values <= self.max)
            mask &= valid
        return mask


def first_failing(table: pa.Table, rules: list[Rule], *, prefix: str | None = None) -> pa.Array:
    """Per row, the reason of the first rule it fails (``<prefix>:<reason>`` with a prefix), or null."""
    n = table.num_rows
    reasons = np.full(n, None, dtype=object)
    undecided = np.ones(n, dtype=bool)
    for rule in rules:
        failed = undecided & ~rule.passes(table)
        reason = rule.reason or rule.default_reason()
        if prefix:
            reason = f"{prefix}:{reason}"
        reasons[failed] = reason
        undecided &= ~failed
    return pa.array(reasons, pa.string())
