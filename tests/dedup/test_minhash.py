"""minhash_dedup_v1: near-duplicates found, survivors deterministic, verify guarantees, Ray == inline."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from curate.dedup import _common as c
from curate.dedup._minhash_math import candidate_probability, optimal_bands, permutations, signatures
from curate.dedup.minhash import MinhashDedup, MinhashParams
from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import make_table

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
    "river",
    "mountain",
    "valley",
    "forest",
    "ocean",
    "desert",
    "island",
    "city",
]


def _doc(rng: np.random.Generator, n: int = 120) -> list[str]:
    return list(rng.choice(WORDS, size=n))


def _corpus(seed: int = 0) -> tuple[list[str], list[int | None]]:
    """Originals, then near copies (2 words changed of 120) of some; returns texts and expected dup index."""
    rng = np.random.default_rng(seed)
    originals = [_doc(rng) for _ in range(30)]
    texts, expect = [" ".join(d) for d in originals], [None] * 30
    for i in range(0, 30, 3):
        copy = list(originals[i])
        copy[60] = "CHANGED"
        texts.append(" ".join(copy).upper() + " !!")  # case and punctuation never matter
        expect.append(i)
    return texts, expect


def test_ngram_windows_stay_inside_documents():
    tokens = np.arange(1, 8, dtype=np.uint64)
    h, off = c.ngram_hashes(tokens, np.array([0, 3, 3, 7]), 3)
    assert off.tolist() == [0, 1, 1, 3]
    h2, _ = c.ngram_hashes(np.array([1, 2, 3], np.uint64), np.array([0, 3]), 3)
    assert h[0] == h2[0]  # same gram, same hash, whatever the neighbours
    short, off_s = c.ngram_hashes(np.array([5, 6], np.uint64), np.array([0, 2]), 5)
    assert off_s.tolist() == [0, 1]
    assert len(short) == 1


def test_word_hashes_are_lower_cased_word_runs_per_document():
    h, off = c.word_hashes(pa.array(["Ab_1 cd", "x", "", None, "e--F9"]))
    assert off.tolist() == [0, 2, 3, 3, 3, 5]
    assert h.tolist() == pl.Series(["ab_1", "cd", "x", "e", "f9"]).hash(seed=0).to_list()


def test_banding_math():
    assert candidate_probability(0.8, 14, 8) == pytest.approx(0.9235, abs=1e-4)
    assert optimal_bands(0.8, 112) == (9, 12)


@pytest.mark.parametrize("verify", [False, True])
def test_near_duplicates_rejected_with_duplicate_of(verify, inline_engine, tmp_path):
    texts, expect = _corpus()
    stage = MinhashDedup(MinhashParams(verify=verify))
    parts, state = run_global(stage, split(make_table(texts), [17, 23]), inline_engine, tmp_path)
    reasons = column(parts, "__reject__")
    assert reasons == [None if e is None else "minhash_dedup_v1:near_duplicate" for e in expect]
    assert column(parts, "duplicate_of") == [None if e is None else f"d{e}" for e in expect]
    sizes = column(parts, "minhash_dedup_v1.cluster_size")
    cluster = column(parts, "minhash_dedup_v1.cluster_id")
    assert sizes[:30] == [2 if i % 3 == 0 else 1 for i in range(30)]
    assert cluster[:3] == ["d0", "d1", "d2"]
    assert cluster[30] == "d0"
    assert state.facts["duplicates"] == 10
    assert state.facts["clusters"] == 10


def test_verify_drops_pairs_below_threshold(inline_engine, tmp_path):
    rng = np.random.default_rng(1)
    base = _doc(rng, 200)
    near = list(base)
    for k in range(0, 200, 12):  # ~17 changed words: Jaccard of 5-grams around 0.6
        near[k] = "Z"
    texts = [" ".join(base), " ".join(near)]
    loose = MinhashDedup(MinhashParams(estimate_margin=None, bands=20, rows=2))
    parts, st = run_global(loose, [make_table(texts)], inline_engine, tmp_path / "a")
    assert column(parts, "__reject__") == [None, "minhash_dedup_v1:near_duplicate"]
    strict = MinhashDedup(MinhashParams(verify=True, bands=20, rows=2))
    parts, st = run_global(strict, [make_table(texts)], inline_engine, tmp_path / "b")
    assert column(parts, "__reject__") == [None, None]
    assert st.facts["pairs_checked"] == 1
    assert st.facts["pairs_rejected"] == 1


def test_chain_without_verify_is_one_cluster_with_first_survivor(inline_engine, tmp_path):
    texts, _ = _corpus(3)
    t = [texts[30], texts[0], texts[31]]  # copy of 0, original 0, copy of 3 (unrelated)
    parts, _ = run_global(MinhashDedup(), [make_table(t)], inline_engine, tmp_path)
    assert column(parts, "duplicate_of") == [None, "d0", None]


@pytest.mark.ray
def test_ray_matches_inline(ray_engine, inline_engine, tmp_path):
    texts, _expect = _corpus(5)
    table = make_table(texts * 3)
    sizes = [10, 50, 0, 60]
    a, sa = run_global(
        MinhashDedup(MinhashParams(verify=True)), split(table, sizes), inline_engine, tmp_path / "a"
    )
    b, sb = run_global(
        MinhashDedup(MinhashParams(verify=True, num_partitions=3)),
        split(table, sizes),
        ray_engine,
        tmp_path / "b",
    )
    for col in ("__reject__", "duplicate_of", "minhash_dedup_v1.cluster_id", "minhash_dedup_v1.cluster_size"):
        assert column(a, col) == column(b, col)
    assert sa.facts == sb.facts
    assert column(b, "__reject__").count(None) == 30


def test_signatures_are_each_documents_minimum_over_its_shingles():
    rng = np.random.default_rng(3)
    lens = np.array([0, 1, 5, 0, 40_000, 3, 17_000, 2])  # empty docs, and docs wider than one chunk
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    shingles = rng.integers(0, 2**63, size=int(offsets[-1]), dtype=np.uint64) * np.uint64(2)
    a, b = permutations(16, seed=5)
    got = signatures(shingles, offsets, a, b)
    with np.errstate(over="ignore"):
        for d in range(len(lens)):
            s = shingles[offsets[d] : offsets[d + 1]]
            want = (s[:, None] * a + b).min(axis=0) if len(s) else np.full(16, 2**64 - 1, np.uint64)
            assert np.array_equal(got[d], want), d
