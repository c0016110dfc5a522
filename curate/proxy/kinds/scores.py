"""Stored score columns over the rows a recipe draws from, and the quantile bounds resolved over them
(``min_quantile`` / ``max_quantile`` of a selection's rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from curate.core import schema
from curate.core.errors import PhaseError
from curate.io import runfiles


def column_values(
    kept: list[Path],
    rejected: list[Path],
    column: str,
    *,
    stages: list[str] | None = None,
    with_kept: bool = True,
) -> np.ndarray:
    """The non-NaN values of score ``column`` over kept/ (``with_kept``) and the non-quarantined rows of
    rejected/ that ``stages`` rejected (``None``: none of them; an empty list: none; ``["*"]``: every
    one). Rows rejected before ``column`` was computed, and files without it, carry no score and do not
    count."""
    import pyarrow.compute as pc

    parts = []
    if with_kept:
        parts += [
            runfiles.read_table(f, columns=[column]).column(column).to_numpy(zero_copy_only=False)
            for f in kept
            if column in runfiles.read_schema(f).names
        ]
    if stages:
        for f in rejected:
            names = runfiles.read_schema(f).names
            if column not in names:
                continue
            t = runfiles.read_table(
                f, columns=[c for c in (column, schema.STAGE, schema.REASON) if c in names]
            )
            mask = np.ones(t.num_rows, dtype=bool)
            if schema.REASON in names:
                q = pc.fill_null(pc.starts_with(t.column(schema.REASON), schema.QUARANTINE_PREFIX), False)
                mask &= ~np.asarray(q.to_numpy(zero_copy_only=False), dtype=bool)
            if stages != ["*"]:
                got = t.column(schema.STAGE).to_pylist() if schema.STAGE in names else [None] * t.num_rows
                mask &= np.array([s in stages for s in got], dtype=bool)
            parts.append(t.column(column).to_numpy(zero_copy_only=False)[mask])
    values = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
    return values[~np.isnan(values)]


def resolve_quantiles(values_of: Any, rule: dict[str, Any]) -> dict[str, Any]:
    """``min_quantile`` / ``max_quantile`` (fractions) -> absolute ``min`` / ``max`` over the scores
    ``values_of(column)`` returns (the rows the recipe draws from, so ``min_quantile: 0.5`` keeps half of
    them also when ``without_stages`` adds rejected rows to kept/)."""
    if "min_quantile" not in rule and "max_quantile" not in rule:
        return rule
    lo_q, hi_q = float(rule.get("min_quantile", 0.0)), float(rule.get("max_quantile", 1.0))
    values = values_of(rule["column"])
    if not len(values):
        raise PhaseError(f"{rule['column']}: no scores to resolve a quantile over (is the stage in stages:?)")
    lo, hi = (float(x) for x in np.quantile(values, [lo_q, hi_q]))
    out = {k: v for k, v in rule.items() if k not in ("min_quantile", "max_quantile")}
    if "min_quantile" in rule:
        out["min"] = lo
    if "max_quantile" in rule:
        out["max"] = hi
    return out
