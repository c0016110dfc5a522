"""Similarity of candidate pairs, computed on the engine from the key tables (never from texts).

Each task takes a chunk of pairs (global orders), reads from the key tables only the rows of the
documents it needs, and returns one similarity per pair: the signature-estimated Jaccard (share of
equal MinHash values) or the exact Jaccard of the shingle-hash sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.dedup import _common as c
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

SIG = "signature"
PAIRS_PER_TASK = 200_000


def _read_rows(key_paths: Sequence[str], nodes: np.ndarray, column: str) -> pa.ChunkedArray | pa.Array:
    """``column`` of the rows with global orders ``nodes`` (sorted ascending), in that order."""
    part = (nodes >> c.PART_SHIFT).astype(np.int64)
    rows = (nodes & np.uint64(0xFFFFFFFF)).astype(np.int64)
    pieces = []
    for p in np.unique(part):
        sel = rows[part == p]
        table = scratch.read_table(
            key_paths[p],
            columns=[c.ROW, column],
            filters=[(c.ROW, ">=", int(sel.min())), (c.ROW, "<=", int(sel.max()))],
        )
        pos = table.column(c.ROW).to_numpy().astype(np.int64)
        pieces.append(table.column(column).take(pa.array(np.searchsorted(pos, sel))))
    return pa.chunked_array([x for p in pieces for x in p.chunks]).combine_chunks()


def _score_task(item: tuple[tuple[str, ...], np.ndarray, str]) -> np.ndarray:
    key_paths, pairs, column = item
    nodes, inv = np.unique(pairs.ravel(), return_inverse=True)
    ia, ib = inv.reshape(-1, 2).T
    values = _read_rows(key_paths, nodes, column)
    if column == SIG:
        width = values.type.list_size
        sig = pc.list_flatten(values).to_numpy().reshape(len(nodes), width)
        out = np.empty(len(pairs), np.float64)
        for s in range(0, len(pairs), 8192):
            out[s : s + 8192] = (sig[ia[s : s + 8192]] == sig[ib[s : s + 8192]]).mean(axis=1)
        return out
    flat = pc.list_flatten(values).to_numpy().astype(np.uint64)
    off = values.offsets.to_numpy().astype(np.int64)
    sets = [np.unique(flat[off[i] : off[i + 1]]) for i in range(len(nodes))]
    out = np.empty(len(pairs), np.float64)
    for k, (x, y) in enumerate(zip(ia, ib, strict=True)):
        sx, sy = sets[x], sets[y]
        inter = len(np.intersect1d(sx, sy, assume_unique=True))
        union = len(sx) + len(sy) - inter
        out[k] = inter / union if union else 1.0
    return out


def score_pairs(key_paths: Sequence[str], pairs: np.ndarray, engine: Engine, *, column: str) -> np.ndarray:
    """Similarity of every pair (rows of global orders) from ``column`` (``signature`` or ``shingles``)."""
    if len(pairs) == 0:
        return np.zeros(0, np.float64)
    n_tasks = max(1, min(4 * engine.num_workers, -(-len(pairs) // 2000)), -(-len(pairs) // PAIRS_PER_TASK))
    chunks = np.array_split(pairs, n_tasks)
    items = [(tuple(key_paths), ch, column) for ch in chunks if len(ch)]
    return np.concatenate(engine.map(_score_task, items, desc=f"score pairs ({column})"))
