"""``diversity_v1``: near-duplicates within a synthetic set and against its seed set (MinHash).

A generator asked for many samples repeats itself, and a "rephrase" can copy its seed almost verbatim.
This global stage finds both:

* ``collect``: per part, ``id`` and a MinHash signature of word 5-grams (never the texts);
* ``reduce``: LSH banding over all signatures; candidate pairs are verified by signature agreement
  (an estimate of Jaccard similarity) and joined into clusters; the seed set (a JSON Lines path or glob,
  optional) is signed the same way and matched band by band;
* ``apply``: adds ``diversity_v1.max_sim_within`` and ``diversity_v1.max_sim_seed`` and rejects
  ``diversity_v1:near_duplicate`` (all but the first document of a cluster, in input order, with
  ``duplicate_of``) and ``diversity_v1:copies_seed`` (estimated similarity to a seed >= ``threshold``).

The reduce runs on the driver over the signature tables (``num_perm`` x 4 bytes per document), which
suits synthetic sets of up to a few million documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.stage import GlobalStage, with_rejections
from curate.scorers.minhash_local import band_keys, is_empty, minhash_signatures


@dataclass
class DiversityParams:
    """``threshold``: estimated Jaccard similarity that makes two texts near-duplicates. ``num_perm``
    and ``bands`` set the MinHash/LSH shape (``num_perm`` divisible by ``bands``). ``seed_path``: the
    seed documents (JSON Lines path or glob) the synthetic texts were made from; ``seed_limit`` caps how
    many are read. ``reject_within`` / ``reject_seed`` switch the two rejections (the columns are always
    written)."""

    threshold: float = field(default=0.7, metadata=bounds(0, 1, lo_open=True))
    num_perm: int = 64
    bands: int = 16
    shingle: int = 5
    seed_path: str | None = None
    seed_limit: int | None = None
    reject_within: bool = True
    reject_seed: bool = True


def _candidate_pairs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, first document sharing i's key) over every band, for rows with a shared band key."""
    left, right = [], []
    n = keys.shape[0]
    if n == 0:  # an empty corpus (or one whose every document was rejected before this stage)
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    for j in range(keys.shape[1]):
        order = np.argsort(keys[:, j], kind="stable")
        k = keys[order, j]
        start = np.r_[True, k[1:] != k[:-1]]
        first = order[np.flatnonzero(start)][np.cumsum(start) - 1]
        dup = ~start
        left.append(order[dup])
        right.append(first[dup])
    if not left:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = (
        np.unique(np.stack([np.concatenate(left), np.concatenate(right)], axis=1), axis=0)
        if n
        else np.zeros((0, 2), np.int64)
    )
    return pairs[:, 0], pairs[:, 1]


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Root (smallest index) of each node's connected component (union-find with path halving)."""
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


@STAGES.add("diversity_v1")
class Diversity(GlobalStage):
    """Near-duplicate synthetic texts (within the set and against the seed set)."""

    Params = DiversityParams

    def __init__(self, params: Any = None, *, label: str | None = None) -> None:
        super().__init__(params, label=label)
        if self.params.num_perm % self.params.bands:
            raise ValueError(
                f"{self.label}: num_perm {self.params.num_perm} is not divisible by bands {self.params.bands}"
            )

    def _sign(self, text: pa.Array | pa.ChunkedArray) -> np.ndarray:
        return minhash_signatures(text, num_perm=self.params.num_perm, shingle=self.params.shingle)

    def collect(self, table: pa.Table) -> pa.Table:
        sig = self._sign(table.column(schema.TEXT))
        flat = pa.array(sig.reshape(-1), pa.uint32())
        return pa.table(
            {
                schema.ID: table.column(schema.ID),
                "sig": pa.FixedSizeListArray.from_arrays(flat, self.params.num_perm),
            }
        )

    def reduce(self, key_paths: list[str], engine: Any) -> pa.Table:
        tables = [pq.read_table(p) for p in key_paths]
        keys = pa.concat_tables(tables) if tables else pa.table({schema.ID: pa.array([], pa.string())})
        ids = keys.column(schema.ID)
        n = len(ids)
        p = self.params
        sig = (
            np.asarray(pc.list_flatten(keys.column("sig")).to_numpy(), np.uint32).reshape(n, p.num_perm)
            if n
            else np.zeros((0, p.num_perm), np.uint32)
        )
        empty = is_empty(sig)
        bk = band_keys(sig, p.bands)
        bk[empty] = (
            np.arange(int(empty.sum()), dtype=np.uint64)[:, None] * np.uint64(0x100000001)
            + np.arange(p.bands, dtype=np.uint64)[None, :]
            + np.uint64(0xF0000000_00000000)
        )  # never collide
        a, b = _candidate_pairs(bk)
        sim = (sig[a] == sig[b]).mean(axis=1) if len(a) else np.zeros(0)
        max_within = np.zeros(n)
        np.maximum.at(max_within, a, sim)
        np.maximum.at(max_within, b, sim)
        close = sim >= p.threshold
        root = _components(n, a[close], b[close])
        max_seed = self._seed_similarity(sig, bk, empty)
        dup_of = np.where(root != np.arange(n), root, -1)
        dup_ids = pc.take(ids, pa.array(np.where(dup_of >= 0, dup_of, 0))).to_pylist() if n else []
        return pa.table(
            {
                schema.ID: ids,
                "max_sim_within": pa.array(max_within, pa.float64()),
                "max_sim_seed": pa.array(max_seed, pa.float64()),
                "duplicate_of": pa.array(
                    [d if k >= 0 else None for d, k in zip(dup_ids, dup_of, strict=True)], pa.string()
                ),
            }
        )

    def _seed_similarity(self, sig: np.ndarray, bk: np.ndarray, empty: np.ndarray) -> np.ndarray:
        p = self.params
        out = np.zeros(len(sig))
        if not p.seed_path or not len(sig):
            return out
        from curate.io.readers import read_table

        seeds = read_table(p.seed_path, limit=p.seed_limit)
        ssig = self._sign(seeds.column(schema.TEXT))
        ssig = ssig[~is_empty(ssig)]
        if not len(ssig):
            return out
        sbk = band_keys(ssig, p.bands)
        for j in range(p.bands):
            order = np.argsort(sbk[:, j], kind="stable")
            sk = sbk[order, j]
            pos = np.searchsorted(sk, bk[:, j]).clip(0, len(sk) - 1)
            hit = (sk[pos] == bk[:, j]) & ~empty
            rows = np.flatnonzero(hit)
            if len(rows):
                s = (sig[rows] == ssig[order[pos[rows]]]).mean(axis=1)
                out[rows] = np.maximum(out[rows], s)
        return out

    def apply(self, table: pa.Table, state: pa.Table) -> pa.Table:
        idx = pc.index_in(table.column(schema.ID), value_set=state.column(schema.ID))
        if pc.any(pc.is_null(idx)).as_py():
            raise KeyError(f"{self.label}: some ids of this part were not collected")
        row = lambda c: pc.take(state.column(c), idx)  # noqa: E731
        within, seed, dup = row("max_sim_within"), row("max_sim_seed"), row("duplicate_of")
        p = self.params
        reasons = np.full(table.num_rows, None, dtype=object)
        if p.reject_seed:
            reasons[np.asarray(pc.greater_equal(seed, p.threshold).to_numpy(zero_copy_only=False))] = (
                f"{self.label}:copies_seed"
            )
        if p.reject_within:
            is_dup = np.asarray(pc.is_valid(dup).to_numpy(zero_copy_only=False)) & (reasons == None)  # noqa: E711
            reasons[is_dup] = f"{self.label}:near_duplicate"
        table = table.append_column(schema.column_name(self.label, "max_sim_within"), within)
        table = table.append_column(schema.column_name(self.label, "max_sim_seed"), seed)
        return with_rejections(table, pa.array(reasons, pa.string()), **{schema.DUPLICATE_OF: dup})

    def summary(self, state: pa.Table) -> dict[str, Any]:
        return {
            "documents": state.num_rows,
            "near_duplicates": int(pc.sum(pc.is_valid(state.column("duplicate_of"))).as_py() or 0),
            "copies_seed": int(
                pc.sum(pc.greater_equal(state.column("max_sim_seed"), self.params.threshold)).as_py() or 0
            ),
        }
