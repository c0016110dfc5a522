"""Connected components on the engine: the edge set never comes back to the driver.

Edges live in parquet files as *directed adjacency* rows ``(node, nbr)`` (every undirected edge twice,
once per direction), partitioned by whatever wrote them. Components are found by alternating
**large-star** and **small-star** rounds (Kiveris et al., "Connected Components in MapReduce and
Beyond", SoCC 2014), each one hash-partitioned shuffle on ``node`` (``Engine.shuffle``) with a
vectorized reduce per partition that writes its output edges to a new file:

* large-star, at each node ``u`` with neighbourhood ``N(u)`` and ``m = min(N(u) + u)``: every
  neighbour ``v > u`` is re-linked to ``m``;
* small-star, at each ``u`` with smaller neighbours ``N'(u)`` and ``m = min(N'(u) + u)``: every
  ``v`` in ``N'(u)`` and ``u`` itself are linked to ``m``.

Both keep connectivity and each component's minimum; when a large-star and the small-star after it
change no edge, every component is a star around its smallest node (O(log^2 n) rounds in theory, a
handful in practice, also on long chains). A last pass writes label files ``(node, root, size)``:
``root`` is the component's smallest node, which is exactly what the driver-side
:func:`curate.dedup._common.connected_components` returns. The driver only ever sees counters.

:func:`drop_lists` then turns labels (node = global row order, ``part << 32 | row``) into one file per
input part, ``p<part>.parquet`` with ``id``, ``cluster_id`` (the root's id) and ``cluster_size``, so
that ``apply`` on a part reads only its own list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.dedup import _common as c
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

NODE, NBR = "node", "nbr"
ROOT, SIZE = "root", "cluster_size"
ROOT_PART, NODE_PART = "root_part", "node_part"  # an order column X has its part in X + "_part"
CLUSTER_ID, CLUSTER_SIZE = "cluster_id", SIZE
MAX_ROUNDS = 200
_LOW32 = np.uint64(0xFFFFFFFF)


@dataclass
class Components:
    """What the driver keeps of a components run: label files and counters."""

    label_paths: list[str]
    rounds: int
    clusters: int
    clustered_docs: int


def write_table(table: pa.Table, path: str | Path) -> str:
    """Write atomically (a rename, or one PUT), so a retried task never leaves half a file; ``path`` may
    be a URL in the run directory's storage (:mod:`curate.io.scratch`)."""
    return scratch.write_table(table, path)


def adjacency(a: np.ndarray, b: np.ndarray) -> pa.Table:
    """Directed rows ``(node, nbr)`` for the undirected edges ``a[i] - b[i]``: both directions."""
    a = np.asarray(a, np.uint64)
    b = np.asarray(b, np.uint64)
    return pa.table({NODE: np.concatenate([a, b]), NBR: np.concatenate([b, a])})


def partition_of(table: pa.Table, key: str, num_partitions: int) -> int:
    """The shuffle partition a non-empty reduce input belongs to (``Engine.shuffle``: key % partitions)."""
    return int(np.uint64(table.column(key)[0].as_py()) % np.uint64(num_partitions))


def _grouped(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct non-loop rows sorted by (node, nbr), with each row's group start and group minimum."""
    node = np.asarray(table.column(NODE).to_numpy(), np.uint64)
    nbr = np.asarray(table.column(NBR).to_numpy(), np.uint64)
    loop = node == nbr
    node, nbr = node[~loop], nbr[~loop]
    idx = np.lexsort((nbr, node))
    node, nbr = node[idx], nbr[idx]
    distinct = np.ones(len(node), bool)
    distinct[1:] = (node[1:] != node[:-1]) | (nbr[1:] != nbr[:-1])
    node, nbr = node[distinct], nbr[distinct]
    first = np.ones(len(node), bool)
    first[1:] = node[1:] != node[:-1]
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    return node, nbr, starts, group


def _large_star(table: pa.Table) -> tuple[pa.Table, int]:
    node, nbr, starts, group = _grouped(table)
    if len(node) == 0:
        return adjacency(node, nbr), 0
    m = np.minimum(np.minimum.reduceat(nbr, starts), node[starts])[group]
    sel = nbr > node
    return adjacency(nbr[sel], m[sel]), int(np.count_nonzero(sel & (m < node)))


def _small_star(table: pa.Table) -> tuple[pa.Table, int]:
    node, nbr, _, _ = _grouped(table)
    sel = nbr < node
    node, nbr = node[sel], nbr[sel]
    if len(node) == 0:
        return adjacency(node, nbr), 0
    first = np.ones(len(node), bool)
    first[1:] = node[1:] != node[:-1]
    starts = np.flatnonzero(first)
    m = np.minimum.reduceat(nbr, starts)[np.cumsum(first) - 1]
    moved = nbr != m
    a = np.concatenate([nbr[moved], node[starts]])
    b = np.concatenate([m[moved], m[starts]])
    return adjacency(a, b), int(np.count_nonzero(moved))


def _labels(table: pa.Table) -> tuple[pa.Table, int]:
    """On stars: each centre (a node whose neighbours are all larger) labels itself and its leaves."""
    node, nbr, starts, group = _grouped(table)
    if len(node) == 0:
        centres = sizes = leaf = root = leaf_size = np.zeros(0, np.uint64)
    else:
        is_centre = np.minimum.reduceat(nbr, starts) > node[starts]  # per node group
        size = np.diff(np.append(starts, len(node))) + 1
        centres, sizes = node[starts][is_centre], size[is_centre]
        row = is_centre[group]
        leaf, root, leaf_size = nbr[row], node[row], size[group[row]]
    roots = np.concatenate([centres, root]).astype(np.uint64)
    out = pa.table(
        {
            NODE: np.concatenate([centres, leaf]).astype(np.uint64),
            ROOT: roots,
            SIZE: np.concatenate([sizes, leaf_size]).astype(np.int64),
            ROOT_PART: roots >> c.PART_SHIFT,
            NODE_PART: np.concatenate([centres, leaf]).astype(np.uint64) >> c.PART_SHIFT,
        }
    )
    return out, len(centres)


def _round_reduce(op: Callable[[pa.Table], tuple[pa.Table, int]], out_dir: str, num_partitions: int) -> Any:
    def reduce(table: pa.Table) -> tuple[str | None, int, int]:
        if table.num_rows == 0 or NODE not in table.column_names:
            return None, 0, 0
        out, count = op(table)
        if out.num_rows == 0:
            return None, 0, count
        path = scratch.join(out_dir, f"e{partition_of(table, NODE, num_partitions):05d}.parquet")
        return write_table(out, path), out.num_rows, count

    return reduce


def _shuffle_round(
    engine: Engine,
    paths: Sequence[str],
    op: Callable[[pa.Table], tuple[pa.Table, int]],
    out_dir: str,
    num_partitions: int,
    desc: str,
) -> tuple[list[str], int, int]:
    scratch.makedirs(out_dir)
    results = engine.shuffle(
        list(paths),
        key=NODE,
        reduce=_round_reduce(op, str(out_dir), num_partitions),
        num_partitions=num_partitions,
        columns=[NODE, NBR],
        desc=desc,
    )
    new_paths = [r[0] for r in results if r[0] is not None]
    return new_paths, sum(r[1] for r in results), sum(r[2] for r in results)


def star_components(
    edge_paths: Sequence[str], engine: Engine, work_dir: str | Path, *, num_partitions: int
) -> Components:
    """Components of the graph whose adjacency rows are in ``edge_paths``; labels written under
    ``work_dir`` (cleared first). Raises ``RuntimeError`` if ``MAX_ROUNDS`` rounds do not converge."""
    work = str(work_dir)
    scratch.clear(work)
    scratch.makedirs(work)
    paths = list(edge_paths)
    rounds = 0
    consumed: str | None = None  # the folder whose files the next shuffle reads (not the caller's)

    def step(
        op: Callable[[pa.Table], tuple[pa.Table, int]], name: str, desc: str
    ) -> tuple[list[str], int, int]:
        nonlocal consumed
        out = _shuffle_round(engine, paths, op, scratch.join(work, name), num_partitions, desc)
        if consumed is not None:  # a round's input is dead once its output is written: keep disk flat
            scratch.clear(consumed)
        consumed = scratch.join(work, name)
        return out

    while paths:
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds ({work})")
        paths, _, large = step(_large_star, f"r{rounds:03d}-large", f"components {rounds}L")
        paths, _, small = step(_small_star, f"r{rounds:03d}-small", f"components {rounds}S")
        if large + small == 0:
            break
    label_paths, nodes, clusters = step(_labels, "labels", "components: labels")
    return Components(label_paths=label_paths, rounds=rounds, clusters=clusters, clustered_docs=nodes)


def part_lists(drop_dir: str, table: pa.Table) -> pa.Table | None:
    """The per-part list(s) ``table`` needs: its own part's file when the runner's order column says
    which part it is, else (a direct call on a table without one) every file. None when there is none."""
    if schema.ORDER in table.column_names and table.num_rows:
        part = int(table.column(schema.ORDER)[0].as_py()) >> 32
        files = [f for f in [scratch.join(drop_dir, f"p{part:05d}.parquet")] if scratch.exists(f)]
    else:
        files = scratch.files(drop_dir, "p*.parquet")
    return scratch.read_tables(files)


def _ids(key_path: str) -> tuple[np.ndarray, pa.Array]:
    """The key table's ``(row, id)`` columns (rows ascending, as ``collect`` wrote them)."""
    t = scratch.read_table(key_path, columns=[c.ROW, schema.ID])
    return np.asarray(t.column(c.ROW).to_numpy(), np.int64), c.id_column(t)


def _take_ids(key_paths: Sequence[str], parts: np.ndarray, orders: np.ndarray) -> pa.Array:
    """The ids of rows with global ``orders``; ``parts`` = their parts (one key table read per part)."""
    pieces, where = [], []
    for part in np.unique(parts):
        sel = np.flatnonzero(parts == part)
        rows, ids = _ids(key_paths[int(part)])
        pieces.append(ids.take(pa.array(np.searchsorted(rows, (orders[sel] & _LOW32).astype(np.int64)))))
        where.append(sel)
    if not pieces:
        return pa.array([], pa.string())
    merged = pa.concat_arrays([p.cast(pa.string()) for p in pieces])
    inv = np.empty(len(orders), np.int64)
    inv[np.concatenate(where)] = np.arange(len(orders))
    return merged.take(pa.array(inv))


def _attach_ids(
    key_paths: Sequence[str], column: str, out_column: str, out_dir: str, num_partitions: int
) -> Any:
    """Reduce (partitioned by ``column + "_part"``): replace the order ``column`` by the row's id."""
    part_col = column + "_part"

    def reduce(table: pa.Table) -> str | None:
        if table.num_rows == 0 or part_col not in table.column_names:
            return None
        orders = np.asarray(table.column(column).to_numpy(), np.uint64)
        ids = _take_ids(key_paths, orders >> c.PART_SHIFT, orders)
        out = table.drop_columns([column, part_col]).append_column(out_column, ids)
        name = f"{column}-{partition_of(table, part_col, num_partitions):05d}.parquet"
        return write_table(out, scratch.join(out_dir, name))

    return reduce


def attach_ids(
    paths: Sequence[str],
    engine: Engine,
    key_paths: Sequence[str],
    out_dir: str | Path,
    *,
    column: str,
    out_column: str,
    num_partitions: int,
) -> list[str]:
    """Replace the row-order ``column`` of the rows in ``paths`` by ids (``out_column``), shuffling by
    ``column + "_part"`` so that each reduce reads the id column of its own parts' key tables only."""
    out = str(out_dir)
    scratch.makedirs(out)
    scratch.remove(out, f"{column}-*.parquet")
    results = engine.shuffle(
        list(paths),
        key=column + "_part",
        reduce=_attach_ids(list(key_paths), column, out_column, out, num_partitions),
        num_partitions=num_partitions,
        desc=f"ids of {column}",
    )
    return [r for r in results if r is not None]


def _split_by_part(key_paths: Sequence[str], out_dir: str) -> Any:
    """Reduce: write ``p<part>.parquet`` per part in the partition, rows by ``node`` (the row order),
    with ``id`` (from the rows, else from the key tables) and every other column but the keys."""

    def reduce(table: pa.Table) -> int:
        if table.num_rows == 0 or NODE_PART not in table.column_names:
            return 0
        node = np.asarray(table.column(NODE).to_numpy(), np.uint64)
        parts = np.asarray(table.column(NODE_PART).to_numpy(), np.uint64)
        ids = c.id_column(table) if schema.ID in table.column_names else _take_ids(key_paths, parts, node)
        rest = [n for n in table.column_names if n not in (NODE, NODE_PART, schema.ID)]
        order = np.argsort(node, kind="stable")
        for part in np.unique(parts):
            sel = pa.array(order[parts[order] == part])
            cols = {schema.ID: ids.take(sel), **{n: table.column(n).take(sel) for n in rest}}
            write_table(pa.table(cols), scratch.join(out_dir, f"p{int(part):05d}.parquet"))
        return len(np.unique(parts))

    return reduce


def split_by_part(
    paths: Sequence[str],
    engine: Engine,
    out_dir: str | Path,
    *,
    num_partitions: int,
    key_paths: Sequence[str] = (),
    desc: str = "per-part lists",
) -> str:
    """Shuffle rows ``(node, node_part, [id], ...)`` by ``node_part`` into one file per input part,
    ``out_dir/p<part>.parquet`` (``out_dir`` cleared first); ids missing from the rows are read from
    ``key_paths``. Returns ``out_dir``."""
    out = str(out_dir)
    scratch.clear(out)
    scratch.makedirs(out)
    engine.shuffle(
        list(paths),
        key=NODE_PART,
        reduce=_split_by_part(list(key_paths), out),
        num_partitions=num_partitions,
        desc=desc,
    )
    return out


def drop_lists(
    comp: Components, key_paths: Sequence[str], engine: Engine, out_dir: str | Path, *, num_partitions: int
) -> str:
    """Write one membership file per input part that has clustered rows (``p<part>.parquet``: ``id``,
    ``cluster_id``, ``cluster_size``) into ``out_dir`` (cleared first) and return it.

    Two shuffles: by the root's part (each reduce reads the ids of its parts' roots from their key
    tables), then by the node's part (each reduce reads its parts' ids and writes their files).
    """
    out = str(out_dir)
    mid = out.rstrip("/") + ".ids"
    named = attach_ids(
        comp.label_paths,
        engine,
        key_paths,
        mid,
        column=ROOT,
        out_column=CLUSTER_ID,
        num_partitions=num_partitions,
    )
    return split_by_part(
        named, engine, out, num_partitions=num_partitions, key_paths=key_paths, desc="components: drop lists"
    )
