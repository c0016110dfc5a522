"""The spaCy-compatible English word split (``"en"`` in :func:`curate.filters.words.split_words`).

It reproduces datatrove 0.10's English word tokenizer (``split_into_words(text, "en")``: a
``spacy.blank("en")`` tokenizer, whitespace-only tokens dropped). spaCy splits text on whitespace
(``str.isspace``) into chunks and tokenizes every chunk on its own (prefixes, suffixes, infixes, special
cases such as ``don't`` -> ``do n't``). We do the whitespace split for the whole batch in polars, settle
the chunk shapes whose spaCy tokens are known in advance with vectorized expressions (plain words and
numbers; a word with opening brackets/quotes before it and closing punctuation, a ``.`` that spaCy splits
off, a ``..`` run or a possessive ``'s`` after it, unless a spaCy special case could be involved; numbers
such as ``3.14`` kept whole), and send only the remaining *distinct* chunks (about 12% of the distinct
chunks of web text) to spaCy's tokenizer, caching them per worker. spaCy stays the source of truth for
every chunk with a shape we do not settle ourselves.

The split has two implementations giving the same rows (``doc, word, chars, flags``, see
:func:`with_word_stats`): the polars path above (:func:`split_words_en`), and the native one
(:func:`split_words_en_native`, by the ``word_split`` kernel of :mod:`curate.filters.native`) that cuts the
text into chunks, keeps plain chunks and looks every other chunk up in a per-process cache in one C pass,
sending only chunks it has not seen before through the polars shapes and spaCy (``_distinct_tokens``).
tests/filters/test_native.py holds the two equal.

Both classify characters by one rule, the interpreter's: a space is what ``str.isspace()`` calls one, a
letter what ``str.isalpha()`` calls one (its Unicode database, which datatrove's and spaCy's Python code
see), a digit is ASCII ``0-9``. The native module asks the interpreter (``Py_UNICODE_ISALPHA``); the
polars patterns below are written with ``\\p{L}`` for readability, but :func:`_rx` replaces it with the
interpreter's letters (:func:`curate.filters._text.py_letter_class`) before polars sees them, and spaces
are :data:`curate.filters._text.PY_SPACE`: polars' own Unicode tables (newer) never decide a character.
"""

from __future__ import annotations

import functools
import re
import threading
from itertools import chain
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from curate.filters import native as N
from curate.filters._spacy import import_spacy
from curate.filters._text import NON_PUNCT_CHAR, PY_SPACE, py_letter_class

# A run of characters that are not Python's str.isspace() (Unicode White_Space plus \x1c-\x1f).
NON_SPACE_RUN = f"[^{PY_SPACE}]+"


@functools.cache
def _rx(pattern: str) -> str:
    """``pattern`` with every ``\\p{L}`` written as the interpreter's letters (``py_letter_class()``), the
    form in which every pattern below reaches polars (see the module docstring)."""
    return pattern.replace(r"\p{L}", py_letter_class())


# Chunk shapes whose spaCy-en tokens we know (checked against spaCy on the web corpora in
# tests/filters/test_words.py). A shape only applies when neither the chunk nor its word part is one of
# spaCy's special cases (``Dont`` -> ``Do nt``, ``Dr.``, ``e.``...).
_PLAIN = r"^(?:\p{L}+|[0-9]+)$"
_WORD_PUNCT = r"^\p{L}+[,;:!?)\]\"]$"
_OPEN_WORD = r"^[(\[\"]\p{L}+$"
_HYPHENATED = r"^[A-Za-z]+-[A-Za-z]+$"
# spaCy splits a final "." after a lower-case letter or after two upper-case letters.
_WORD_DOT = r"^[A-Za-z]*(?:[a-z]|[A-Z]{2})\.$"

_EASY_SHAPES = (_PLAIN, _WORD_PUNCT, _WORD_DOT, _OPEN_WORD, _HYPHENATED)

# Wider shapes, guarded (see _guards): a core (a letter run, a digit run or ASCII words joined by single
# hyphens or slashes) with opening characters before and closing ones after, each split off alone, and
# ``..``-runs (spaCy's ellipsis) before, between or after cores. Checked against spaCy on every distinct
# chunk of the web corpora (tests/filters/test_words.py); with the possessives below they settle about 55%
# of the distinct chunks the plain shapes leave to spaCy.
_OPEN = "(\\[“„*\"'’‘"
_CLOSE = ")\\]”\"*,;:!?'’"
_CORE = r"(?:\p{L}+|[0-9]+|[A-Za-z]+(?:[-/][A-Za-z]+)+)"
_AFFIXED = rf"^[{_OPEN}]*(?:\.{{2,}})?{_CORE}(?:\.{{2,}}{_CORE})*(?:\.{{2,}})?[{_CLOSE}]*$"
# A final "." splits off after a lower-case letter, two upper-case letters, a digit or a closing character.
_AFFIXED_DOT = (
    rf"^[{_OPEN}]*(?:\p{{L}}*(?:[a-z]|[A-Z]{{2}})|[0-9]+|[A-Za-z]+(?:-[A-Za-z]+)*-[A-Za-z]*[a-z])"
    rf"\.[{_CLOSE}]*$"
)
_AFFIXED_CLOSE_DOT = rf"^[{_OPEN}]*{_CORE}[{_CLOSE}]+\.[{_CLOSE}]*$"
_GUARDED_SHAPES = (_AFFIXED, _AFFIXED_DOT, _AFFIXED_CLOSE_DOT)
# A possessive ``'s`` (one token) after a letter core, with the same affixes; guarded like the others,
# except that the ``'s`` special cases themselves may occur.
_POSSESSIVE_SHAPES = (
    rf"^[{_OPEN}]*\p{{L}}+['’][sS][{_CLOSE}]*$",
    rf"^[{_OPEN}]*\p{{L}}+['’][sS][{_CLOSE}]+\.[{_CLOSE}]*$",
)
_POSSESSIVES = ("'s", "'S", "’s", "’S")
# Shapes spaCy keeps whole: letters then digits (``abc123``), digits with inner ``. , :`` (``3.14``).
_WHOLE_SHAPES = (r"^\p{L}+[0-9]+$", r"^[0-9]+(?:[.,:][0-9]+)+$")
# Characters the guarded shapes may hold besides letters and digits.
_AFFIX_CHARS = set("([“„*\"'’‘)]”,;:!?.-/")

# Tokens of the easy shapes: the letter run, the digit run, a ``..``-run, a possessive ``'s`` and each
# other character alone. (A guarded chunk other than a possessive never holds ``'s`` before a word
# boundary: ``'s`` is a special case.) ``\b`` is polars' Unicode word boundary; it only has to see that a
# letter follows an opening ``'s`` (``'sun's``), and every letter of the interpreter's is a word character
# to it (tests/filters/test_native.py checks all of them).
_EASY_TOKEN = r"\p{L}+|[0-9]+|\.\.+|['’][sS]\b|[^\p{L}0-9]"


class _SpacyEnglish:
    """spaCy's blank English tokenizer for the chunks we do not settle ourselves (one per process)."""

    def __init__(self) -> None:
        spacy = import_spacy()  # without torch (see curate.filters._spacy)
        from spacy.tokenizer import Tokenizer
        from spacy.vocab import Vocab

        ref: Any = spacy.blank("en").tokenizer
        # The same rules on a vocabulary without lexical attribute getters: identical splits, but new
        # strings no longer pay for ~20 Python attribute functions each (6x faster on unseen chunks).
        self.tokenizer = Tokenizer(
            Vocab(strings=[]),
            rules=ref.rules,
            prefix_search=ref.prefix_search,
            suffix_search=ref.suffix_search,
            infix_finditer=ref.infix_finditer,
            token_match=ref.token_match,
            url_match=ref.url_match,
            faster_heuristics=ref.faster_heuristics,
        )
        self.special = pl.Series(sorted(ref.rules), dtype=pl.String)
        self.cache: dict[str, list[str]] = {}
        self.guard_substrings, self.guard_runs = _guards(sorted(ref.rules))
        self.native = _Native(sorted(ref.rules)) if N.built() else None

    def tokenize(self, chunks: list[str]) -> list[list[str]]:
        """spaCy's tokens of each chunk as spaCy tokenizes that chunk alone (whitespace tokens dropped)."""
        missing = [c for c in chunks if c not in self.cache]
        if missing:
            if len(self.cache) > 2_000_000:  # bound a worker's memory on huge corpora
                self.cache.clear()
            # One call for all of them, the chunks joined by a separator token. spaCy's special cases are
            # also matched as token runs across a space ("Doin" then "'d'," matches the run "Doin" "'",
            # which blocks the "'d" case inside the second chunk), so chunks joined by a bare space got
            # tokens that depended on which other chunks shared the call: on the worker's history. No
            # special case holds the separator, so no match crosses it.
            sep = " " + _separator(missing) + " "
            joined = sep.join(missing)
            doc = self.tokenizer(joined)
            # Every token lies inside one chunk (the one whose start offset is the last <= the token's) or
            # is a separator (it starts at or after that chunk's end). Reading offsets and lengths as arrays
            # avoids building a Python Token object per token.
            from spacy.attrs import IDX, LENGTH

            arr = doc.to_array([IDX, LENGTH]).astype(np.int64).reshape(-1, 2)
            lens = np.fromiter((len(c) for c in missing), np.int64, len(missing))
            starts = np.zeros(len(missing), dtype=np.int64)
            np.cumsum(lens[:-1] + len(sep), out=starts[1:])
            owner = np.searchsorted(starts, arr[:, 0], side="right") - 1
            inside = arr[:, 0] < starts[owner] + lens[owner]
            arr, owner = arr[inside], owner[inside]
            bounds = np.searchsorted(owner, np.arange(len(missing) + 1)).tolist()
            texts = [joined[i : i + n] for i, n in zip(arr[:, 0].tolist(), arr[:, 1].tolist(), strict=True)]
            for j, chunk in enumerate(missing):
                self.cache[chunk] = [t for t in texts[bounds[j] : bounds[j + 1]] if t.strip()]
        return [self.cache[c] for c in chunks]


def _separator(chunks: list[str]) -> str:
    """A private-use character none of ``chunks`` holds (one token for spaCy, in none of its special cases)."""
    used = set().union(*(set(c) for c in chunks if not c.isascii()))
    # the BMP's private-use area, then plane 15's
    for cp in chain(range(0xE000, 0xF900), range(0xF0000, 0xFFFFE)):
        if chr(cp) not in used:
            return chr(cp)
    raise ValueError("word split: every private-use character occurs in this batch's chunks")


def _guards(special: list[str]) -> tuple[list[str], str]:
    """What keeps a chunk out of the guarded shapes, from spaCy's special cases.

    spaCy looks special cases up on every string left while it strips affixes, and also merges token
    runs that spell a special case with affix characters (``:`` ``)`` -> ``:)``, ``'`` ``'`` -> ``''``).
    A guarded chunk must contain none of those special cases (the substrings), and none of its letter or
    digit runs may be a special case alone or with a ``.`` after it (``gonna``, ``Mr.``; the runs regex).
    """
    substrings = [
        x
        for x in special
        if len(x) >= 2 and any(ch in _AFFIX_CHARS for ch in x) and not re.fullmatch(r"[^\W\d_]+\.", x)
    ]
    runs = [x for x in special if re.fullmatch(r"[^\W\d_]+|[0-9]+", x)]
    dotted = [x[:-1] for x in special if re.fullmatch(r"[^\W\d_]+\.", x)]
    alt = "|".join(re.escape(x) for x in runs)
    alt_dot = "|".join(re.escape(x) for x in dotted)
    edge = r"(?:^|[^\p{L}0-9])"
    runs_re = rf"{edge}(?:(?:{alt})(?:$|[^\p{{L}}0-9])|(?:{alt_dot})\.)"
    return substrings, _rx(runs_re)


_SPACY: _SpacyEnglish | None = None


def spacy_english() -> _SpacyEnglish:
    """The per-process spaCy English tokenizer (loaded on first use; stages call it in setup())."""
    global _SPACY
    if _SPACY is None:
        _SPACY = _SpacyEnglish()
    return _SPACY


def chunks_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Whitespace-separated chunks: ``doc, chunk`` in text order (as spaCy and ``str.split()`` see them)."""
    return (
        frame.lazy()
        .select("doc", pl.col("text").str.extract_all(NON_SPACE_RUN).alias("chunk"))
        .explode("chunk")
        .drop_nulls("chunk")
        .collect()
    )


def chunk_tokens(chunks: pl.DataFrame, column: str = "chunk") -> pl.DataFrame:
    """Add a ``words`` list column: the spaCy-en tokens of each whitespace-free string in ``column``.

    A plain word (only letters, or only digits) that is no special case is its own token. The other
    chunks' tokens are worked out once per distinct string and joined back (web text repeats them).
    """
    sp = spacy_english()
    c = pl.col(column)
    plain = c.str.contains(_rx(_PLAIN)) & ~c.is_in(sp.special.implode())
    chunks = chunks.with_columns(__plain=plain)
    rest = chunks.filter(~pl.col("__plain")).get_column(column).unique(maintain_order=True)
    tokens = _distinct_tokens(pl.DataFrame({column: rest}), column).rename({"words": "__words"})
    return (
        chunks.join(tokens, on=column, how="left", maintain_order="left")
        .with_columns(words=pl.when("__plain").then(pl.concat_list(c)).otherwise("__words"))
        .drop("__plain", "__words")
    )


def _any_of(patterns: tuple[str, ...]) -> str:
    """One regex matching where any of ``patterns`` matches (one pass instead of one per pattern)."""
    return "|".join(f"(?:{p})" for p in patterns)


def _distinct_tokens(chunks: pl.DataFrame, column: str) -> pl.DataFrame:
    """``chunk_tokens`` for a frame of distinct strings (rows come back grouped by how they were settled)."""
    sp = spacy_english()
    c = pl.col(column)
    head, tail = c.str.head(-1), c.str.tail(-1)
    is_special = (
        c.is_in(sp.special.implode()) | head.is_in(sp.special.implode()) | tail.is_in(sp.special.implode())
    )
    # Chunks of the plain shapes are settled without the guards (most of them): only the others pay for them.
    shaped = chunks.with_columns(__special=is_special, __plain=c.str.contains(_rx(_any_of(_EASY_SHAPES))))
    special, plain = pl.col("__special"), pl.col("__plain")
    settled = shaped.filter(~special & plain).select(column)
    rest = shaped.filter(special | ~plain)
    runs_ok = ~c.str.contains(sp.guard_runs)
    guarded = ~c.str.contains_any(sp.guard_substrings) & runs_ok
    possessive = (
        ~c.str.contains_any([x for x in sp.guard_substrings if x not in _POSSESSIVES])
        & runs_ok
        & c.str.contains(_rx(_any_of(_POSSESSIVE_SHAPES)))
    )
    flags = rest.with_columns(
        __easy=~special & (possessive | (guarded & c.str.contains(_rx(_any_of(_GUARDED_SHAPES)))))
    ).with_columns(
        __whole=~pl.col("__easy") & ~special & guarded & c.str.contains(_rx(_any_of(_WHOLE_SHAPES)))
    )
    easy = pl.concat([settled, flags.filter("__easy").select(column)]).select(
        column, words=c.str.extract_all(_rx(_EASY_TOKEN))
    )
    whole = flags.filter("__whole").select(column, words=pl.concat_list(c))
    hard = flags.filter(~pl.col("__easy") & ~pl.col("__whole")).get_column(column)
    toks = _list_series(sp.tokenize(hard.to_list()))
    return pl.concat([easy, whole, pl.DataFrame({column: hard, "words": toks})])


def _list_series(lists: list[list[str]]) -> pl.Series:
    """A list[str] Series from Python lists, built from flat arrays (polars is slow on nested input)."""
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    flat = pa.array([t for x in lists for t in x], pa.large_string())
    arr = pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), flat)
    return pl.Series(arr).cast(pl.List(pl.String))


def split_words_en(frame: pl.DataFrame) -> pl.DataFrame:
    """datatrove-compatible English words for ``frame`` (``doc, text``): ``doc, word, chars, flags`` in
    order (see :func:`with_word_stats`); the polars path of the split, and the reference for the native one.

    Plain chunks (see :func:`chunk_tokens`) are words as they are; only the others are looked up and
    exploded, and the two ordered parts are merged back by chunk position.
    """
    sp = spacy_english()
    c = pl.col("chunk")
    chunks = chunks_frame(frame).with_row_index("pos")
    plain = c.str.contains(_rx(_PLAIN)) & ~c.is_in(sp.special.implode())
    chunks = chunks.with_columns(__plain=plain)
    words = chunks.filter("__plain").select("pos", "doc", word="chunk")
    rest = chunks.filter(~pl.col("__plain")).drop("__plain")
    tokens = _distinct_tokens(
        pl.DataFrame({"chunk": rest.get_column("chunk").unique(maintain_order=True)}), "chunk"
    )
    other = (
        rest.lazy()
        .join(tokens.lazy(), on="chunk", how="left", maintain_order="left")
        .select("pos", "doc", word="words")
        .explode("word")
        .drop_nulls("word")
        .collect()
    )
    return with_word_stats(words.merge_sorted(other, key="pos").drop("pos"))


def with_word_stats(words: pl.DataFrame) -> pl.DataFrame:
    """Add ``chars`` (uint32: characters) and ``flags`` (uint8: bit 0 when the word has a character outside
    datatrove's punctuation set, bit 1 when it has a letter: a character ``str.isalpha()`` is true for, as in
    datatrove's test) to a ``doc, word`` frame, as the native split gives them."""
    w = pl.col("word")
    letter = w.str.contains(_rx(r"\p{L}"))
    return words.with_columns(
        chars=w.str.len_chars().cast(pl.UInt32),
        flags=w.str.contains(NON_PUNCT_CHAR).cast(pl.UInt8) | (letter.cast(pl.UInt8) * 2),
    )


class _Native:
    """The native split's state in a process: spaCy's special cases and datatrove's punctuation as C tables,
    and a cache of every non-plain chunk's words seen so far (bytes to words, bounded like spaCy's)."""

    # ~110 bytes an entry (the chunk, its words and their lengths, flags, and a slot): 437,333 distinct
    # non-plain chunks on the whole web corpus; a worker forgets them all past a million (~150 MB).
    MAX_CHUNKS = 1_000_000

    def __init__(self, special: list[str]) -> None:
        from datatrove.utils.text import PUNCTUATION_SET

        self.ext = N.module()
        self.tables = self.ext.tables([x.encode() for x in special], sorted(map(ord, PUNCTUATION_SET)))
        self.cache = self.ext.cache()
        # A plan is good until the cache is cleared: threads sharing this process take turns from scan to use.
        self.lock = threading.Lock()

    def plan(self, text: pl.Series, sentences: Any = None) -> tuple[Any, pa.Buffer]:
        """Scan ``text`` (one chunk list per row) with every chunk it needs in the cache: the native plan and
        the text's data buffer. ``sentences`` (``curate.filters.c4._sentence_tables()``) scans for sentence
        counts: only chunks with a sentence-ending character need their words then. Callers hold
        ``self.lock`` from here until they have used the plan."""
        arr = N.large_strings(text.to_arrow())
        data = N.data(arr)
        if self.ext.cache_len(self.cache) > self.MAX_CHUNKS:  # bound a worker's memory on huge corpora
            self.ext.cache_clear(self.cache)
        missing, plan = self.ext.scan(self.tables, self.cache, N.offsets(arr), data, sentences)
        if missing:
            self._add(
                _distinct_tokens(pl.DataFrame({"chunk": missing}, schema={"chunk": pl.String}), "chunk")
            )
        return plan, data

    def split(self, text: pl.Series) -> tuple[np.ndarray, pa.LargeStringArray, np.ndarray, np.ndarray]:
        """Words of every text: the row of each word's text (uint32), the words, their characters (uint32) and
        flags (uint8; bit 0: a character outside datatrove's punctuation, bit 1: a letter)."""
        with self.lock:
            plan, data = self.plan(text)
            doc, offsets, words, chars, flags = self.ext.emit(self.cache, plan, data)
        n = len(chars) // 4
        out = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(words))
        return (
            np.frombuffer(doc, np.uint32),
            out,
            np.frombuffer(chars, np.uint32),
            np.frombuffer(flags, np.uint8),
        )

    def sentences(self, lines: pl.Series, tables: Any) -> np.ndarray:
        """Sentences of every line (int64) by the ``sentences`` kernel over this cache, ``tables`` from
        ``curate.filters.c4._sentence_tables()``."""
        with self.lock:
            plan, data = self.plan(lines, tables)
            counts = self.ext.sentences(self.cache, plan, tables, data)
        return np.frombuffer(counts, np.int64).copy()

    def _add(self, tokens: pl.DataFrame) -> None:
        """Cache the words of the distinct chunks in ``tokens`` (``chunk``, ``words``)."""
        chunks = N.large_strings(tokens.get_column("chunk").to_arrow())
        lists = tokens.get_column("words").to_arrow().cast(pa.large_list(pa.large_string()))
        if isinstance(lists, pa.ChunkedArray):
            lists = lists.combine_chunks()
        values = lists.values
        self.ext.cache_add(
            self.tables,
            self.cache,
            N.offsets(chunks),
            N.data(chunks),
            N.offsets(lists),
            N.offsets(values),
            N.data(values),
        )


def split_words_en_native(frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`split_words_en` by the native split (the same rows)."""
    sp = spacy_english()
    assert sp.native is not None
    row, words, chars, flags = sp.native.split(frame.get_column("text"))
    doc = frame.get_column("doc")
    docs = pl.Series("doc", row) if plain_docs(frame) else doc.gather(row)
    return pl.DataFrame(
        {
            "doc": docs.cast(pl.UInt32),
            "word": pl.Series("word", words, dtype=pl.String),
            "chars": chars,
            "flags": flags,
        }
    )


def plain_docs(frame: pl.DataFrame) -> bool:
    """Whether the frame's ``doc`` column is its row index 0..n-1."""
    return bool(np.array_equal(frame.get_column("doc").to_numpy(), np.arange(frame.height)))
