"""dsir_v1: hashed n-gram importance weights computed by hand on a toy vocabulary, and its selections."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from curate.scorers.dsir import (
    DEFAULT_BUCKETS,
    Dsir,
    DsirParams,
    bucket_counts,
    features,
    gumbel,
    importance_resample,
    top_k,
)
from curate.targeting.fitted import TargetSample

TARGET = ["apple banana", "apple apple"]
RAW = ["banana cherry", "cherry cherry", "cherry"]
B = DEFAULT_BUCKETS


def _fitted(tmp_path) -> Dsir:
    stage = Dsir(DsirParams())
    stage.use_model(stage.fit(TargetSample(target_texts=TARGET, raw_texts=RAW), tmp_path))
    return stage


def test_features_are_unigrams_then_bigrams_without_collisions_on_the_toy_vocabulary():
    ids, off = features(["apple banana cherry", "", "apple"], B)
    assert off.tolist() == [0, 5, 5, 6]  # 3 unigrams + 2 bigrams; none; 1 unigram
    uni, _ = features(["apple", "banana", "cherry"], B)
    assert ids[:3].tolist() == uni.tolist()
    assert ids[5] == uni[0]
    # every toy feature has its own bucket, so the counts below are exact
    every, _ = features(
        ["apple banana", "apple apple", "banana cherry", "cherry cherry", "apple banana cherry"], B
    )
    assert len(set(every.tolist())) == 7  # apple, banana, cherry and the bigrams ab, aa, bc, cc


def test_counts_per_bucket():
    t = bucket_counts(TARGET, B)
    r = bucket_counts(RAW, B)
    assert t.sum() == 6
    assert r.sum() == 7
    apple, banana, cherry = features(["apple", "banana", "cherry"], B)[0].tolist()
    assert (t[apple], t[banana], t[cherry]) == (3, 1, 0)
    assert (r[apple], r[banana], r[cherry]) == (0, 1, 4)


def test_log_weights_equal_the_hand_computation(tmp_path):
    # Laplace: p(f) = (count + 1) / (total + B); log w = sum_f log p_target(f) - log p_raw(f).
    # "apple banana cherry": apple, banana, cherry, (apple banana), (banana cherry)
    #   target counts 3, 1, 0, 1, 0 (total 6); raw counts 0, 1, 4, 0, 1 (total 7)
    by_hand = math.log(4 * 2 * 1 * 2 * 1) - math.log(1 * 2 * 5 * 1 * 2) + 5 * math.log((7 + B) / (6 + B))
    # "apple apple": apple, apple, (apple apple): target 3, 3, 1; raw 0, 0, 0
    by_hand_aa = math.log(4 * 4 * 2) - math.log(1) + 3 * math.log((7 + B) / (6 + B))
    stage = _fitted(tmp_path)
    out = stage.process(pa.table({"id": ["x", "y", "z"], "text": ["apple banana cherry", "apple apple", ""]}))
    lw = out.column("dsir_v1.log_weight").to_pylist()
    assert lw[0] == pytest.approx(by_hand, abs=1e-12)
    assert lw[1] == pytest.approx(by_hand_aa, abs=1e-12)
    assert lw[2] == 0.0
    keys = out.column("dsir_v1.resample_key").to_pylist()
    assert keys == pytest.approx((np.array(lw) + gumbel(["x", "y", "z"], 0)).tolist(), abs=1e-12)
    # the per-feature mean: 5 features, 3 features, none (0, not a division by zero)
    mean = out.column("dsir_v1.mean_log_weight").to_pylist()
    assert mean == pytest.approx([by_hand / 5, by_hand_aa / 3, 0.0], abs=1e-12)
    assert (tmp_path / "dsir.json").exists()


def test_gumbel_noise_is_a_function_of_seed_and_id():
    h = xxhash.xxh64_intdigest(b"7:doc-1")
    u = ((h >> 11) + 0.5) / 2**53
    assert gumbel(["doc-1"], 7)[0] == pytest.approx(-math.log(-math.log(u)), abs=1e-12)
    assert gumbel(["doc-1"], 8)[0] != gumbel(["doc-1"], 7)[0]


def test_top_k_and_importance_resampling():
    lw = np.log(np.array([1.0, 2.0, 3.0]))
    assert top_k(lw, 2).tolist() == [2, 1]
    assert top_k(np.zeros(3), 2).tolist() == [0, 1]  # ties: lower index first
    ids = ["a", "b", "c"]
    assert (
        importance_resample(lw, ids, 2, seed=3).tolist() == importance_resample(lw, ids, 2, seed=3).tolist()
    )
    # Gumbel-top-1 draws index i with probability w_i / sum(w): 1/6, 2/6, 3/6.
    picks = np.array([importance_resample(lw, ids, 1, seed=s)[0] for s in range(6000)])
    freq = np.bincount(picks, minlength=3) / len(picks)
    assert freq == pytest.approx([1 / 6, 2 / 6, 3 / 6], abs=0.025)


def test_a_model_with_other_buckets_is_refused(tmp_path):
    stage = _fitted(tmp_path)
    wrong = Dsir(DsirParams(model=stage.params.model, buckets=1024))
    with pytest.raises(ValueError, match=r"65536 buckets, params.buckets is 1024"):
        wrong.setup()


def test_reference_rule():
    rules = Dsir(DsirParams(model="m.npz", min_log_weight=0.5)).reference_rules()
    assert [(r.column, r.min, r.reason) for r in rules] == [("dsir_v1.log_weight", 0.5, "low_importance")]
