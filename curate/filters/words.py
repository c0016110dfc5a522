"""Word splitting for the heuristic filters, batch at a time: the word tables and their memo.

Two splitters:

* ``"en"`` reproduces datatrove 0.10's English word tokenizer (a ``spacy.blank("en")`` tokenizer,
  whitespace-only tokens dropped): :mod:`curate.filters.words_en`, by the native module where the filters
  take it (:mod:`curate.filters.native`: built, and ``CURATE_NATIVE`` not ``0``), else by polars and spaCy;
  both paths take spaces and letters from the interpreter's Unicode database (see that module).
* ``"generic"`` is the documented fallback for other scripts: runs of letters/digits/marks are words,
  every other non-space character is its own token, and every Han, Hiragana, Katakana, Thai, Lao,
  Khmer, Myanmar or Tibetan character is a word by itself (those scripts do not separate words with spaces,
  so "a character is a word" gives counts on a sane scale instead of one giant "word" per sentence).
  It has one path, polars: its runs and scripts are polars' Unicode classes (``unicodedata`` has no
  scripts), its spaces Python's.

Both return a polars frame with one row per word, in text order: ``doc`` (row index in the batch,
uint32), ``word`` (string), ``chars`` (its characters) and ``flags`` (whether it has a character outside
datatrove's punctuation set, and a letter: one ``str.isalpha()`` is true for). Documents without words
have no rows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
import pyarrow as pa
import xxhash

from curate.filters import native as N
from curate.filters import words_en as E
from curate.filters._text import PY_SPACE

_CJK_LIKE = r"\p{Han}|\p{Hiragana}|\p{Katakana}|\p{Thai}|\p{Lao}|\p{Khmer}|\p{Myanmar}|\p{Tibetan}"
_GENERIC_TOKEN = rf"(?:{_CJK_LIKE})|[\p{{L}}\p{{N}}\p{{M}}--\p{{Han}}]+|[^{PY_SPACE}]"

Splitter = Literal["en", "generic"]


def texts_frame(texts: pa.Array | pa.ChunkedArray | list[str] | pl.Series) -> pl.DataFrame:
    """A frame ``doc, text`` for a batch's text column (nulls become empty strings)."""
    s = texts if isinstance(texts, pl.Series) else pl.Series("text", texts, dtype=pl.String)
    return pl.DataFrame({"text": s.fill_null("")}).with_row_index("doc")


def split_words_generic(frame: pl.DataFrame) -> pl.DataFrame:
    """Script-agnostic fallback words (see the module docstring): ``doc, word, chars, flags`` in order."""
    return E.with_word_stats(
        frame.lazy()
        .select("doc", pl.col("text").str.extract_all(_GENERIC_TOKEN).alias("word"))
        .explode("word")
        .drop_nulls("word")
        .collect()
    )


# Memo of the last few word tables, keyed by splitter and a digest of the batch's ``doc``/``text`` content.
# Several filters scoring the same unchanged batch one after another ("score once, select many") then
# split its words once. A batch whose rows changed (e.g. after a filter rejected some) is looked up by
# its texts: when every text of it is a text of a remembered batch, its words are gathered from that
# batch's words (a document's words depend on its text alone), else it is split again. Entries are
# frames of a few MB; at most _MEMO_SIZE are kept.
_MEMO_SIZE = 4


@dataclass
class _Entry:
    words: pl.DataFrame  # doc, word, chars, flags in text order, docs ascending
    text: pl.Series  # the batch's texts (row = doc)
    starts: np.ndarray  # words of doc d: rows starts[d] to starts[d + 1]
    plain: bool  # docs are the row index 0..n-1 (only then can rows be gathered from it)


_MEMO: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def _content_key(frame: pl.DataFrame, splitter: str) -> tuple[str, str]:
    """``splitter`` and an xxh3-128 digest of the ``doc`` and ``text`` columns' Arrow buffers."""
    h = xxhash.xxh3_128()
    for name in ("doc", "text"):
        arr = frame.get_column(name).to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        h.update(f"{name}:{arr.type}:{arr.offset}:{len(arr)}:{arr.null_count};".encode())
        for buf in arr.buffers():
            h.update(b"|" if buf is None else memoryview(buf))
            h.update(b"#")
    return splitter, h.hexdigest()


def _entry(words: pl.DataFrame, frame: pl.DataFrame) -> _Entry:
    text, plain = frame.get_column("text"), E.plain_docs(frame)
    starts = np.zeros(len(text) + 1, dtype=np.int64)
    if plain:
        np.cumsum(np.bincount(words.get_column("doc").to_numpy(), minlength=len(text)), out=starts[1:])
    return _Entry(words=words, text=text, starts=starts, plain=plain)


def _gather(frame: pl.DataFrame, entry: _Entry) -> pl.DataFrame | None:
    """The words of ``frame`` taken from ``entry`` when every text of ``frame`` is one of the entry's
    texts (compared in full, not by hash), else None."""
    if not (entry.plain and E.plain_docs(frame)):
        return None  # docs are not the row index: split as asked
    text = frame.get_column("text")
    if len(text) and not (entry.text == text[-1]).any():
        return None  # cheap refusal of another batch's entry before joining all the texts
    old = pl.DataFrame({"text": entry.text}).with_row_index("old").unique("text", keep="first")
    hit = (
        pl.DataFrame({"text": text}).join(old, on="text", how="left", maintain_order="left").get_column("old")
    )
    if hit.null_count():
        return None
    src = hit.to_numpy().astype(np.int64)
    lo, n = entry.starts[src], entry.starts[src + 1] - entry.starts[src]
    total = int(n.sum())
    offsets = np.zeros(len(src), dtype=np.int64)
    np.cumsum(n[:-1], out=offsets[1:])
    rows = np.repeat(lo - offsets, n) + np.arange(total, dtype=np.int64)
    doc = np.repeat(np.arange(len(src), dtype=np.uint32), n)
    rest = entry.words.drop("doc")[rows]
    return rest.insert_column(0, pl.Series("doc", doc, dtype=pl.UInt32))


def split_words(frame: pl.DataFrame, splitter: Splitter = "en") -> pl.DataFrame:
    """Words of every document in ``frame`` (``doc, text``) as ``doc, word, chars, flags`` rows (see
    :func:`curate.filters.words_en.with_word_stats`), in text order. ``en`` takes the native split where
    the filters take the native module (see the module docstring), else the polars path: the same rows.

    Results for the last few distinct batches are memoized (see ``_MEMO``), so consecutive filters on
    the same batch, or on what an earlier filter kept of it, share one split. Callers get their own
    shallow copy of the frame.
    """
    if splitter not in ("en", "generic"):
        raise ValueError(f"unknown word splitter {splitter!r}; valid: en, generic")
    key = _content_key(frame, splitter)
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit.words.clone()
        earlier = [e for (sp, _), e in reversed(_MEMO.items()) if sp == splitter]
    words = None
    for entry in earlier:
        words = _gather(frame, entry)
        if words is not None:
            break
    if words is None:
        if splitter == "generic":
            words = split_words_generic(frame)
        else:
            words = E.split_words_en_native(frame) if N.enabled() else E.split_words_en(frame)
    with _MEMO_LOCK:
        _MEMO[key] = _entry(words, frame)
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return words.clone()


def clear_word_memo() -> None:
    """Forget memoized word tables (benchmarks measuring the split itself call this)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def words_lists(texts: list[str], splitter: Splitter = "en") -> list[list[str]]:
    """Convenience for tests and debugging: the words of each text as Python lists."""
    frame = texts_frame(texts)
    words = split_words(frame, splitter)
    grouped = words.group_by("doc", maintain_order=True).agg("word")
    out: list[list[str]] = [[] for _ in texts]
    for doc, ws in grouped.iter_rows():
        out[doc] = ws
    return out


def per_doc(values: pl.DataFrame, n_docs: int, column: str, fill: Any = 0) -> pl.Series:
    """Align a ``doc, <column>`` aggregate to all ``n_docs`` rows, filling docs without rows."""
    base = pl.DataFrame({"doc": pl.arange(0, n_docs, eager=True, dtype=pl.UInt32)})
    out = base.join(values.select("doc", column), on="doc", how="left", maintain_order="left")
    return out.get_column(column).fill_null(fill)
