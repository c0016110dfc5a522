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
        n = self._count(table.column(schema.TEXT)) if table.num_rows else 0
        self._last = (table, n)
        return n

    def _count(self, text: pa.ChunkedArray | pa.Array) -> int:
        if self.tokenizer is None:
            return int(pl.Series(text).fill_null("").str.count_matches(r"\S+").sum())
        if self._tok is None:
            from tokenizers import Tokenizer

            self._tok = Tokenizer.from_file(str(self.tokenizer))
        values = [t or "" for t in text.to_pylist()]
        total = 0
        for s in range(0, len(values), _BATCH):
            enc = self._tok.encode_batch(values[s : s + _BATCH], add_special_tokens=False)
            total += sum(len(e.ids) for e in enc)
        return total


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
