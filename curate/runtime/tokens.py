"""Token counts for the per-stage accounting: the unit every training budget is written in.

One rule picks a run's unit (:func:`token_counter`), so that a count and a yield mean one tokenizer where
the run has one before its stages start: the export's tokenizer when ``export.tokenizer`` names one (a
Hugging Face ``tokenizer.json``, by path or URL, or a name such as ``gpt2``,
:mod:`curate.io.named_tokenizers`): the tokens the shards will hold; else the proxy's when
``proxy.tokenizer.path`` fixes it (its yields then count the same tokens); else a fast whitespace-word
count (maximal runs of non-whitespace characters, counted on the UTF-8 bytes in numpy), since a proxy
tokenizer trained on the input exists only after the stages ran. Documents are counted without special
tokens. The manifest names the unit in its top-level ``tokens_unit`` (``whitespace_words`` or
``tokenizer:<file or name>``) and every table that prints a count says it (:func:`unit_label`). The
verdict's yields and goodput are always in the proxy tokenizer's tokens (``goodput.json``'s
``tokenizer``): its multiplier is measured in them, and yield x multiplier is the same number in any
tokenizer only when both are counted in one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.io import named_tokenizers, paths
from curate.io.storage import Location, StorageError, is_remote, local_copy, redact

WHITESPACE_WORDS = "whitespace_words"
_BATCH = 1024


class TokenCounter:
    """Counts the tokens of a batch's ``text`` column; picklable (a tokenizer loads lazily, per worker).

    ``tokenizer``: an absolute path or an object store's URL of a ``tokenizer.json`` (a worker fetches
    the object once into its cache, :func:`curate.io.storage.local_copy`), or a name of
    :mod:`curate.io.named_tokenizers` (built where it is used, so no file travels); ``None`` counts
    whitespace-separated words.
    """

    def __init__(self, tokenizer: str | None = None) -> None:
        self.tokenizer = tokenizer
        self._tok: Any = None
        self._last: tuple[pa.Table, int] | None = None

    @property
    def unit(self) -> str:
        return f"tokenizer:{Path(self.tokenizer).name}" if self.tokenizer else WHITESPACE_WORDS

    def __getstate__(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer, "_tok": None, "_last": None}

    def count(self, table: pa.Table) -> int:
        """Tokens in ``table``'s texts (0 for an empty table). The table last counted is remembered:
        a stage's output is the next stage's input, so each batch is counted once per stage."""
        if self._last is not None and self._last[0] is table:
            return self._last[1]
        n = int(self.per_row(table.column(schema.TEXT)).sum()) if table.num_rows else 0
        self._last = (table, n)
        return n

    def per_row(self, text: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Tokens of every text (int64, a null counts 0): summed over any subset of rows, the count of
        that subset, so the segment worker counts each text once and filters the counts with the rows."""
        if len(text) == 0:
            return np.zeros(0, dtype=np.int64)
        if self.tokenizer is None:
            return whitespace_word_counts(text)
        if self._tok is None:
            from tokenizers import Tokenizer

            found = named_tokenizers.named(self.tokenizer)
            self._tok = (
                Tokenizer.from_str(found.json_text)
                if found
                else Tokenizer.from_file(local_copy(self.tokenizer))
            )
        values = [t or "" for t in text.to_pylist()]
        out = np.zeros(len(values), dtype=np.int64)
        for s0 in range(0, len(values), _BATCH):
            enc = self._tok.encode_batch(values[s0 : s0 + _BATCH], add_special_tokens=False)
            out[s0 : s0 + len(enc)] = [len(e.ids) for e in enc]
        return out


# Unicode White_Space (what ``\\s`` matches in polars' regex engine) beyond ASCII: UTF-8 sequences read as one
# integer each (lead byte first), for the rare bytes that can start one.
_WIDE = [
    c.encode()
    for c in "\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B)))
]
_LEAD = np.zeros(256, dtype=bool)
_LEAD[[w[0] for w in _WIDE]] = True
_WIDE2 = np.array([int.from_bytes(w, "big") for w in _WIDE if len(w) == 2], dtype=np.int64)
_WIDE3 = np.array([int.from_bytes(w, "big") for w in _WIDE if len(w) == 3], dtype=np.int64)


def whitespace_word_counts(text: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Maximal runs of non-whitespace characters in every text (int64; a null counts 0): what
    ``str.count_matches(r"\\S+")`` counts, with Unicode White_Space as whitespace (so \\x1c-\\x1f are
    not), computed on the UTF-8 bytes in numpy (2-3x less CPU than the regex on the web corpora;
    benchmarks/bench_token_count.py).

    A byte is whitespace when it is an ASCII space character or part of one of the 19 wider Unicode
    spaces; every byte of a character then agrees with the character, so a word starts at each
    non-whitespace byte that follows a whitespace byte or begins a text."""
    arr = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, np.int64)[arr.offset : arr.offset + n + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    b = (
        np.frombuffer(data_buf, np.uint8)[lo:hi]
        if data_buf is not None and hi > lo
        else np.zeros(0, np.uint8)
    )
    rel = offsets - lo
    space = (b == 32) | ((b - np.uint8(9)) <= np.uint8(4))  # \t \n \v \f \r and " " (uint8 wraps below 9)
    lead = np.flatnonzero(b >= 0xC2)
    lead = lead[_LEAD[b[lead]]]
    if len(lead):
        end = len(b) - 1  # (valid UTF-8 has the continuation bytes inside the buffer)
        b1, b2 = b[np.minimum(lead + 1, end)], b[np.minimum(lead + 2, end)]
        two = (b[lead].astype(np.int64) << 8) | b1
        three = (two << 8) | b2
        for width, hit in ((2, np.isin(two, _WIDE2)), (3, np.isin(three, _WIDE3))):
            at = lead[hit]
            for j in range(width):
                space[at + j] = True
    # word starts inside the buffer: a non-space byte after a space byte; then each non-empty text whose
    # first byte is no space starts a word even when the text before it ended without one
    inner = np.flatnonzero(~space[1:] & space[:-1]) + 1
    counts = np.diff(np.searchsorted(inner, rel, side="left")).astype(np.int64)
    first = rel[:-1]
    nonempty = rel[1:] > first
    at = first[nonempty]
    counts[nonempty] += ~space[at] & ((at == 0) | ~space[np.maximum(at - 1, 0)])
    if arr.null_count:
        counts[~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = 0
    return counts


def unit_label(tokens_unit: str) -> str:
    """A ``tokens_unit`` in a word, beside a count or in a table's header: the tokenizer's name or file
    (``gpt2``, ``proxy_tokenizer_python_docs.json``), or ``words``."""
    if tokens_unit.startswith("tokenizer:"):
        return tokens_unit.split(":", 1)[1]
    return "words" if tokens_unit == WHITESPACE_WORDS else tokens_unit


def token_counter(export_section: dict[str, Any] | None, proxy_tokenizer: str | None = None) -> TokenCounter:
    """The run's counter (the module docstring's rule): ``export.tokenizer`` when set, else the proxy's
    tokenizer file (``proxy_tokenizer``: ``proxy.tokenizer.path``) when there is one, else whitespace
    words. ``export.tokenizer: proxy`` is the proxy's tokenizer: its file when fixed, else whitespace
    words (the proxy phase trains that tokenizer after the stages ran).

    A file is the one the export will use: the pipeline's load resolved it once
    (:func:`curate.io.paths.locate`; a relative path given here resolves by the same rule, without a
    pipeline). It is checked here, before any stage runs: a local file that is nowhere, or an object
    that cannot be read, is a ``FileNotFoundError`` naming the key, the value and where it was looked
    for; a name is built as :mod:`curate.io.named_tokenizers` builds it."""
    ref = (export_section or {}).get("tokenizer")
    if not ref or ref == named_tokenizers.PROXY:
        if not proxy_tokenizer:
            return TokenCounter()
        try:
            return TokenCounter(str(paths.locate(proxy_tokenizer, key="proxy.tokenizer.path")))
        except paths.PathNotFound as e:
            raise FileNotFoundError(f"{e}; give the proxy's tokenizer.json or remove the key") from None
    if ref in named_tokenizers.BUILDERS:
        named_tokenizers.named(ref)  # a missing package fails here, before any stage runs
        return TokenCounter(ref)
    hint = (
        "; give a Hugging Face tokenizer.json or remove the key (tokens are then counted as whitespace words)"
    )
    if is_remote(ref):
        try:
            found = Location.of(ref).exists()
        except StorageError as e:
            raise FileNotFoundError(f"export.tokenizer: {e}{hint}") from None
        if not found:
            raise FileNotFoundError(f"export.tokenizer: {redact(ref)} does not exist (no such object){hint}")
        return TokenCounter(ref)
    try:
        return TokenCounter(paths.locate(ref, key="export.tokenizer"))
    except paths.PathNotFound as e:
        raise FileNotFoundError(f"{e}{hint}") from None
