"""exact_dedup_v1: reasons, survivors and duplicate_of on small tables; inline and Ray agree."""

from __future__ import annotations

import pytest

from curate.core.registry import STAGES
from curate.dedup.exact import ExactDedup, ExactParams
from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import make_table

TEXTS = [
    "Hello   World",  # d0 kept
    "another doc",  # d1 kept
    "hello world",  # d2 duplicate of d0 (case, whitespace)
    "  HELLO\nWORLD ",  # d3 duplicate of d0
    "another doc!",  # d4 kept (punctuation differs)
    "Another Doc",  # d5 duplicate of d1
    "",  # d6 kept
    "",  # d7 duplicate of d6
]


def test_registered():
    assert STAGES.get("exact_dedup_v1") is ExactDedup


@pytest.mark.parametrize("sizes", [[8], [3, 5], [1, 1, 1, 1, 1, 1, 1, 1], [0, 4, 0, 4]])
def test_survivors_reasons_duplicate_of(sizes, inline_engine, tmp_path):
    parts, state = run_global(ExactDedup(), split(make_table(TEXTS), sizes), inline_engine, tmp_path)
    assert column(parts, "__reject__") == [
        None,
        None,
        "exact_dedup_v1:duplicate",
        "exact_dedup_v1:duplicate",
        None,
        "exact_dedup_v1:duplicate",
        None,
        "exact_dedup_v1:duplicate",
    ]
    assert column(parts, "duplicate_of") == [None, None, "d0", "d0", None, "d1", None, "d6"]
    assert ExactDedup().summary(state) == {"groups": 3, "duplicates": 4}


def test_raw_mode_keeps_case_variants(inline_engine, tmp_path):
    stage = ExactDedup(ExactParams(normalize=False))
    parts, _ = run_global(stage, [make_table(["a b", "A b", "a b", "a  b"])], inline_engine, tmp_path)
    assert column(parts, "__reject__") == [None, None, "exact_dedup_v1:duplicate", None]
    assert column(parts, "duplicate_of") == [None, None, "d0", None]


def test_many_partitions_same_result(inline_engine, tmp_path):
    texts = [f"doc {i % 37}" for i in range(500)]
    stage = ExactDedup(ExactParams(num_partitions=7))
    parts, state = run_global(stage, split(make_table(texts), [100, 250, 150]), inline_engine, tmp_path)
    dup = column(parts, "duplicate_of")
    assert dup == [None if i < 37 else f"d{i % 37}" for i in range(500)]
    assert state.facts == {"groups": 37, "duplicates": 463}


@pytest.mark.ray
def test_ray_matches_inline(ray_engine, inline_engine, tmp_path):
    texts = [f"Doc  {i % 53}" if i % 3 else f"doc {i % 53}" for i in range(900)]
    table = make_table(texts)
    a, _ = run_global(ExactDedup(), split(table, [300, 300, 300]), inline_engine, tmp_path / "a")
    b, _ = run_global(
        ExactDedup(ExactParams(num_partitions=3)), split(table, [300, 300, 300]), ray_engine, tmp_path / "b"
    )
    assert column(a, "__reject__") == column(b, "__reject__")
    assert column(a, "duplicate_of") == column(b, "duplicate_of")
    assert column(b, "__reject__").count(None) == 53
