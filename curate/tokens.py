"""Token counts for the per-stage accounting: the unit every training budget is written in.

With a tokenizer configured (``export.tokenizer``: a Hugging Face ``tokenizer.json``), every stage's
documents are counted with it (no special tokens); otherwise with a fast whitespace-word count
(maximal runs of non-whitespace characters, vectorized in polars). The manifest names the unit in its
top-level ``tokens_unit`` (``whitespace_words`` or ``tokenizer:<file name>``), so the two are never
confused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from curate import schema

WHITESPACE_WORDS = "whitespace_words"
_BATCH = 1024


class TokenCounter:
    """Counts the tokens of a batch's ``text`` column; picklable (a tokenizer loads lazily, per worker).

    ``tokenizer``: path of a ``tokenizer.json``; ``None`` counts whitespace-separated words.
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
            s = pl.Series(text).fill_null("").str.count_matches(r"\S+")
            return s.to_numpy().astype(np.int64, copy=False)
        if self._tok is None:
            from tokenizers import Tokenizer

            self._tok = Tokenizer.from_file(str(self.tokenizer))
        values = [t or "" for t in text.to_pylist()]
        out = np.zeros(len(values), dtype=np.int64)
        for s0 in range(0, len(values), _BATCH):
            enc = self._tok.encode_batch(values[s0 : s0 + _BATCH], add_special_tokens=False)
            out[s0 : s0 + len(enc)] = [len(e.ids) for e in enc]
        return out


def token_counter(export_section: dict[str, Any] | None) -> TokenCounter:
    """The run's counter: ``export.tokenizer`` when set (resolved as the export resolves it: relative
    to the working directory), else whitespace words. A configured tokenizer that does not exist is
    an error naming the key and the path."""
    path = (export_section or {}).get("tokenizer")
    if not path:
        return TokenCounter()
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(
            f"export.tokenizer: {path} does not exist; give a Hugging Face tokenizer.json or remove the key "
            "(tokens are then counted as whitespace words)"
        )
    return TokenCounter(str(p.resolve()))
