"""``dsir_v1``: data selection by importance resampling toward a target (Xie et al. 2023, DSIR).

Features: the lower-cased ``\\w+`` words of a document (the dedup tokenizer,
:func:`curate.dedup._common.word_hashes`), as unigrams and bigrams, hashed into ``buckets`` bins
(default ``2^16``; unigrams and bigrams share the bins, as in DSIR). Two bag-of-words models are fitted,
one on the *target sample* and one on a sample of the *raw input* (``target:`` in the pipeline,
:mod:`curate.targeting`), with add-one (Laplace) smoothing:

    p(f) = (count(f) + 1) / (total + buckets)

A document's score is its **log importance weight**, the sum over its features (with multiplicity) of
``log p_target(f) - log p_raw(f)``: column ``dsir_v1.log_weight`` (natural log; not normalised by
length, as in DSIR, so long documents get larger weights of either sign).

Selection needs the whole corpus, so the scorer stores what both of DSIR's selections need:

* top-k: keep the ``k`` largest ``log_weight`` (:func:`top_k`; in a proxy recipe,
  ``{column: dsir_v1.log_weight, min_quantile: 0.9}`` keeps the top 10%);
* importance resampling without replacement, DSIR's default: the Gumbel-top-k trick (Kool et al. 2019):
  ``resample_key = log_weight + G`` with ``G`` a standard Gumbel draw that is a pure function of
  ``(seed, id)``; the ``k`` largest keys are a sample of ``k`` documents drawn with probability
  proportional to the importance weight (:func:`importance_resample`; in a recipe,
  ``{column: dsir_v1.resample_key, min_quantile: 0.9}``).

Both follow DSIR and inherit its **length bias**: a sum over features grows with the document, so when most
features lean toward the raw side (a web input against a clean target), a quantile of ``log_weight`` or
``resample_key`` keeps mostly short documents (on the web input toward Wikipedia, half of the documents
by ``resample_key`` were 29% of the tokens). ``mean_log_weight`` is ``log_weight`` over the document's
number of features (0 without features): the per-feature log ratio, comparable across lengths; a
quantile of it (``{column: dsir_v1.mean_log_weight, min_quantile: 0.5}``) selects by how target-like a
document is, not by how long.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Resources, Scorer
from curate.io.files import atomic_save_npz, atomic_write_json
from curate.targeting.fitted import TargetFitted, TargetSample

DEFAULT_BUCKETS = 1 << 16
# Odd 64-bit multiplier that mixes the first word of a bigram before adding the second.
_BIGRAM_MIX = np.uint64(0x9E3779B97F4A7C15)


def features(texts: list[str] | pa.Array | pa.ChunkedArray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """``(bucket ids, offsets)``: each document's hashed unigram then bigram features, flat, with the
    ``n + 1`` offsets of each document's features. A word ``w`` goes to ``hash(w) % buckets``; a bigram
    ``(a, b)`` to ``(hash(a) * M + hash(b)) % buckets`` (``M`` an odd 64-bit constant, wrapping)."""
    from curate.dedup import _common as c

    arr = texts if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(texts, pa.string())
    words, off = c.word_hashes(arr)
    lens = np.diff(off)
    n = len(lens)
    doc = np.repeat(np.arange(n), lens)
    first_of_pair = np.ones(len(words), dtype=bool)
    first_of_pair[off[1:][lens > 0] - 1] = False  # a document's last word starts no bigram
    left = np.flatnonzero(first_of_pair)
    with np.errstate(over="ignore"):
        bigrams = words[left] * _BIGRAM_MIX + words[left + 1]
    b = np.uint64(buckets)
    ids = np.concatenate([words % b, bigrams % b]).astype(np.int64)
    owner = np.concatenate([doc, doc[left]])
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return ids[order], offsets


def bucket_counts(texts: list[str], buckets: int) -> np.ndarray:
    """Feature counts per bucket over ``texts`` (float64, length ``buckets``)."""
    ids, _ = features(texts, buckets)
    return np.bincount(ids, minlength=buckets).astype(np.float64)


def log_probs(counts: np.ndarray) -> np.ndarray:
    """Add-one (Laplace) smoothed log probabilities: ``log((count + 1) / (total + buckets))``."""
    return np.log(counts + 1.0) - math.log(float(counts.sum()) + len(counts))


def log_weights(texts: list[str] | pa.Array | pa.ChunkedArray, log_ratio: np.ndarray) -> np.ndarray:
    """Each document's log importance weight: the sum of ``log_ratio`` over its features."""
    return log_weights_and_counts(texts, log_ratio)[0]


def log_weights_and_counts(
    texts: list[str] | pa.Array | pa.ChunkedArray, log_ratio: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each document's log importance weight and its number of features."""
    ids, off = features(texts, len(log_ratio))
    contrib = log_ratio[ids]
    sums = np.concatenate([[0.0], np.cumsum(contrib)])
    return sums[off[1:]] - sums[off[:-1]], np.diff(off)


def gumbel(ids: list[str | None], seed: int) -> np.ndarray:
    """A standard Gumbel draw per document, a pure function of ``(seed, id)``."""
    import xxhash

    h = np.fromiter(
        (xxhash.xxh64_intdigest(f"{seed}:{i or ''}".encode()) for i in ids), dtype=np.uint64, count=len(ids)
    )
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)  # uniform in (0, 1)
    return -np.log(-np.log(u))


def top_k(log_weight: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest weights, largest first (ties: lower index first)."""
    order = np.lexsort((np.arange(len(log_weight)), -np.asarray(log_weight, dtype=np.float64)))
    return order[: max(0, k)]


def importance_resample(log_weight: np.ndarray, ids: list[str | None], k: int, seed: int) -> np.ndarray:
    """DSIR's importance resampling without replacement (Gumbel-top-k): ``k`` indices drawn with
    probability proportional to ``exp(log_weight)``, reproducible from ``seed`` and the ids."""
    return top_k(np.asarray(log_weight, dtype=np.float64) + gumbel(ids, seed), k)


@dataclass
class DsirParams:
    """``model``: the fitted ``.npz`` (``log_ratio`` per bucket); empty: fitted by the run from the
    pipeline's ``target:`` sample. ``buckets``: hashed feature bins. ``seed``: of the Gumbel noise in
    ``resample_key``. ``min_log_weight``: the ``filter:`` reference threshold (absolute)."""

    model: str = ""
    buckets: int = field(default=DEFAULT_BUCKETS, metadata=bounds(1, 1 << 26))
    seed: int = 0
    min_log_weight: float | None = None


@STAGES.add("dsir_v1")
class Dsir(TargetFitted, Scorer):
    """Log importance weight of a document toward the target (``log_weight``), its importance-
    resampling key (``resample_key``) and its per-feature mean (``mean_log_weight``); see the module
    docstring."""

    Params = DsirParams
    resources = Resources(num_cpus=1.0)
    _unpicklable = ("_log_ratio",)

    def output_fields(self) -> list[str]:
        return ["log_weight", "resample_key", "mean_log_weight"]

    def fit_key(self) -> dict[str, Any]:
        return {"buckets": self.params.buckets}

    def fit(self, sample: TargetSample, out_dir: Path) -> str:
        b = self.params.buckets
        tc, rc = bucket_counts(sample.target_texts, b), bucket_counts(sample.raw_texts, b)
        path = out_dir / "dsir.npz"
        atomic_save_npz(path, log_ratio=log_probs(tc) - log_probs(rc), target_counts=tc, raw_counts=rc)
        facts = {
            "buckets": b,
            "target_docs": len(sample.target_texts),
            "raw_docs": len(sample.raw_texts),
            "target_features": int(tc.sum()),
            "raw_features": int(rc.sum()),
            "smoothing": "add-one (Laplace)",
        }
        atomic_write_json(out_dir / "dsir.json", facts, indent=1)
        return str(path)

    def setup(self) -> None:
        if not self.params.model:
            raise ValueError(f"{self.label}: no model; set params.model or add a target: section")
        ratio = np.load(self.params.model)["log_ratio"]
        if len(ratio) != self.params.buckets:
            raise ValueError(
                f"{self.label}: {self.params.model} has {len(ratio)} buckets, params.buckets is "
                f"{self.params.buckets}"
            )
        self._log_ratio = ratio

    def score(self, table: pa.Table) -> dict[str, Any]:
        self.ensure_setup()
        lw, n = log_weights_and_counts(table.column(schema.TEXT), self._log_ratio)
        key = lw + gumbel(table.column(schema.ID).to_pylist(), self.params.seed)
        mean = np.divide(lw, n, out=np.zeros(len(lw)), where=n > 0)
        return {
            "log_weight": pa.array(lw, pa.float64()),
            "resample_key": pa.array(key, pa.float64()),
            "mean_log_weight": pa.array(mean, pa.float64()),
        }

    def reference_rules(self) -> list[Rule]:
        if self.params.min_log_weight is None:
            return []
        return [
            Rule(
                column=schema.column_name(self.label, "log_weight"),
                min=self.params.min_log_weight,
                reason="low_importance",
            )
        ]
