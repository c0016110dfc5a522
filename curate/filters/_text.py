"""Shared text pieces for the heuristic filters: Python's whitespace, letters and line rules as polars
expressions, datatrove's punctuation sets as regex classes, and duplicate counting over exploded pieces.

Spaces and letters are the interpreter's (``str.isspace()``, ``str.isalpha()``: its Unicode database), as
datatrove and spaCy see them and as the native module (curate/filters/_native.c) classifies them, never the
regex crate's ``\\s`` or ``\\p{L}`` (polars' own Unicode tables, newer than the interpreter's): the
classes below are written from the interpreter, so a polars path and the native one decide every
character alike.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import polars as pl
import pyarrow as pa
from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

from curate.core import schema

# Characters for which Python's str.isspace() is true (Unicode White_Space plus \x1c-\x1f).
# (written out: scanning all of Unicode for them cost ~0.1 CPU-s in every process that imports this;
# tests/filters/test_text.py checks the list against str.isspace)
PY_SPACE_CHARS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# The same characters as the body of a regex class (``[{PY_SPACE}]``, ``[^{PY_SPACE}]``), not ``\s``.
PY_SPACE = "".join(f"\\x{{{ord(c):X}}}" for c in PY_SPACE_CHARS)
# Line boundaries of str.splitlines() other than "\n" (with "\r\n" first so it counts once).
SPLITLINES_SEP = r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]"


def char_class(chars: set[str] | str, *, negate: bool = False) -> str:
    """A regex character class of exactly ``chars`` (every character escaped as ``\\x{HEX}``)."""
    body = "".join(f"\\x{{{ord(c):X}}}" for c in sorted(set(chars)))
    return f"[{'^' if negate else ''}{body}]"


@functools.cache
def py_letter_class() -> str:
    """A regex class, ``[...]``, of exactly the code points for which this interpreter's ``str.isalpha()``
    is true (Unicode categories Lu, Ll, Lt, Lm, Lo in its Unicode database: 14.0 on Python 3.11), the
    letters datatrove counts and the native module's ``Py_UNICODE_ISALPHA`` sees. The polars paths test
    letters with it, never with ``\\p{L}``, whose tables (the regex crate's, Unicode 16 in polars 2.1) call
    thousands more code points letters (9,272 with Python 3.11), U+13460 among them.

    Computed once per process, on first use (about 0.1 CPU-s): ``re``'s ``[^\\W\\d_]`` (letters and the
    numerics that are not decimal digits, by the same database) finds the runs over all code points, and a
    run that is not all letters is cut at its other characters.
    """
    ranges: list[tuple[int, int]] = []
    for lo, hi in ((0, 0xD800), (0xE000, 0x110000)):  # every code point but the surrogates
        text = np.arange(lo, hi, dtype="<u4").tobytes().decode("utf-32-le")
        for run in re.finditer(r"[^\W\d_]+", text):
            if run.group().isalpha():
                ranges.append((lo + run.start(), lo + run.end() - 1))
                continue
            cut = "".join(c if c.isalpha() else "_" for c in run.group())
            for part in re.finditer(r"[^\W\d_]+", cut):
                ranges.append((lo + run.start() + part.start(), lo + run.start() + part.end() - 1))
    return "[" + "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b > a else "") for a, b in ranges) + "]"


# A word with a character outside datatrove's PUNCTUATION_SET is a "non-symbol" word.
NON_PUNCT_CHAR = char_class(PUNCTUATION_SET, negate=True)
TERMINAL_PUNCT_END = char_class(TERMINAL_PUNCTUATION) + "$"


def text_series(table: pa.Table) -> pl.Series:
    """The text column of a batch as a polars Series (nulls as empty strings)."""
    col = table.column(schema.TEXT)
    return pl.Series("text", col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)).fill_null("")


def doc_frame(table: pa.Table) -> pl.DataFrame:
    """``doc`` (row index, uint32) and ``text`` for a batch."""
    return pl.DataFrame({"text": text_series(table)}).with_row_index("doc")


def splitlines_expr(text: pl.Expr) -> pl.Expr:
    """``str.splitlines()`` pieces, except that a final line break leaves one extra empty piece.

    Callers that count lines use :func:`splitlines_count`; the extra piece never matches a line test.
    """
    return text.str.replace_all(SPLITLINES_SEP, "\n").str.split("\n")


def splitlines_count(text: pl.Expr) -> pl.Expr:
    """``len(text.splitlines())``."""
    norm = text.str.replace_all(SPLITLINES_SEP, "\n")
    n = norm.str.count_matches("\n", literal=True) + 1
    n = n - norm.str.ends_with("\n").cast(pl.UInt32)
    return pl.when(text.str.len_bytes() == 0).then(0).otherwise(n)


def duplicate_stats(pieces: pl.DataFrame, n_docs: int, *, column: str = "piece") -> pl.DataFrame:
    """datatrove's ``find_duplicates`` for every doc: ``doc, n, dup_count, dup_chars``.

    ``pieces`` has ``doc`` and ``column`` in order; an element is a duplicate when an equal element came
    earlier in the same document, and ``dup_chars`` sums the duplicates' character lengths.
    """
    first = pl.struct("doc", column).is_first_distinct()
    stats = (
        pieces.lazy()
        .with_columns(dup=~first, n_chars=pl.col(column).str.len_chars())
        .group_by("doc")
        .agg(
            n=pl.len(),
            dup_count=pl.col("dup").sum(),
            dup_chars=pl.col("n_chars").filter(pl.col("dup")).sum(),
        )
        .collect()
    )
    base = pl.DataFrame({"doc": pl.arange(0, n_docs, eager=True, dtype=pl.UInt32)})
    return base.join(stats, on="doc", how="left", maintain_order="left").fill_null(0)
