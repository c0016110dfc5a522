"""Exact deduplication: one document per group of equal normalized texts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.stage import GlobalStage, with_rejections
from curate.dedup import _common as c
from curate.dedup import components as cc
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

log = logging.getLogger(__name__)
HASH = "hash"


@dataclass
class ExactParams:
    """``normalize``: compare texts after lower-casing, collapsing whitespace and stripping (else raw).
    ``num_partitions``: shuffle partitions (default: one per engine worker)."""

    normalize: bool = True
    num_partitions: int | None = None
    seed: int = 0


@dataclass
class DropState:
    """Rows to reject, by id, with the id of the row they duplicate (the group's first row).

    With ``drop_dir`` set, the lists live on disk instead, one file per input part
    (``p<part>.parquet``: ``id``, ``duplicate_of``, ...), and ``apply`` reads only its part's file.
    """

    drop_ids: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    duplicate_of: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    facts: dict[str, Any] = field(default_factory=dict)
    drop_dir: str | None = None


def mark_duplicates(table: pa.Table, state: DropState, reason: str) -> pa.Table:
    """Reject the rows whose id is in ``state.drop_ids``; ``duplicate_of`` names the kept row."""
    ids = c.id_column(table)
    where = pc.index_in(ids, value_set=state.drop_ids)
    hit = pc.is_valid(where)
    reasons = pc.if_else(hit, pa.scalar(reason), pa.scalar(None, pa.string()))
    dup = pc.take(state.duplicate_of, where) if len(state.drop_ids) else pa.nulls(table.num_rows, pa.string())
    if schema.DUPLICATE_OF in table.column_names:
        dup = pc.coalesce(table.column(schema.DUPLICATE_OF), dup)
    return with_rejections(table, reasons, **{schema.DUPLICATE_OF: dup})


def _reduce_exact(out_dir: str, num_partitions: int) -> Any:
    """One shuffle partition: every group of equal hashes is here whole; keep its smallest order and
    write the others (order, part, id, duplicate_of) for the per-part split."""

    def reduce(table: pa.Table) -> tuple[str | None, int, int]:
        if c.empty_reduce_input(table):
            return None, 0, 0
        key = table.column(c.KEY).to_numpy()
        order = table.column(c.ORDER).to_numpy()
        idx = np.lexsort((order, key))
        key, order = key[idx], order[idx].astype(np.uint64)
        ids = table.column(schema.ID).combine_chunks().take(pa.array(idx)).cast(pa.string())
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(key)), 0))
        dup = np.flatnonzero(~first)
        groups = len(np.unique(group_start[dup]))
        if len(dup) == 0:
            return None, 0, 0
        out = pa.table(
            {
                cc.NODE: order[dup],
                cc.NODE_PART: order[dup] >> c.PART_SHIFT,
                schema.ID: ids.take(pa.array(dup)),
                schema.DUPLICATE_OF: ids.take(pa.array(group_start[dup])),
            }
        )
        name = f"x{cc.partition_of(table, c.KEY, num_partitions):05d}.parquet"
        return cc.write_table(out, scratch.join(out_dir, name)), groups, len(dup)

    return reduce


@STAGES.add("exact_dedup_v1")
class ExactDedup(GlobalStage):
    """Exact duplicates of the normalized text (lower-case, whitespace collapsed, stripped).

    The first row of each group in input order (part index, then row) is kept; the others are rejected
    with ``exact_dedup_v1:duplicate`` and ``duplicate_of`` = the kept row's id. Key tables hold ids and
    64-bit hashes only; the grouping is a shuffle on the engine, whose reduce tasks write the
    duplicates to files that a second shuffle splits into one drop list per part: the driver holds
    counters only, and ``apply`` reads its part's list.
    """

    Params = ExactParams

    def collect(self, table: pa.Table) -> pa.Table:
        p: ExactParams = self.params
        text = table.column(schema.TEXT)
        values = c.normalized_text(text) if p.normalize else text
        return pa.table({**c.base_keys(table), HASH: pa.array(c.hash_strings(values, p.seed), pa.uint64())})

    def reduce(self, key_paths: list[str], engine: Engine) -> DropState:
        p: ExactParams = self.params
        if not key_paths:
            return DropState(facts={"groups": 0, "duplicates": 0})
        n = p.num_partitions or max(1, engine.num_workers)
        long = c.explode_keys(
            key_paths, engine, key_col=HASH, suffix=f"{self.label}.keys", extra=(schema.ID,)
        )
        work = scratch.join(scratch.parent(key_paths[0]), f"{self.label}.drops")
        scratch.makedirs(work)
        scratch.remove(work, "x*.parquet")
        parts = engine.shuffle(
            long, key=c.KEY, reduce=_reduce_exact(work, n), num_partitions=n, desc=self.label
        )
        drop_dir = cc.split_by_part(
            [r[0] for r in parts if r[0] is not None],
            engine,
            scratch.join(work, "parts"),
            num_partitions=n,
            desc=f"{self.label}: drop lists",
        )
        facts = {"groups": sum(r[1] for r in parts), "duplicates": sum(r[2] for r in parts)}
        log.info("%s: %d duplicate documents in %d groups", self.label, facts["duplicates"], facts["groups"])
        return DropState(facts=facts, drop_dir=drop_dir)

    def apply(self, table: pa.Table, state: DropState) -> pa.Table:
        if state.drop_dir is not None:
            lists = cc.part_lists(state.drop_dir, table)
            state = DropState(
                drop_ids=lists.column(schema.ID).combine_chunks() if lists else pa.array([], pa.string()),
                duplicate_of=lists.column(schema.DUPLICATE_OF).combine_chunks()
                if lists
                else pa.array([], pa.string()),
            )
        return mark_duplicates(table, state, f"{self.label}:duplicate")

    def summary(self, state: DropState) -> dict[str, Any]:
        return dict(state.facts)
