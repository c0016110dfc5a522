"""MinHash with ``verify`` on the engine: greedy survivors per component, without the driver.

With ``verify``, a document is removed only if its exact Jaccard with an earlier *kept* document is
at least the threshold, which is sequential in input order, but only within a component. So, after
:func:`curate.dedup.components.star_components` has labelled every node with its component's root:

1. a shuffle on ``node`` of the labels and the verified adjacency rows gives each edge its root;
2. a shuffle on ``root`` brings every component's edges into one partition, which runs the greedy
   rule (:func:`greedy_survivors`) on them: the same survivors as on the driver, component by
   component;
3. the roots and survivors become ids (``cluster_id``, ``duplicate_of``) and one file per part
   (:func:`curate.dedup.components.attach_ids`, :func:`curate.dedup.components.split_by_part`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.dedup import _common as c
from curate.dedup import components as cc
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

A, B = "a", "b"
SURVIVOR = "survivor"


def greedy_survivors(nodes: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """In input order, a document is dropped only when a verified neighbour earlier in order was kept.

    Returns, per node, the node it duplicates (itself when kept). Loops over clustered nodes only.
    """
    u = np.searchsorted(nodes, pairs[:, 0])
    v = np.searchsorted(nodes, pairs[:, 1])
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    idx = np.lexsort((lo, hi))
    hi, lo = hi[idx], lo[idx]
    starts = np.searchsorted(hi, np.arange(len(nodes) + 1))
    target = np.arange(len(nodes))
    kept = np.zeros(len(nodes), dtype=bool)
    for n in range(len(nodes)):
        earlier = lo[starts[n] : starts[n + 1]]
        hits = earlier[kept[earlier]]
        if len(hits):
            target[n] = hits.min()
        else:
            kept[n] = True
    return nodes[target]


def _edge_roots(out_dir: str, num_partitions: int) -> Any:
    def reduce(table: pa.Table) -> str | None:
        names = table.column_names
        if table.num_rows == 0 or cc.ROOT not in names or cc.NBR not in names:
            return None
        is_label = pc.is_valid(table.column(cc.ROOT))
        lab, adj = table.filter(is_label), table.filter(pc.invert(is_label))
        lnode = np.asarray(lab.column(cc.NODE).to_numpy(), np.uint64)
        order = np.argsort(lnode)
        node = np.asarray(adj.column(cc.NODE).to_numpy(), np.uint64)
        nbr = np.asarray(adj.column(cc.NBR).to_numpy(), np.uint64)
        one_way = node < nbr
        node, nbr = node[one_way], nbr[one_way]
        at = order[np.searchsorted(lnode, node, sorter=order)]
        root = np.asarray(lab.column(cc.ROOT).to_numpy(), np.uint64)[at]
        size = np.asarray(lab.column(cc.SIZE).to_numpy(), np.int64)[at]
        out = pa.table({cc.ROOT: root, A: node, B: nbr, cc.SIZE: size})
        name = f"j{cc.partition_of(table, cc.NODE, num_partitions):05d}.parquet"
        return cc.write_table(out, scratch.join(out_dir, name))

    return reduce


def _components_greedy(out_dir: str, num_partitions: int) -> Any:
    def reduce(table: pa.Table) -> tuple[str | None, int]:
        if table.num_rows == 0 or A not in table.column_names:
            return None, 0
        a = np.asarray(table.column(A).to_numpy(), np.uint64)
        b = np.asarray(table.column(B).to_numpy(), np.uint64)
        root = np.asarray(table.column(cc.ROOT).to_numpy(), np.uint64)
        size = np.asarray(table.column(cc.SIZE).to_numpy(), np.int64)
        ends = np.concatenate([a, b])
        nodes, first = np.unique(ends, return_index=True)
        edge = first % len(a)  # an edge of each node: its root and size are the node's
        survivor = greedy_survivors(nodes, np.stack([a, b], axis=1))
        out = pa.table(
            {
                cc.NODE: nodes,
                cc.NODE_PART: nodes >> c.PART_SHIFT,
                cc.ROOT: root[edge],
                cc.ROOT_PART: root[edge] >> c.PART_SHIFT,
                cc.SIZE: size[edge],
                SURVIVOR: survivor,
                SURVIVOR + "_part": survivor >> c.PART_SHIFT,
            }
        )
        name = f"g{cc.partition_of(table, cc.ROOT, num_partitions):05d}.parquet"
        return cc.write_table(out, scratch.join(out_dir, name)), int(np.count_nonzero(survivor != nodes))

    return reduce


def verified_drop_lists(
    edge_paths: Sequence[str],
    comp: cc.Components,
    key_paths: Sequence[str],
    engine: Engine,
    work: str,
    *,
    num_partitions: int,
) -> tuple[str, int]:
    """Per-part files (``id``, ``cluster_id``, ``cluster_size``, ``duplicate_of``) under
    ``work/drops``, from the verified adjacency rows and their component labels; returns the folder
    and the number of documents dropped."""
    for sub in ("joined", "greedy"):
        scratch.makedirs(scratch.join(work, sub))
        scratch.remove(scratch.join(work, sub), "*.parquet")
    joined = engine.shuffle(
        [*comp.label_paths, *edge_paths],
        key=cc.NODE,
        reduce=_edge_roots(scratch.join(work, "joined"), num_partitions),
        num_partitions=num_partitions,
        desc="verify: edge roots",
    )
    greedy = engine.shuffle(
        [j for j in joined if j is not None],
        key=cc.ROOT,
        reduce=_components_greedy(scratch.join(work, "greedy"), num_partitions),
        num_partitions=num_partitions,
        desc="verify: survivors",
    )
    named = cc.attach_ids(
        [g[0] for g in greedy if g[0] is not None],
        engine,
        key_paths,
        scratch.join(work, "ids"),
        column=cc.ROOT,
        out_column=cc.CLUSTER_ID,
        num_partitions=num_partitions,
    )
    named = cc.attach_ids(
        named,
        engine,
        key_paths,
        scratch.join(work, "ids"),
        column=SURVIVOR,
        out_column=schema.DUPLICATE_OF,
        num_partitions=num_partitions,
    )
    drop_dir = cc.split_by_part(
        named,
        engine,
        scratch.join(work, "drops"),
        num_partitions=num_partitions,
        key_paths=key_paths,
        desc="verify: drop lists",
    )
    return drop_dir, sum(g[1] for g in greedy)
