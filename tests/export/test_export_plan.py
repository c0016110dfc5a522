"""Shuffle, split and shard planning."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from curate.export.plan import expand_ranges, shard_by_size, split_order


def test_split_order_is_a_seeded_permutation():
    a = split_order(100, seed=1, val_fraction=0.1)
    assert a["validation"].size == 10
    assert a["train"].size == 90
    assert sorted(np.concatenate([a["train"], a["validation"]]).tolist()) == list(range(100))
    b = split_order(100, seed=1, val_fraction=0.1)
    assert all(np.array_equal(a[s], b[s]) for s in a)
    assert not np.array_equal(a["train"], split_order(100, seed=2, val_fraction=0.1)["train"])


def test_split_order_small_runs():
    assert split_order(3, seed=0, val_fraction=0.01)["validation"].size == 1
    assert split_order(1, seed=0, val_fraction=0.5)["validation"].size == 0
    assert split_order(10, seed=0, val_fraction=0.0)["validation"].size == 0


def test_shard_by_size_examples():
    assert [s.tolist() for s in shard_by_size(np.array([5, 5, 5, 5, 5]), target=10)] == [[0, 1], [2, 3], [4]]
    assert [s.tolist() for s in shard_by_size(np.array([25, 1, 1, 30]), target=10)] == [[0], [1, 2, 3]]
    assert [s.tolist() for s in shard_by_size(np.array([1] * 5), target=100, max_items=2)] == [
        [0, 1],
        [2, 3],
        [4],
    ]
    assert shard_by_size(np.array([], dtype=np.int64), target=10) == []


@given(
    st.lists(st.integers(0, 50), max_size=60), st.integers(1, 120), st.one_of(st.none(), st.integers(1, 7))
)
def test_shard_by_size_properties(sizes, target, max_items):
    shards = shard_by_size(np.array(sizes, dtype=np.int64), target=target, max_items=max_items)
    assert np.concatenate(shards).tolist() == list(range(len(sizes))) if shards else sizes == []
    for s in shards[:-1]:
        total = sum(sizes[i] for i in s)
        full = max_items is not None and s.size == max_items
        assert full or target <= total < target + sizes[s[-1]]


def test_expand_ranges():
    assert expand_ranges(np.array([10, 0, 5]), np.array([2, 0, 3])).tolist() == [10, 11, 5, 6, 7]
    assert expand_ranges(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).tolist() == []
