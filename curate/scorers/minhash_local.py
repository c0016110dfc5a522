"""A small, vectorized MinHash signature function for the synthetic-data diversity stage.

Kept local to ``curate.scorers`` (the dedup package grows its own MinHash-LSH concurrently); the two can
be unified later. Shingles are word n-grams hashed from a stable per-word hash (xxh64), so signatures
do not depend on how documents were batched.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.scorers.degeneration import ngram_keys

EMPTY = np.uint32(0xFFFFFFFF)


def _word_hashes(text: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    words = pc.utf8_split_whitespace(
        pc.replace_substring_regex(pc.utf8_lower(pc.fill_null(text, "")), r"[^\w]+", " ")
    )
    flat = pc.list_flatten(words)
    doc = np.asarray(pc.list_parent_indices(words).to_numpy(zero_copy_only=False), dtype=np.int64)
    enc = pc.dictionary_encode(flat)
    enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
    table = np.fromiter(
        (xxhash.xxh64_intdigest(w.encode()) for w in enc.dictionary.to_pylist()),
        np.uint64,
        count=len(enc.dictionary),
    )
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    keep = np.asarray(pc.greater(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False), dtype=bool)
    return table[codes[keep]], doc[keep]


def minhash_signatures(
    text: pa.Array | pa.ChunkedArray,
    *,
    num_perm: int = 64,
    shingle: int = 5,
    seed: int = 1,
    block: int = 65_536,
) -> np.ndarray:
    """``(len(text), num_perm)`` uint32 MinHash signatures of word ``shingle``-grams.

    Hash family: multiply-shift ``((a*h + b) mod 2^64) >> 32`` with random odd ``a``. A text with fewer
    than ``shingle`` words uses its single shortened shingle (all its words); an empty text gets the
    all-``0xFFFFFFFF`` signature, which :func:`is_empty` recognises.
    """
    n = len(text)
    ids, doc = _word_hashes(text)
    keys, kdoc = ngram_keys(ids, doc, shingle)
    # Short documents: one shingle made of all their words.
    counts = np.bincount(doc, minlength=n)
    short = np.flatnonzero((counts > 0) & (counts < shingle))
    if len(short):
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        extra = []
        for di in short:
            h = np.uint64(counts[di])
            with np.errstate(over="ignore"):
                for w in ids[starts[di] : starts[di] + counts[di]]:
                    h = h * np.uint64(0x9E3779B97F4A7C15) + w
            extra.append(h)
        keys = np.r_[keys, np.array(extra, np.uint64)]
        kdoc = np.r_[kdoc, short]
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    sig = np.full((n, num_perm), EMPTY, dtype=np.uint32)
    order = np.argsort(kdoc, kind="stable")
    keys, kdoc = keys[order], kdoc[order]
    for lo in range(0, len(keys), block):
        k, d = keys[lo : lo + block], kdoc[lo : lo + block]
        with np.errstate(over="ignore"):
            hv = ((k[:, None] * a[None, :] + b[None, :]) >> np.uint64(32)).astype(np.uint32)
        # Rows are grouped by document: reduce each run, then merge runs cut by the block edge.
        run_start = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        runs = np.minimum.reduceat(hv, run_start, axis=0)
        udoc = d[run_start]
        sig[udoc] = np.minimum(sig[udoc], runs)
    return sig


def is_empty(sig: np.ndarray) -> np.ndarray:
    return np.all(sig == EMPTY, axis=1)


def band_keys(sig: np.ndarray, bands: int) -> np.ndarray:
    """``(n, bands)`` uint64 keys: each band's rows hashed together (band index mixed in)."""
    n, p = sig.shape
    rows = p // bands
    out = np.zeros((n, bands), np.uint64)
    with np.errstate(over="ignore"):
        for j in range(bands):
            h = np.full(n, np.uint64(j + 1) * np.uint64(0xC2B2AE3D27D4EB4F), np.uint64)
            for r in range(rows):
                h = (h ^ sig[:, j * rows + r].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            out[:, j] = h
    return out
