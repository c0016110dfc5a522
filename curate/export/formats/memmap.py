"""The flat token format nanoGPT reads with ``np.memmap``, plus a document-boundary index.

``PREFIX.bin`` is every document's ids back to back (EOS after each), raw little-endian uint16 when the
vocabulary fits (at most 65,536 ids), else uint32: read it with
``np.memmap(path, dtype=np.uint16, mode="r")`` (the dtype is recorded in the export manifest).
``PREFIX.doc_idx.npy`` is an int64 array of ``docs + 1`` token offsets: document ``i`` is
``tokens[doc_idx[i]:doc_idx[i + 1]]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.export.formats.base import WRITERS, Entry, TokenShard, TokenWriter
from curate.io.files import atomic_save_npy, atomic_write_bytes

if TYPE_CHECKING:
    from curate.export.options import ExportOptions


def write_memmap(
    prefix: Path, tokens: np.ndarray, lengths: np.ndarray, *, dtype: np.dtype
) -> tuple[Path, Path]:
    """Write ``prefix.bin`` (raw ids) and ``prefix.doc_idx.npy`` (document start offsets, then the total)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if int(lengths.sum()) != tokens.size:
        raise ValueError(f"{prefix}: lengths sum to {int(lengths.sum())} but there are {tokens.size} tokens")
    bin_path = prefix.with_name(prefix.name + ".bin")
    idx_path = prefix.with_name(prefix.name + ".doc_idx.npy")
    atomic_write_bytes(
        bin_path, np.ascontiguousarray(tokens, dtype=np.dtype(dtype).newbyteorder("<")).tobytes(order="C")
    )
    atomic_save_npy(idx_path, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    return bin_path, idx_path


def read_memmap(prefix: Path, dtype: np.dtype | str) -> tuple[np.ndarray, np.ndarray]:
    """The token memmap and the document offsets of ``prefix``."""
    bin_path = prefix.with_name(prefix.name + ".bin")
    tokens = (
        np.memmap(bin_path, dtype=np.dtype(dtype), mode="r")
        if bin_path.stat().st_size
        else np.zeros(0, np.dtype(dtype))
    )
    doc_idx = np.load(prefix.with_name(prefix.name + ".doc_idx.npy"))
    return tokens, doc_idx


@WRITERS.add("memmap")
class MemmapWriter(TokenWriter):
    """``memmap/<split>_<shard>.bin`` + ``.doc_idx.npy`` per token shard, in the tokenizer's dtype."""

    default = True
    owns = ("memmap",)

    def write(self, shard: TokenShard, out: Path, opts: ExportOptions) -> list[Entry]:
        (out / "memmap").mkdir(exist_ok=True)
        dtype = shard.tokenizer.token_dtype
        paths = write_memmap(out / "memmap" / shard.prefix, shard.tokens, shard.lengths, dtype=dtype)
        return [shard.entry(str(p.relative_to(out)), "memmap") for p in paths]

    def card_note(self, tokenizer: dict[str, Any] | None) -> str:
        dtype = (tokenizer or {}).get("dtype")
        return (
            f'\nnanoGPT: `np.memmap("memmap/train_00000.bin", dtype=np.{dtype}, mode="r")`; document '
            "boundaries are in `memmap/train_00000.doc_idx.npy`.\n"
        )
