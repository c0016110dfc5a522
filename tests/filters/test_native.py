"""The native English word split (curate/filters/_native.c) gives the polars path's rows exactly."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from datatrove.utils.text import PUNCTUATION_SET
from hypothesis import given
from hypothesis import strategies as st

from curate.filters import native as N
from curate.filters import words as W
from curate.filters import words_en as E
from curate.filters._text import PY_SPACE, PY_SPACE_CHARS, py_letter_class
from tests.helpers import corpora_path


def _both(texts: list[str | None]) -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = W.texts_frame(texts)
    return E.split_words_en_native(frame), E.split_words_en(frame)


def test_the_native_split_is_built() -> None:
    # pip install -e . (make) compiles it; optional in pyproject only so that an install without a C
    # compiler still works. Here it must be there, or every other test below would test nothing new.
    assert N.built()
    assert N.enabled()


def test_native_words_and_stats_on_hand_written_text() -> None:
    texts = [
        "Hello, world. I don't know!  U.S. e.g. well-known (yes) \"quoted\" gonna Mr. Smith's :) 3.14",
        "",
        None,
        "   \n\t ",
        "naïve café 漢字テスト ## ... … •bullet - dash 100% $5 e-mail@x.org http://a.b/c?d=1",
        "Don't\u00a0stop\u2009the\u3000music\x1cnow\x85then",
    ]
    native, ref = _both(texts)
    assert native.equals(ref)
    assert native.columns == ["doc", "word", "chars", "flags"]
    got = native.filter(pl.col("doc") == 0).get_column("word").to_list()
    assert got[:8] == ["Hello", ",", "world", ".", "I", "do", "n't", "know"]
    # chars are characters (not bytes); flags: bit 0 non-punctuation, bit 1 a letter
    row = native.filter(pl.col("word") == "naïve").row(0, named=True)
    assert (row["chars"], row["flags"]) == (5, 3)
    doc4 = native.filter(pl.col("doc") == 4)
    assert doc4.get_column("word").to_list()[:6] == ["naïve", "café", "漢字テスト", "#", "#", "..."]
    assert doc4.get_column("flags").to_list()[:6] == [3, 3, 3, 0, 0, 0]
    assert native.filter(pl.col("word") == "100").row(0, named=True)["flags"] == 1
    assert set(native.get_column("doc").to_list()) == {0, 4, 5}  # empty, null and blank texts have no words


def test_every_python_space_separates_and_nothing_else_does() -> None:
    spaces = [f"a{c}b" for c in PY_SPACE_CHARS]
    # characters that look like spaces but are not str.isspace(): kept inside the chunk
    others = [f"a{c}b" for c in "\u200b\u2060\ufeff\x00\x1b\u180e"]
    native, ref = _both(spaces + others)
    assert native.equals(ref)
    words = W.words_lists(spaces)
    assert words == [["a", "b"]] * len(spaces)
    for i in range(len(spaces), len(spaces) + len(others)):
        assert native.filter(pl.col("doc") == i).height >= 1
        assert (
            "".join(native.filter(pl.col("doc") == i).get_column("word").to_list()) == others[i - len(spaces)]
        )


_PIECES = [
    "the", "The", "don't", "Don't", "can't", "gonna", "Mr.", "e.g.", "U.S.", "it's", "John's", "’s", "(a)",
    "[1]", '"quoted"', "well-known", "and/or", "3.14", "1,000", "100%", "$5", "...", "…", "—", "-", "#", "##",
    ":)", "''", "naïve", "Ärger", "東京", "テスト", "ﬁ", "x²", "１", "e-mail@x.org", "http://a.b/c", "a.b",
    "word.", "WORD.", "A.", "end!", "(open", "close)", "*star*", "'single'", "“curly”", "—dash—", "1st",
]  # fmt: skip
_SEPS = [" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u2009", "\u3000", "\x1c", "\x85", "", ",", "."]


@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SEPS)), max_size=30).map(
            lambda xs: "".join(a + b for a, b in xs)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_native_equals_the_polars_path_on_generated_text(texts: list[str]) -> None:
    native, ref = _both(texts)
    assert native.equals(ref)


@given(st.lists(st.text(max_size=40), min_size=1, max_size=5))
def test_native_equals_the_polars_path_on_arbitrary_unicode(texts: list[str]) -> None:
    native, ref = _both(texts)
    assert native.equals(ref)


def _every_code_point() -> str:
    """Every code point a str holds (all but the surrogates), in order, as one string."""
    spans = ((0, 0xD800), (0xE000, 0x110000))
    return "".join(np.arange(lo, hi, dtype="<u4").tobytes().decode("utf-32-le") for lo, hi in spans)


def _matches(pattern: str, text: str) -> set[str]:
    """The characters of ``text`` that polars' regex ``pattern`` (a one-character class) matches: one call."""
    return set(pl.Series([text]).str.extract_all(pattern).explode().drop_nulls().to_list())


def test_both_paths_classify_every_code_point_as_the_interpreter_does() -> None:
    # The rule both paths follow (curate.filters.words_en): letters and spaces are the interpreter's.
    every = _every_code_point()
    letters = {c for c in every if c.isalpha()}
    # polars: the classes its patterns use
    assert _matches(py_letter_class(), every) == letters
    assert _matches(f"[{PY_SPACE}]", every) == {c for c in every if c.isspace()}
    # the easy tokens' \b (polars' word boundary) sees every one of those letters as a word character
    assert letters <= _matches(r"\w", every)
    # the native scan: "x" c "x" is two plain chunks where c is a space, one plain chunk where c is a letter,
    # else one chunk it reports as needing words (with an empty cache), in text order
    sp = E.spacy_english()
    native = E._Native(list(sp.tokenizer.rules))
    arr = N.large_strings(pl.Series([f"x{c}x" for c in every]).to_arrow())
    missing, _ = N.module().scan(native.tables, native.cache, N.offsets(arr), N.data(arr))
    assert missing == [f"x{c}x" for c in every if not c.isalpha() and not c.isspace()]


def test_both_paths_agree_on_every_code_point_the_unicode_tables_disagree_on() -> None:
    # polars' own \p{L} and \s are newer than the interpreter's database (U+13460 is a letter to polars and
    # unassigned to Python 3.11): every code point they classify otherwise, alone and inside a word.
    every = _every_code_point()
    polars_letters, polars_spaces = _matches(r"\p{L}", every), _matches(r"[\s\x1c-\x1f]", every)
    disagree = sorted(
        {c for c in every if (c in polars_letters) != c.isalpha() or (c in polars_spaces) != c.isspace()}
        | {"\U00013460"}
    )
    native, ref = _both([" ".join(disagree), " ".join(f"(a{c}b)." for c in disagree)])
    assert native.equals(ref)
    alone = native.filter(pl.col("doc") == 0)
    # one word each (a space among them would separate): flags as datatrove's tests give them
    words = [c for c in disagree if not c.isspace()]
    assert alone.get_column("word").to_list() == words
    assert alone.get_column("chars").to_list() == [1] * len(words)
    assert alone.get_column("flags").to_list() == [
        (c not in PUNCTUATION_SET) | 2 * c.isalpha() for c in words
    ]
    hieroglyph = alone.filter(pl.col("word") == "\U00013460").row(0)
    assert hieroglyph == (0, "\U00013460", 1, 1 | 2 * "\U00013460".isalpha())  # flags 1 on Python 3.11


def test_every_letter_of_the_interpreter_is_one_word_on_both_paths() -> None:
    letters = [c for c in _every_code_point() if c.isalpha()]
    native, ref = _both([" ".join(letters)])
    assert native.equals(ref)
    assert native.get_column("word").to_list() == letters
    assert native.get_column("flags").to_list() == [(c not in PUNCTUATION_SET) | 2 for c in letters]


def test_a_sliced_batch_and_doc_ids_that_are_not_the_row_index() -> None:
    texts = ["zero words here.", "one, two", "three's four.", "five (six)"]
    full = W.texts_frame(texts)
    part = full.slice(1, 2)  # an Arrow slice: offsets start inside the buffer
    native = E.split_words_en_native(part)
    assert native.equals(E.split_words_en(part))
    assert native.get_column("doc").to_list() == [1, 1, 1, 2, 2, 2, 2]
    assert native.get_column("word").to_list() == ["one", ",", "two", "three", "'s", "four", "."]


def test_the_split_honours_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["A text the switch decides about, once."]
    monkeypatch.setenv(N.NATIVE_ENV, "0")
    W.clear_word_memo()
    monkeypatch.setattr(E, "split_words_en_native", lambda frame: pytest.fail("native path taken"))
    assert W.split_words(W.texts_frame(texts)).get_column("word").to_list()[:3] == ["A", "text", "the"]
    monkeypatch.undo()
    W.clear_word_memo()
    assert N.enabled()


def test_a_plan_is_refused_after_the_cache_is_cleared() -> None:
    assert N.built()
    sp = E.spacy_english()
    assert sp.native is not None
    native = E._Native(list(sp.tokenizer.rules))
    arr = N.large_strings(pl.Series(["don't stop"]).to_arrow())
    missing, plan = N.module().scan(native.tables, native.cache, N.offsets(arr), arr.buffers()[2])
    assert missing == ["don't"]
    with pytest.raises(KeyError, match="don't"):  # emitted before its words were added
        N.module().emit(native.cache, plan, arr.buffers()[2])
    N.module().cache_clear(native.cache)
    with pytest.raises(ValueError, match="before it was cleared"):
        N.module().emit(native.cache, plan, arr.buffers()[2])
    with pytest.raises(ValueError, match="offsets"):
        N.module().scan(native.tables, native.cache, np.array([0, 99], np.int64), arr.buffers()[2])


@pytest.mark.corpora
def test_native_equals_the_polars_path_on_the_web_corpus() -> None:
    from curate.io.readers import read_table

    files = sorted(corpora_path("web").glob("*.jsonl.gz"))
    assert len(files) == 8
    n_words = 0
    for f in files:
        frame = W.texts_frame(read_table(str(f), limit=400).column("text"))
        native, ref = _both(frame.get_column("text").to_list())
        assert native.equals(ref), f.name
        n_words += native.height
    assert n_words > 500_000


def _grams(doc: list[int], h: list[int], ln: list[int], n_docs: int, native: bool) -> dict:
    from curate.filters import gopher_repetition as G

    d, hh, ll = np.array(doc, np.uint32), np.array(h, np.uint64), np.array(ln, np.uint32)
    if native:
        return G.ngram_chars(d, hh, ll, [2, 3, 4], [5, 6], n_docs)
    return G._ngram_chars(d.astype(np.int64), hh, ll.astype(np.int64), [2, 3, 4], [5, 6], n_docs)


def test_ngram_kernel_numbers_on_a_hand_made_batch() -> None:
    # doc 0: "a b a b a b" (one character each); doc 1: none; doc 2: "a b c d e a b c d e"; doc 3: "x"
    doc = [0] * 6 + [2] * 10 + [3]
    h = [1, 2, 1, 2, 1, 2] + [1, 2, 3, 4, 5] * 2 + [9]
    ln = [1] * 6 + [2] * 10 + [4]
    got = _grams(doc, h, ln, 4, native=True)
    # top 2-gram of doc 0: "a b" three times, 3 characters with its space; doc 2: every 2-gram twice,
    # the first ("a b", 5 characters) wins the tie
    assert got[("top", 2)].tolist() == [9.0, 0.0, 10.0, 0.0]
    assert got[("top", 4)].tolist() == [14.0, 0.0, 22.0, 0.0]  # "a b a b" twice; "a b c d" twice
    # datatrove's scan: doc 2's second "abcde" repeats (5 words of 2 characters); doc 0's two 5-grams
    # ("ababa", "babab") differ
    assert got[("dup", 5)].tolist() == [0.0, 0.0, 10.0, 0.0]
    assert got[("dup", 6)].tolist() == [0.0, 0.0, 0.0, 0.0]
    ref = _grams(doc, h, ln, 4, native=False)
    assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in ref.items()}


@given(
    st.lists(st.lists(st.integers(0, 3), max_size=40), min_size=1, max_size=6),
    st.integers(0, 2**32),
)
def test_ngram_kernel_equals_numpy_on_repetitive_batches(docs: list[list[int]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    doc = [i for i, words in enumerate(docs) for _ in words]
    # random 64-bit word hashes, as polars' are (numpy groups grams of all docs by one hash, the doc mixed
    # in, the kernel each doc alone: a hash made to cancel the doc's mix would tell them apart)
    table = rng.integers(0, 2**63, 4, dtype=np.int64).tolist()
    h = [table[w] for words in docs for w in words]
    ln = rng.integers(1, 9, len(doc)).tolist()
    got, ref = _grams(doc, h, ln, len(docs), True), _grams(doc, h, ln, len(docs), False)
    assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in ref.items()}


def test_the_ngram_kernel_honours_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(N.NATIVE_ENV, "0")
    monkeypatch.setattr(N.module(), "ngram_chars", lambda *a: pytest.fail("native kernel taken"))
    got = _grams([0, 0, 0], [1, 1, 1], [1, 1, 1], 1, native=True)
    assert got[("top", 2)].tolist() == [6.0]


def test_the_ngram_kernel_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="ascending"):
        _grams([1, 0], [1, 2], [1, 1], 2, native=True)
    with pytest.raises(ValueError, match="one value per word"):
        N.module().ngram_chars(
            np.zeros(2, np.uint32), np.zeros(1, np.uint64), np.zeros(2, np.uint32), 1, [2], []
        )


_LINE_PIECES = [
    "One", "sentence", "here.", "Two!", "Really?", "e.g.", "U.S.", "Mr.", "(yes).", "“quoted.”", "...", "…",
    "!!", "?!", "a.b", "3.14", "।", "。", "end.)", "—", "-", "'", '"', "word", "don't", "x", ":)", ".", "?",
]  # fmt: skip
_LINE_SEPS = [" ", " ", " ", "  ", "\t", " \t", "\u00a0", "\u3000"]


@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(_LINE_SEPS), st.sampled_from(_LINE_PIECES)), min_size=1, max_size=25
        ).map(lambda xs: "".join(a + b for a, b in xs).strip()),
        min_size=1,
        max_size=8,
    )
)
def test_native_sentence_counts_equal_the_polars_path(lines: list[str]) -> None:
    from curate.filters.c4 import sentence_counts, sentence_counts_polars

    series = pl.Series(lines, dtype=pl.String)
    assert sentence_counts(series).tolist() == sentence_counts_polars(series).tolist()


def test_native_sentence_counts_by_hand() -> None:
    from curate.filters.c4 import sentence_counts

    lines = ["One. Two! Three? four", "Mr. Smith went. Then  he left", "no end", "... ok. (yes) no.", ""]
    # "Mr." is one token (a W); "went." is "went" "." (a P), "Then" a W after it; the double space is a
    # whitespace token, a W after a W; "..." is punctuation but no punct_chars character (dropped)
    assert sentence_counts(pl.Series(lines)).tolist() == [4, 2, 1, 2, 1]


@pytest.mark.corpora
def test_native_sentence_counts_equal_the_polars_path_on_web_lines() -> None:
    from curate.filters.c4 import sentence_counts, sentence_counts_polars
    from curate.io.readers import read_table

    for f in sorted(corpora_path("web").glob("*.jsonl.gz")):
        texts = pl.Series(read_table(str(f), limit=150).column("text").to_pylist(), dtype=pl.String)
        lines = texts.str.split("\n").explode().str.strip_chars(PY_SPACE_CHARS)
        lines = lines.filter(lines.str.len_bytes() > 0)
        assert sentence_counts(lines).tolist() == sentence_counts_polars(lines).tolist(), f.name


@pytest.mark.corpora
def test_the_four_filters_score_the_same_with_and_without_the_native_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyarrow as pa

    from curate.filters.c4 import C4Quality
    from curate.filters.fineweb import FineWebQuality
    from curate.filters.gopher_quality import GopherQuality
    from curate.filters.gopher_repetition import GopherRepetition
    from curate.io.readers import read_table

    files = sorted(corpora_path("web").glob("*.jsonl.gz"))
    table = pa.concat_tables(read_table(str(f), limit=120).select(["id", "text", "source"]) for f in files)
    stages = [GopherQuality(), GopherRepetition(), C4Quality(), FineWebQuality()]
    scores = {}
    for native in ("1", "0"):
        monkeypatch.setenv(N.NATIVE_ENV, native)
        W.clear_word_memo()
        scores[native] = [stage.process(table) for stage in stages]

    def cells(t: pa.Table) -> dict[str, list]:  # NaN (a 0/0 ratio) equal to NaN
        return {c: ["nan" if v != v else v for v in t.column(c).to_pylist()] for c in t.column_names}

    for on, off in zip(scores["1"], scores["0"], strict=True):
        assert cells(on) == cells(off)
    assert table.num_rows == 960


def test_the_chunk_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    native = E.spacy_english().native
    assert native is not None
    monkeypatch.setattr(native, "MAX_CHUNKS", 3)
    frame = W.texts_frame(["don't stop, won't stop (ever).", "e.g. U.S. it's"])
    E.split_words_en_native(frame)
    assert N.module().cache_len(native.cache) > 3
    got = E.split_words_en_native(frame)  # over the bound: forgets everything, then caches this batch's
    assert got.equals(E.split_words_en(frame))
    # the distinct non-plain chunks: don't, stop, (comma) won't, (ever). e.g. U.S. it's
    assert N.module().cache_len(native.cache) == 7


def _piece_stats_both(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    from curate.filters.gopher_repetition import piece_stats

    docs = W.texts_frame(texts)
    monkeypatch.setenv(N.NATIVE_ENV, "1")
    on = piece_stats(docs)
    monkeypatch.setenv(N.NATIVE_ENV, "0")
    off = piece_stats(docs)
    as_lists = lambda st: [{k: v.tolist() for k, v in d.items()} for d in st]  # noqa: E731
    return as_lists(on), as_lists(off)


def test_native_lines_and_paragraphs_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["a\nb\na\n\n\nb\na\n", "", "\n\n x \n\n x \n\n", "même\n\nmême\n\n\nmême", " \n\nx\n\nx\n\n"]
    on, off = _piece_stats_both(texts, monkeypatch)
    assert on == off
    paras, lines = on
    # doc 0: paragraphs "a\nb\na", "b\na"; lines a, b, a, b, a and the final empty one (a repeats twice, b once)
    assert (paras["n"][0], paras["dup_count"][0], paras["dup_chars"][0]) == (2, 0, 0)
    assert (lines["n"][0], lines["dup_count"][0], lines["dup_chars"][0]) == (6, 3, 3)
    assert (paras["n"][1], lines["n"][1]) == (0, 1)  # "" is one (empty) line and no paragraph
    assert (paras["n"][2], paras["dup_count"][2]) == (2, 0)  # stripped to "x \n\n x": "x " and " x" differ
    assert (paras["n"][4], paras["dup_count"][4], paras["dup_chars"][4]) == (2, 1, 1)
    assert (paras["n"][3], paras["dup_count"][3], paras["dup_chars"][3]) == (3, 2, 8)  # characters, not bytes


@given(
    st.lists(
        st.lists(
            st.sampled_from(["a", "b", "même", " ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u2028", "x y"]),
            max_size=30,
        ).map("".join),
        min_size=1,
        max_size=6,
    )
)
def test_native_lines_and_paragraphs_equal_polars(texts: list[str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        on, off = _piece_stats_both(texts, mp)
    assert on == off
