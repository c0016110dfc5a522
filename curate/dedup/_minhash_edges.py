"""MinHash-LSH candidate edges on the engine, written to files instead of returned to the driver.

Band groups (one shuffle on the band key) give star edges to each group's first document; each
shuffle partition writes its edges with a 64-bit hash of the pair. A second shuffle on that hash
brings every copy of a pair (one per shared band) into one partition, which deduplicates the pairs,
checks them against the similarity cut (reading only the signatures it needs from the key tables),
and writes the survivors as adjacency rows for :mod:`curate.dedup.components`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from curate.dedup import _common as c
from curate.dedup._pairs import _score_task
from curate.dedup.components import adjacency, partition_of, write_table
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

A, B, PAIR = "a", "b", "pair"


@dataclass
class PairCounts:
    candidates: int  # distinct candidate pairs
    rejected: int  # of which below the similarity cut


def reduce_bands(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """One shuffle partition: star edges (group's first order -> each other member) per band key."""
    if c.empty_reduce_input(table):
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    key = table.column(c.KEY).to_numpy()
    order = table.column(c.ORDER).to_numpy()
    idx = np.lexsort((order, key))
    key, order = key[idx], order[idx]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    head = order[np.maximum.accumulate(np.where(first, np.arange(len(key)), 0))]
    member = ~first & (order != head)
    return head[member], order[member]


def _band_edges(out_dir: str, num_partitions: int) -> Any:
    def reduce(table: pa.Table) -> str | None:
        a, b = reduce_bands(table)
        if len(a) == 0:
            return None
        pair = c.fmix64(a ^ c.fmix64(b))
        path = scratch.join(out_dir, f"b{partition_of(table, c.KEY, num_partitions):05d}.parquet")
        return write_table(pa.table({A: a, B: b, PAIR: pair}), path)

    return reduce


def _checked_pairs(
    key_paths: Sequence[str], out_dir: str, num_partitions: int, column: str | None, cut: float
) -> Any:
    def reduce(table: pa.Table) -> tuple[str | None, int, int]:
        if table.num_rows == 0 or PAIR not in table.column_names:
            return None, 0, 0
        ab = np.stack([table.column(A).to_numpy(), table.column(B).to_numpy()], axis=1).astype(np.uint64)
        pairs = np.unique(ab, axis=0)
        n, rejected = len(pairs), 0
        if column is not None:
            keep = _score_task((tuple(key_paths), pairs, column)) >= cut
            rejected = int(np.count_nonzero(~keep))
            pairs = pairs[keep]
        if len(pairs) == 0:
            return None, n, rejected
        path = scratch.join(out_dir, f"e{partition_of(table, PAIR, num_partitions):05d}.parquet")
        return write_table(adjacency(pairs[:, 0], pairs[:, 1]), path), n, rejected

    return reduce


def pair_edges(
    long_paths: Sequence[str],
    key_paths: Sequence[str],
    engine: Engine,
    work: str,
    *,
    num_partitions: int,
    column: str | None,
    cut: float,
) -> tuple[list[str], PairCounts]:
    """Candidate pairs from the exploded band keys, checked (``column`` >= ``cut``; no check when
    ``column`` is None), as adjacency files under ``work``; returns their paths and the counts."""
    bands_dir, pairs_dir = scratch.join(work, "band_edges"), scratch.join(work, "pairs")
    for d in (bands_dir, pairs_dir):
        scratch.makedirs(d)
        scratch.remove(d, "*.parquet")
    written = engine.shuffle(
        list(long_paths),
        key=c.KEY,
        reduce=_band_edges(bands_dir, num_partitions),
        num_partitions=num_partitions,
        desc="band groups",
    )
    results = engine.shuffle(
        [w for w in written if w is not None],
        key=PAIR,
        reduce=_checked_pairs(key_paths, pairs_dir, num_partitions, column, cut),
        num_partitions=num_partitions,
        desc="candidate pairs",
    )
    edges = [r[0] for r in results if r[0] is not None]
    return edges, PairCounts(candidates=sum(r[1] for r in results), rejected=sum(r[2] for r in results))
