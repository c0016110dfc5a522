"""Hash partitioning of key tables: the map side of :meth:`curate.core.engine_base.Engine.shuffle`.

Both engines split each parquet file of keys the same way (row ``r`` goes to partition
``key[r] % num_partitions``, rows in file order within a partition), so a shuffle's partitions are
identical whichever engine ran it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def read_key_table(path: str, columns: list[str] | None) -> pa.Table:
    """A key table at a local path, or at a URL in the run directory's object storage (through fsspec):
    a task on any node reads what a task on another node wrote."""
    if "://" not in path:
        return pq.read_table(path, columns=columns)
    import fsspec  # only for a run directory in object storage

    with fsspec.open(path, "rb") as f:
        return pq.read_table(pa.BufferReader(f.read()), columns=columns)


def partition_by_key(path: str, key: str, num_partitions: int, columns: list[str] | None) -> list[pa.Table]:
    table = read_key_table(path, columns)
    if table.num_rows == 0:
        return [table] * num_partitions
    keys = np.asarray(table.column(key).to_numpy(), dtype=np.uint64)
    part = (keys % np.uint64(num_partitions)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(num_partitions + 1))
    sorted_table = table.take(pa.array(order))
    return [sorted_table.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(num_partitions)]


def single_partition(path: str, key: str, num_partitions: int, columns: list[str] | None) -> pa.Table:
    """:func:`partition_by_key` into one partition, returned as a table (for a Ray task of one return)."""
    return partition_by_key(path, key, 1, columns)[0]


def concat_tables(tables: Iterable[pa.Table]) -> pa.Table:
    tables = [t for t in tables]
    return pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
