"""Which columns of the kept documents a training export carries (``--columns`` / ``--drop-columns``)."""

from __future__ import annotations

import fnmatch

import pyarrow as pa

from curate.core.errors import PhaseError

REQUIRED = ("text",)


def check_columns(names: list[str], *, columns: tuple[str, ...] | None, drop: tuple[str, ...]) -> None:
    """Refuse a ``--columns`` / ``--drop-columns`` pattern that matches none of ``names`` (the kept
    files' columns), naming them: checked before any work, and again on the table written."""
    names = [c for c in names if not c.startswith("__")]
    for pattern in (*(columns or ()), *drop):
        if not fnmatch.filter(names, pattern):
            raise PhaseError(f"export: no column matches {pattern!r}; columns: {', '.join(names)}")


def choose_columns(table: pa.Table, *, columns: tuple[str, ...] | None, drop: tuple[str, ...]) -> pa.Table:
    """``table`` with the chosen columns, in its own order.

    ``columns`` (names or globs, e.g. ``gopher_quality_v1.*``) keeps only those, and ``drop`` removes
    matches; with neither, every column is kept except those that are null in every row (such as
    ``duplicate_of``, which only rejected rows fill). ``text`` always stays: it is what a trainer reads.
    """
    names = [c for c in table.column_names if not c.startswith("__")]
    check_columns(names, columns=columns, drop=drop)
    if columns is not None:
        keep = [c for c in names if any(fnmatch.fnmatchcase(c, p) for p in columns)]
    else:
        keep = [c for c in names if table.column(c).null_count < table.num_rows or table.num_rows == 0]
    keep = [c for c in keep if not any(fnmatch.fnmatchcase(c, p) for p in drop)]
    missing = [c for c in REQUIRED if c not in keep]
    if missing:
        raise PhaseError(f"export: the export needs column(s) {', '.join(missing)}; keep them in --columns")
    return table.select(keep)
