"""degeneration_v1: every signal on hand-written texts, exact values."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest

from curate.core.select import Select
from curate.scorers.degeneration import Degeneration, DegenerationParams, degeneration_signals
from tests.helpers import make_table

TEXTS = [
    "The cat sat. The cat ran! A dog.",  # 8 words, 6 distinct; openings "the cat" x2 of 3 sentences
    "a b a b a b",  # loop
    "",
    "one two three four one two three four",
    "Hello there",
]


@pytest.fixture(scope="module")
def sig() -> dict[str, np.ndarray]:
    return degeneration_signals(pa.array(TEXTS))


def test_distinct_n(sig):
    assert sig["distinct_1"].tolist() == [6 / 8, 2 / 6, 1.0, 4 / 8, 1.0]
    # bigrams of text 0: the-cat, cat-sat, sat-the, the-cat, cat-ran, ran-a, a-dog -> 6 distinct of 7
    assert sig["distinct_2"].tolist() == [6 / 7, 2 / 5, 1.0, 4 / 7, 1.0]


def test_repeated_4gram_frac(sig):
    # "a b a b a b": 4-grams abab, baba, abab -> 2 of 3 positions repeat; text 3: 1234 twice of 5
    assert sig["repeated_4gram_frac"].tolist() == [0.0, 2 / 3, 0.0, 2 / 5, 0.0]


def test_zlib_ratio(sig):
    expected = [len(t.encode()) / len(zlib.compress(t.encode(), 6)) for t in TEXTS]
    assert sig["zlib_ratio"].tolist() == expected
    loop = degeneration_signals(pa.array(["I like it. " * 50]))["zlib_ratio"][0]
    assert loop > 10.0


def test_repeated_openings(sig):
    assert sig["repeated_opening_frac"].tolist() == [2 / 3, 0.0, 0.0, 0.0, 0.0]
    # A line break also ends a sentence; one-word sentences have no opening and do not count.
    two = degeneration_signals(pa.array(["In 1990 we left\nIn 1990 they came. Yes. Then it ended."]))
    assert two["repeated_opening_frac"].tolist() == [2 / 3]


def test_truncated_ending(sig):
    assert sig["truncated_ending"].tolist() == [False, True, True, True, True]
    ends = degeneration_signals(pa.array(['He said "stop."  ', "Really?", "(see above)", "and then the"]))
    assert ends["truncated_ending"].tolist() == [False, False, False, True]


def test_null_text_is_empty():
    s = degeneration_signals(pa.array([None, "x y"], pa.string()))
    assert s["distinct_1"].tolist() == [1.0, 1.0]
    assert s["zlib_ratio"][0] == 0.0


def test_scorer_columns_and_filter_reasons():
    stage = Degeneration(DegenerationParams(reject_truncated=True))
    scored = stage.process(
        make_table(["Fine text here. It ends well.", "go go go go go go go go go go go", "It never ends and"])
    )
    assert "degeneration_v1.repeated_4gram_frac" in scored.column_names
    assert scored.schema.field("degeneration_v1.truncated_ending").type == pa.bool_()
    out = Select(rules=stage.reference_rules(), prefix=stage.label).process(scored)
    assert out.column("__reject__").to_pylist() == [
        None,
        "degeneration_v1:repeated_ngrams",
        "degeneration_v1:truncated",
    ]
