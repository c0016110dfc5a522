"""Each check of each filter on small hand-written documents: the exact first-failing reason."""

from __future__ import annotations

import pytest

from curate.core import schema
from curate.core.registry import STAGES
from curate.filters.c4 import C4Lines, C4Quality
from curate.filters.fineweb import FineWebQuality
from curate.filters.gopher_quality import GopherQuality
from curate.filters.gopher_repetition import GopherRepetition
from curate.filters.words import words_lists
from tests.helpers import make_table

GOOD = (
    "The quick brown fox jumps over the lazy dog and then it runs to the forest with a friend. "
    "It is a sunny day, and the animals have plenty of food to eat. They play together until "
    "the evening comes. Then they go back home to sleep. Every morning they wake up early and "
    "start the day with a long walk along the river. The water is clear and cold. "
    "Birds sing in the trees and the wind moves the leaves."
)


def reasons(scorer, texts: list[str]) -> list[str | None]:
    """What ``filter: <scorer>`` decides for each text: None (kept) or ``<label>:<check>``."""
    stage = scorer.as_filter()
    stage.ensure_setup()
    return stage.process(make_table(texts)).column(schema.REJECT).to_pylist()


def reason(stage, text: str) -> str | None:
    return reasons(stage, [text])[0]


def datatrove_reason(dt_filter, text: str) -> str | None:
    """The reference's reason for ``text`` (None = kept), to cross-check every hand-written case."""
    from datatrove.data import Document

    res = dt_filter.filter(Document(text=text, id="0"))
    return None if res is True or (isinstance(res, tuple) and res[0]) else res[1]


def test_words_match_spacy_english() -> None:
    assert words_lists(['Hello, world. I don\'t know!  U.S. e.g. well-known (yes) "quoted"']) == [
        [
            "Hello",
            ",",
            "world",
            ".",
            "I",
            "do",
            "n't",
            "know",
            "!",
            "U.S.",
            "e.g.",
            "well",
            "-",
            "known",
            "(",
            "yes",
            ")",
            '"',
            "quoted",
            '"',
        ]
    ]
    assert words_lists(["", "   \n\t "]) == [[], []]


def test_words_generic_splits_cjk_per_character() -> None:
    assert words_lists(["漢字テスト abc, déf"], "generic") == [
        ["漢", "字", "テ", "ス", "ト", "abc", ",", "déf"]
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am too small...", "short_doc"),
        (" ".join(["word"] * 100001), "long_doc"),
        (" ".join(["a", "b"] * 30), "below_avg_threshold"),
        (" ".join(["extraordinarily"] * 60), "above_avg_threshold"),
        (GOOD + " #" * 20, "too_many_hashes"),
        (GOOD + " ..." * 20, "too_many_ellipsis"),
        ("\n".join(["- " + GOOD[i * 30 : (i + 1) * 30] for i in range(12)]), "too_many_bullets"),
        (GOOD.replace(". ", ".\n", 3).replace(".\n", "...\n"), "too_many_end_ellipsis"),
        (GOOD + " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "below_alpha_threshold"),
        (" ".join(["house", "garden", "river", "mountain", "forest"] * 12), "enough_stop_words"),
        (GOOD, None),
        ("", "short_doc"),
        ("!!! ??? ... ,,, ;;;", "short_doc"),
        ("漢字" * 500, "short_doc"),
        (GOOD.replace(". ", ".\r\n"), None),
    ],
)
def test_gopher_quality(text: str, expected: str | None) -> None:
    from datatrove.pipeline.filters import GopherQualityFilter

    got = reason(GopherQuality(), text)
    assert got == (None if expected is None else f"gopher_quality_v1:{expected}")
    assert datatrove_reason(GopherQualityFilter(), text) == (
        None if expected is None else f"gopher_{expected}"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty"),
        ("a b c d\n\na b c d\n\na b c d\n\nother stuff here", "dup_para_frac"),
        (
            "x\n\n"
            + "a long repeated paragraph of text here\n\n" * 2
            + "\n\n".join(f"p{i}" for i in range(9)),
            "dup_para_char_frac",
        ),
        ("\n".join(["same line"] * 4 + [f"line {i}" for i in range(3)]), "dup_line_frac"),
        (
            "\n".join(["a long repeated line of text, quite long indeed"] * 2 + [f"l{i}" for i in range(8)]),
            "dup_line_char_frac",
        ),
        ("buy now " * 10 + "and more text here to read", "top_2_gram"),
        (GOOD + " " + GOOD, "duplicated_5_n_grams"),
        (GOOD, None),
        (GOOD.replace(". ", ".\r\n"), None),
    ],
)
def test_gopher_repetition(text: str, expected: str | None) -> None:
    from datatrove.pipeline.filters import GopherRepetitionFilter

    got = reason(GopherRepetition(), text)
    assert got == (None if expected is None else f"gopher_repetition_v1:{expected}")
    assert datatrove_reason(GopherRepetitionFilter(), text) == expected


def test_gopher_repetition_edge_cases() -> None:
    # One giant line without spaces (CJK) and only punctuation: no words, so only the ratios count.
    from datatrove.pipeline.filters import GopherRepetitionFilter

    texts = ["漢字" * 2000, "!?" * 10, "one two\r\none two\r\n", "\n"]
    expected = [None, "top_2_gram", "dup_line_frac", "dup_line_frac"]
    assert reasons(GopherRepetition(), texts) == [e and f"gopher_repetition_v1:{e}" for e in expected]
    assert [datatrove_reason(GopherRepetitionFilter(), t) for t in texts] == expected


C4_GOOD = "\n".join(
    [
        "This is the first line of the page. It has two sentences.",
        "Here comes another line that ends with a period.",
        "A third line asks a question, does it not?",
        "The fourth line is short but fine.",
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (C4_GOOD, None),
        ("Lorem ipsum dolor sit amet.\n" + C4_GOOD, "lorem_ipsum"),
        ("We use {braces} in code.\n" + C4_GOOD, "curly_bracket"),
        ("Enable javascript {now} please.\n" + C4_GOOD, None),  # a javascript line is dropped first
        ("Two lines only. Not enough.\nAnother one here.", "too_few_sentences"),
        ("no terminal punctuation here\n" * 10, "too_few_sentences"),
        ("", "too_few_sentences"),
        ("x" * 5000, "too_few_sentences"),
        (C4_GOOD.replace("\n", "\r\n"), None),
    ],
)
def test_c4_quality(text: str, expected: str | None) -> None:
    from datatrove.pipeline.filters import C4QualityFilter

    got = reason(C4Quality(), text)
    assert got == (None if expected is None else f"c4_quality_v1:{expected}")
    assert datatrove_reason(C4QualityFilter(), text) == expected


def test_c4_lines_removes_and_counts() -> None:
    stage = C4Lines()
    text = "Good line number one is here.\nmenu\nPlease enable JavaScript to view.\nSee [1] the end here."
    out = stage.process(make_table([text, "menu\nhome"]))
    assert out.column("text").to_pylist() == ["Good line number one is here.\nSee  the end here.", ""]
    assert out.column("c4_lines_v1.lines_removed").to_pylist() == [2, 2]
    assert out.column("c4_lines_v1.chars_removed").to_pylist() == [len(text) - 48, 9]
    assert out.column(schema.REJECT).to_pylist() == [None, "c4_lines_v1:empty"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty"),
        ("   \n\n  ", "empty"),
        (
            "\n".join(["no punctuation at the end of this line"] * 3 + ["other line without it either"] * 5),
            "line_punct_ratio",
        ),
        ("\n".join(["Short one."] * 1 + [f"Tiny {i}." for i in range(5)]), "short_line_ratio"),
        (GOOD + "\n" + "This line repeats and it is long enough.\n" * 2, "char_dup_ratio"),
        (
            "\n".join([f"Item {i} is on sale today for a very good price." for i in range(5)]) + "\n" * 30,
            "list_ratio",
        ),
        (GOOD, None),
        ("漢字。" * 300, None),
    ],
)
def test_fineweb_quality(text: str, expected: str | None) -> None:
    from datatrove.pipeline.filters import FineWebQualityFilter

    got = reason(FineWebQuality(), text)
    assert got == (None if expected is None else f"fineweb_quality_v1:{expected}")
    assert datatrove_reason(FineWebQualityFilter(), text) == expected


def test_registered_names() -> None:
    names = set(STAGES.names())
    assert {
        "gopher_quality_v1",
        "gopher_repetition_v1",
        "c4_quality_v1",
        "c4_lines_v1",
        "fineweb_quality_v1",
        "language_v1",
        "url_filter_v1",
    } <= names
