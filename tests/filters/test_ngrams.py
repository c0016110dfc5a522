"""The level-by-level k-gram statistics of gopher_repetition_v1 against datatrove's own functions.

Words are single letters from a three-letter alphabet: many repeats, ties and overlapping duplicates, and
(unlike longer words) no two different word sequences join to the same string, so datatrove's
``"".join`` n-grams and our word-sequence hashes must agree exactly (known class 3 cannot occur).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from datatrove.pipeline.filters.gopher_repetition_filter import (
    find_all_duplicate,
    find_top_duplicate,
    get_n_grams,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.filters.gopher_repetition import _ngram_chars

TOPS = [2, 3, 4]
DUPS = [5, 6, 7, 8, 9, 10]

docs_strategy = st.lists(st.lists(st.sampled_from(["a", "b", "c"]), max_size=40), min_size=1, max_size=6)


def ours(docs: list[list[str]]) -> dict[tuple[str, int], np.ndarray]:
    doc = np.repeat(np.arange(len(docs), dtype=np.int64), [len(d) for d in docs])
    words = pl.Series([w for d in docs for w in d], dtype=pl.String)
    h = words.hash(seed=7).to_numpy()
    ln = words.str.len_chars().to_numpy().astype(np.int64)
    return _ngram_chars(doc, h, ln, TOPS, DUPS, len(docs))


def reference(words: list[str], kind: str, k: int) -> int:
    if kind == "top":
        grams = get_n_grams(words, k)
        return find_top_duplicate(grams) if grams else 0
    return find_all_duplicate(words, k)


@settings(max_examples=300, deadline=None)
@given(docs_strategy)
def test_ngram_chars_match_datatrove(docs: list[list[str]]) -> None:
    got = ours(docs)
    for kind, ks in (("top", TOPS), ("dup", DUPS)):
        for k in ks:
            expected = [reference(d, kind, k) for d in docs]
            assert got[(kind, k)].tolist() == expected, (kind, k)


def test_ngram_chars_hand_cases() -> None:
    docs = [
        [],  # no words: 0 everywhere
        list("ab"),  # fewer words than k=3: top_3 is 0
        list("abcab"),  # "a b" twice (6); every 3-gram once: the first one ("a b c", 5 chars) is the top
        list("ababab"),  # "a b" 3 times (9) beats "b a" twice; 5-gram: none repeated
        list("aaaaaaaaaaaa"),  # 12 equal words: duplicate 5-grams at 1 and 6 (skipping 5 each): 10 chars
        list("abcabd"),  # "a b" twice but "b c", "b d" once: no 3-gram repeats (the first, 5 chars, is top)
        list("xabab"),  # "a b" twice; every 3-gram once
    ]
    got = ours(docs)
    assert got[("top", 2)].tolist() == [0, 3, 6, 9, 33, 6, 6]
    assert got[("top", 3)].tolist() == [0, 0, 5, 10, 50, 5, 5]
    assert got[("dup", 5)].tolist() == [0, 0, 0, 0, 10, 0, 0]
    assert got[("dup", 6)].tolist() == [0, 0, 0, 0, 6, 0, 0]
