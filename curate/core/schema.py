"""Column names and the Arrow schemas that every stage, reader and writer agrees on.

A batch is a ``pyarrow.Table`` with at least ``id``, ``text`` and ``source`` (all strings). Scorers add
columns named ``<stage>.<field>``. A row-level stage marks a row for rejection by filling the internal
column ``REJECT`` with a reason; the engine peels such rows off into ``rejected/`` with ``stage`` and
``reason`` columns, so no stage ever drops a row silently.
"""

from __future__ import annotations

import pyarrow as pa

ID = "id"
TEXT = "text"
SOURCE = "source"
STAGE = "stage"
REASON = "reason"
# Internal column: a non-null value means "reject this row with this reason".
REJECT = "__reject__"
# Optional internal column a stage may set next to REJECT (e.g. dedup's duplicate_of); kept in rejected/.
DUPLICATE_OF = "duplicate_of"
QUARANTINE_PREFIX = "quarantine:"
# Internal column the runner adds before a global stage's collect and apply: int64 global row order,
# ``part_index << 32 | row``; a stage may use its part index to find per-part state.
ORDER = "__order__"

BASE_SCHEMA = pa.schema([(ID, pa.string()), (TEXT, pa.string()), (SOURCE, pa.string())])


def empty_base_table() -> pa.Table:
    """An empty table with the base columns."""
    return BASE_SCHEMA.empty_table()


def column_name(stage: str, field: str) -> str:
    """The column a scorer's field is stored under: ``<stage>.<field>``."""
    return f"{stage}.{field}"


def text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the text column (0 for an empty table)."""
    if table.num_rows == 0:
        return 0
    import pyarrow.compute as pc

    total = pc.sum(pc.binary_length(table.column(TEXT).fill_null(""))).as_py()
    return int(total or 0)
