"""The flat token format nanoGPT reads with ``np.memmap``, plus a document-boundary index.

``PREFIX.bin`` is every document's ids back to back (EOS after each), raw little-endian uint16 when the
vocabulary fits (at most 65,536 ids), else uint32: read it with
``np.memmap(path, dtype=np.uint16, mode="r")`` (the dtype is recorded in the export manifest).
``PREFIX.doc_idx.npy`` is an int64 array of ``docs + 1`` token offsets: document ``i`` is
``tokens[doc_idx[i]:doc_idx[i + 1]]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curate.io.files import atomic_save_npy, atomic_write_bytes


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
