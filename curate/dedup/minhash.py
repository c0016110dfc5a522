"""MinHash-LSH near-duplicate detection: shingles -> signatures -> band keys -> shuffle -> components.

Flow (see :mod:`curate.dedup._common` for the ordering contract):

1. ``collect`` (per part, in parallel): words are ``\\w+`` runs of the lower-cased text; word
   ``ngram``-grams are hashed (64-bit), ``num_perm = bands * rows`` affine permutations give the
   signature (a numpy min-reduction, no loop per shingle), and each band's rows hash to one uint64
   band key. The key table holds id, row, band keys, the signature (for the estimate check) and, with
   ``verify``, the shingle hashes: never text.
2. ``reduce``: band keys are exploded to ``(key, order)`` rows and grouped by a shuffle on the engine;
   each group of documents sharing a band gives star edges to its first document. Candidate pairs are
   then checked (signature-estimated Jaccard, or exact Jaccard of the shingle sets with ``verify``)
   in engine tasks that read only the rows they need from the key tables. Connected components of the
   remaining edges are clusters; the first document of a cluster (part, then row) survives.
   With ``components: engine`` (the default) none of this passes through the driver: band groups
   write edge files, a shuffle on the pair deduplicates and checks them, components are computed by
   :mod:`curate.dedup.components` and end in one membership file per part, which ``apply`` reads;
   the driver holds counters only; with ``verify`` the greedy survivor rule runs per component on the
   engine too (:mod:`curate.dedup._verified`). ``components: driver`` gathers the pairs on the driver
   instead (the path before the engine's components): fine to a few million documents.
   With ``verify``, a document is removed only if its exact Jaccard with an earlier *kept* document
   is >= ``threshold``, so nothing below the threshold is ever removed.
3. ``apply``: rejected rows get ``minhash_dedup_v1:near_duplicate`` and ``duplicate_of``; every row
   gets ``<label>.cluster_id`` (the id of its cluster's first document, its own id when alone) and
   ``<label>.cluster_size``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.stage import GlobalStage
from curate.dedup import _common as c
from curate.dedup import _minhash_edges as me
from curate.dedup import _minhash_math as mm
from curate.dedup import components as cc
from curate.dedup._minhash_edges import reduce_bands as _reduce_bands
from curate.dedup._pairs import score_pairs
from curate.dedup._verified import greedy_survivors as _greedy_survivors
from curate.dedup._verified import verified_drop_lists
from curate.dedup.exact import DropState, mark_duplicates
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

log = logging.getLogger(__name__)
BANDS, SIG, SHINGLES = "bands", "signature", "shingles"


@dataclass
class MinhashParams:
    """Parameters of ``minhash_dedup_v1``.

    ``ngram``: words per shingle. ``bands`` x ``rows``: LSH banding (default 14 x 8 = 112 hashes, as
    datatrove). ``num_perm``: when set (and bands/rows are not), bands x rows are derived from
    ``threshold`` to minimize false positives + false negatives. ``threshold``: the target Jaccard.
    ``estimate_margin``: candidate pairs whose signature-estimated Jaccard is below
    ``threshold - estimate_margin`` are dropped (null: keep every LSH candidate, like datatrove).
    ``verify``: compute the exact Jaccard of candidate pairs' shingle sets and drop pairs below
    ``threshold`` (costs one uint64 per word in the key tables). ``num_partitions``: shuffle partitions.
    ``short_docs``: give documents with fewer than ``ngram`` words one shingle of all their words (off by
    default, as datatrove: such texts, e.g. "[date]", are not near-duplicates in any useful sense, and
    exact copies of them are exact_dedup_v1's job). ``normalize_numbers``: every digit counts as 0 (as
    datatrove), so pages generated from one template with different numbers cluster together.
    ``components``: where clusters are found: ``engine`` (distributed, edge files and per-part drop
    lists; the driver holds counters only) or ``driver`` (pairs gathered in the driver's memory).
    """

    ngram: int = field(default=5, metadata=bounds(1))
    bands: int | None = None
    rows: int | None = None
    num_perm: int | None = None
    threshold: float = field(default=0.8, metadata=bounds(0, 1, lo_open=True))
    estimate_margin: float | None = field(default=0.1, metadata=bounds(0, 1))
    verify: bool = False
    seed: int = 1
    num_partitions: int | None = None
    short_docs: bool = False
    normalize_numbers: bool = True
    components: str = "engine"


@dataclass
class MinhashState(DropState):
    """Drop set plus cluster membership (ids of every document in a cluster of two or more)."""

    member_ids: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    member_cluster: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    member_size: pa.Array = field(default_factory=lambda: pa.array([], pa.int64()))


@STAGES.add("minhash_dedup_v1")
class MinhashDedup(GlobalStage):
    """Near-duplicate removal with MinHash-LSH (see the module docstring for the algorithm)."""

    Params = MinhashParams

    def __init__(self, params: Any = None, *, label: str | None = None) -> None:
        super().__init__(params, label=label)
        p: MinhashParams = self.params
        if p.bands is None and p.rows is None and p.num_perm is not None:
            self.bands, self.rows = mm.optimal_bands(p.threshold, p.num_perm)
        else:
            self.bands, self.rows = p.bands or 14, p.rows or 8
        if not 0.0 < p.threshold <= 1.0 or p.ngram < 1:
            raise ValueError(f"{self.label}: threshold must be in (0, 1] and ngram >= 1")
        if p.components not in ("engine", "driver"):
            raise ValueError(f"{self.label}: components must be 'engine' or 'driver', not {p.components!r}")
        fp, fn = mm.error_rates(p.threshold, self.bands, self.rows)
        self.fp_fn = (fp, fn)
        log.info(
            "%s: %d bands x %d rows; at threshold %.2f false-positive area %.4f, false-negative area %.4f"
            " (P(candidate) at J=%.2f: %.3f)",
            self.label,
            self.bands,
            self.rows,
            p.threshold,
            fp,
            fn,
            p.threshold,
            mm.candidate_probability(p.threshold, self.bands, self.rows),
        )
        self._perm = mm.permutations(self.bands * self.rows, p.seed)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(bands=self.bands, rows=self.rows, fp_area=self.fp_fn[0], fn_area=self.fp_fn[1])
        return d

    def collect(self, table: pa.Table) -> pa.Table:
        p: MinhashParams = self.params
        tokens, offsets = c.word_hashes(
            table.column(schema.TEXT), seed=p.seed, zero_digits=p.normalize_numbers
        )
        sh, sh_off = c.ngram_hashes(tokens, offsets, p.ngram, short=p.short_docs)
        sig = mm.signatures(sh, sh_off, *self._perm)
        keys = mm.band_keys(sig, self.bands, self.rows)
        has = np.diff(sh_off) > 0
        nb = np.where(has, self.bands, 0)
        band_off = np.zeros(len(has) + 1, np.int32)
        np.cumsum(nb, out=band_off[1:])
        cols: dict[str, Any] = c.base_keys(table)
        cols[BANDS] = pa.ListArray.from_arrays(pa.array(band_off), pa.array(keys[has].ravel(), pa.uint64()))
        cols[SIG] = pa.FixedSizeListArray.from_arrays(pa.array(sig.ravel(), pa.uint64()), sig.shape[1])
        if p.verify:
            cols[SHINGLES] = pa.ListArray.from_arrays(
                pa.array(sh_off.astype(np.int64)).cast(pa.int32()), pa.array(sh, pa.uint64())
            )
        return pa.table(cols)

    def _check(self) -> tuple[str | None, float]:
        """The candidate check: the key-table column it compares and the similarity cut."""
        p: MinhashParams = self.params
        if p.verify:
            return SHINGLES, p.threshold
        if p.estimate_margin is not None:
            return SIG, p.threshold - p.estimate_margin
        return None, 0.0

    def reduce(self, key_paths: list[str], engine: Engine) -> MinhashState:
        p: MinhashParams = self.params
        if p.components == "engine" and key_paths:
            return self._reduce_on_engine(key_paths, engine)
        long = c.explode_keys(key_paths, engine, key_col=BANDS, suffix=f"{self.label}.bands")
        parts = c.shuffle_groups(
            long, engine, _reduce_bands, num_partitions=p.num_partitions, desc=self.label
        )
        a = np.concatenate([r[0] for r in parts]) if parts else np.zeros(0, np.uint64)
        b = np.concatenate([r[1] for r in parts]) if parts else np.zeros(0, np.uint64)
        pairs = np.unique(np.stack([a, b], axis=1), axis=0) if len(a) else np.zeros((0, 2), np.uint64)
        facts: dict[str, Any] = {"bands": self.bands, "rows": self.rows, "candidate_pairs": len(pairs)}
        if len(pairs) and (p.verify or p.estimate_margin is not None):
            column, cut = (
                (SHINGLES, p.threshold) if p.verify else (SIG, p.threshold - (p.estimate_margin or 0.0))
            )
            sim = score_pairs(key_paths, pairs, engine, column=column)
            keep = sim >= cut
            facts.update(
                pairs_checked=len(pairs),
                pairs_rejected=int((~keep).sum()),
                check="exact_jaccard" if p.verify else "signature_estimate",
                check_cut=round(cut, 4),
            )
            pairs = pairs[keep]
        nodes, root = c.connected_components(pairs[:, 0], pairs[:, 1])
        survivor = _greedy_survivors(nodes, pairs) if p.verify else root
        drop = survivor != nodes
        ids = c.lookup(key_paths, nodes, engine).column(schema.ID).combine_chunks()
        pos = np.searchsorted(nodes, root)
        sizes = np.bincount(pos, minlength=len(nodes))[pos]
        spos = np.searchsorted(nodes, survivor)
        facts.update(clusters=len(np.unique(root)), clustered_docs=len(nodes), duplicates=int(drop.sum()))
        log.info("%s: %s", self.label, facts)
        return MinhashState(
            drop_ids=ids.filter(pa.array(drop)),
            duplicate_of=ids.take(pa.array(spos[drop])),
            facts=facts,
            member_ids=ids,
            member_cluster=ids.take(pa.array(pos)),
            member_size=pa.array(sizes, pa.int64()),
        )

    def _reduce_on_engine(self, key_paths: list[str], engine: Engine) -> MinhashState:
        p: MinhashParams = self.params
        n = p.num_partitions or max(1, engine.num_workers)
        work = scratch.join(scratch.parent(key_paths[0]), f"{self.label}.cc")
        long = c.explode_keys(key_paths, engine, key_col=BANDS, suffix=f"{self.label}.bands")
        column, cut = self._check()
        edges, pairs = me.pair_edges(long, key_paths, engine, work, num_partitions=n, column=column, cut=cut)
        comp = cc.star_components(edges, engine, scratch.join(work, "cc"), num_partitions=n)
        if p.verify:
            drop_dir, duplicates = verified_drop_lists(edges, comp, key_paths, engine, work, num_partitions=n)
        else:
            drop_dir = cc.drop_lists(comp, key_paths, engine, scratch.join(work, "drops"), num_partitions=n)
            duplicates = comp.clustered_docs - comp.clusters
        facts: dict[str, Any] = {"bands": self.bands, "rows": self.rows, "candidate_pairs": pairs.candidates}
        if column is not None and pairs.candidates:
            facts.update(
                pairs_checked=pairs.candidates,
                pairs_rejected=pairs.rejected,
                check="exact_jaccard" if p.verify else "signature_estimate",
                check_cut=round(cut, 4),
            )
        facts.update(
            clusters=comp.clusters,
            clustered_docs=comp.clustered_docs,
            duplicates=duplicates,
            components="engine",
            component_rounds=comp.rounds,
        )
        log.info("%s: %s", self.label, facts)
        return MinhashState(facts=facts, drop_dir=drop_dir)

    def apply(self, table: pa.Table, state: MinhashState) -> pa.Table:
        if state.drop_dir is not None:
            state = _part_state(state, table)
        out = mark_duplicates(table, state, f"{self.label}:near_duplicate")
        ids = c.id_column(table)
        where = pc.index_in(ids, value_set=state.member_ids)
        cluster = pc.coalesce(pc.take(state.member_cluster, where), ids) if len(state.member_ids) else ids
        size = (
            pc.coalesce(pc.take(state.member_size, where), pa.scalar(1, pa.int64()))
            if len(state.member_ids)
            else pa.array(np.ones(table.num_rows, np.int64))
        )
        for name, arr in ((f"{self.label}.cluster_id", cluster), (f"{self.label}.cluster_size", size)):
            out = (
                out.set_column(out.column_names.index(name), name, arr)
                if name in out.column_names
                else out.append_column(name, arr)
            )
        return out

    def summary(self, state: MinhashState) -> dict[str, Any]:
        return dict(state.facts)


def _part_state(state: MinhashState, table: pa.Table) -> MinhashState:
    """The arrays of ``state`` for one part, from its membership file (see ``components.part_lists``)."""
    t = cc.part_lists(state.drop_dir or ".", table)
    if t is None:
        return MinhashState(facts=state.facts)
    ids = c.id_column(t)
    cluster = t.column(cc.CLUSTER_ID).combine_chunks()
    # verify: the greedy survivor (duplicate_of); else the cluster's first document
    target = (
        t.column(schema.DUPLICATE_OF).combine_chunks() if schema.DUPLICATE_OF in t.column_names else cluster
    )
    drop = pc.not_equal(ids, target)
    return MinhashState(
        drop_ids=ids.filter(drop),
        duplicate_of=target.filter(drop),
        facts=state.facts,
        member_ids=ids,
        member_cluster=cluster,
        member_size=t.column(cc.CLUSTER_SIZE).combine_chunks(),
    )
