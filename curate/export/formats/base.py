"""The writer interface every export format implements, and the registry that finds them.

A format is one module of :mod:`curate.export.formats` holding one :class:`Writer` subclass registered
by name, as a stage is (``@WRITERS.add("parquet")``): its name is what ``export.formats`` and
``--format`` accept, and an unknown name lists the known ones. The class says what kind of data it
writes (``tokens``: token ids, which need a tokenizer; else text rows), whether it is written by default
(``default``), and which names directly under ``export/`` it owns (``owns``: the exporter replaces those
and carries every other file over). ``docs/adding-a-format.md`` walks through adding one.

The exporter gives a writer what it has, already in the export's order (the same documents in the same
order in every format):

* a **token** writer is called once per token shard (:class:`TokenShard`: one split's documents, cut by
  ``shard_tokens``, gathered once for every token format written);
* a **text** writer is called once with every split's rows (:class:`TextSplits`).

Each call returns the entries of the files it wrote (:data:`Entry`: ``path`` relative to the export
folder, ``format``, and what the file holds); the exporter adds their sizes and sha256 to the manifest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.core.registry import Registry
from curate.export.tokenizer_spec import TokenizerSpec

WRITERS = Registry("export format", "WRITERS")

Entry = dict[str, Any]  # one written file: path (relative to export/), format, and split/shard/docs/tokens


@dataclass(frozen=True)
class TokenShard:
    """Shard ``index`` of ``split``: the token ids of its documents back to back (each document's ids
    then one EOS), their ``lengths``, and the tokenizer they were made with."""

    split: str
    index: int
    tokens: np.ndarray
    lengths: np.ndarray
    tokenizer: TokenizerSpec

    @property
    def prefix(self) -> str:
        """The file name stem every token format gives this shard: ``train_00000``."""
        return f"{self.split}_{self.index:05d}"

    def entry(self, path: str, fmt: str) -> Entry:
        """The manifest entry of one file of this shard."""
        return {
            "path": path,
            "format": fmt,
            "split": self.split,
            "shard": self.index,
            "docs": int(self.lengths.size),
            "tokens": int(self.tokens.size),
        }


@dataclass(frozen=True)
class TextSplits:
    """Every split's rows in export order (the columns the export carries), with what a dataset card
    says of them: ``name`` (the dataset's title), ``card`` (seed, validation fraction, tokens per split,
    the tokenizer's record, the token formats written, the mixture's report) and ``notes`` (each other
    format's paragraph on how to read it, :meth:`Writer.card_note`)."""

    splits: dict[str, pa.Table]
    name: str
    card: dict[str, Any]
    notes: tuple[str, ...] = ()


class Writer(ABC):
    """One export format. Subclass :class:`TokenWriter` or :class:`TextWriter`, not this.

    Attributes:
        name: the format's name (set by ``@WRITERS.add``).
        tokens: whether it writes token ids (and so needs ``export.tokenizer``) rather than text rows.
        default: whether an export writes it when ``export.formats`` is not given (a token format only
            when a tokenizer is named).
        owns: the files and folders directly under ``export/`` that it writes.
    """

    name: ClassVar[str]
    tokens: ClassVar[bool]
    default: ClassVar[bool] = False
    owns: ClassVar[tuple[str, ...]]

    def card_note(self, tokenizer: dict[str, Any] | None) -> str:
        """A paragraph for the dataset card on reading this format (``tokenizer``: the manifest's record
        of it, None without one); empty when the card's own text says enough."""
        return ""


class TokenWriter(Writer):
    """A format of token ids, written shard by shard."""

    tokens = True

    @abstractmethod
    def write(self, shard: TokenShard, out: Path, opts: Any) -> list[Entry]:
        """Write ``shard`` under the export folder ``out``; ``opts`` is the export's
        :class:`~curate.export.options.ExportOptions`. Returns the entries of the files written."""


class TextWriter(Writer):
    """A format of text rows, written once with every split."""

    tokens = False

    @abstractmethod
    def write(self, text: TextSplits, out: Path, opts: Any) -> list[Entry]:
        """Write ``text`` under the export folder ``out``; ``opts`` is the export's
        :class:`~curate.export.options.ExportOptions`. Returns the entries of the files written."""
