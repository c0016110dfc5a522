"""c4_quality_v1's sentence counts against datatrove's ``split_into_sentences`` (spaCy's sentencizer)."""

from __future__ import annotations

import polars as pl
import pytest
from datatrove.utils.text import split_into_sentences

from curate.filters.c4 import sentence_counts

LINES = [
    "One sentence here.",
    "Two sentences. Here is the second one.",
    "Wait... is this one? Yes! It is.",
    "Pi is 3.14 and the U.S. is big. Really.",
    "Double  spaces. After\tthe tab. And\u00a0a no-break space.",
    'Quoted. "Then this." (And this.) Done',
    'Ends with a quote." Then more words',
    "Dots .... then words. ... and more",
    "Emoticon :) then words. Smile :). Next",
    "Only — dashes — and (brackets) here",
    "?! !? Starts with punctuation. Then words",
    "Hello。World",
    "e.g. this is an abbreviation. Mr. Smith came.",
    "",  # datatrove counts one (empty) sentence here
    " \t ",
]


@pytest.mark.parametrize("line", LINES)
def test_sentence_count_matches_datatrove(line: str) -> None:
    assert sentence_counts(pl.Series([line])).tolist() == [len(split_into_sentences(line))]


def test_sentence_counts_batch() -> None:
    got = sentence_counts(pl.Series(LINES)).tolist()
    assert got == [len(split_into_sentences(x)) for x in LINES]
    assert got[:3] == [1, 2, 3]
    assert sentence_counts(pl.Series([], dtype=pl.String)).tolist() == []
