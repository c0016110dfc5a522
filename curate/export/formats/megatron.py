"""The Megatron-LM indexed dataset format (``.bin`` + ``.idx``), as datatrove's MegatronDocumentTokenizer writes it.

``PREFIX.bin`` holds every document's token ids back to back (uint16, or int32 when the vocabulary has
more than 65,536 entries: the same rule and dtypes as datatrove). ``PREFIX.idx`` is:

====================  =========================================================
``MMIDIDX\\x00\\x00``   9-byte magic
``<Q`` 1              version
``<B`` code           dtype code (Megatron-LM ``DType``: 8 = uint16, 4 = int32)
``<Q`` S              number of sequences (one per document here)
``<Q`` D              number of entries in the document index (S + 1)
int32[S]              sequence lengths in tokens
int64[S]              byte offset of every sequence in ``.bin``
int64[D]              document index: 0, 1, ..., S (sequence i is document i)
====================  =========================================================
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.export.formats.base import WRITERS, Entry, TokenShard, TokenWriter
from curate.io.files import atomic_path, atomic_write_bytes

if TYPE_CHECKING:
    from curate.export.options import ExportOptions

INDEX_HEADER = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
CODE_DTYPES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.float32,
    8: np.uint16,
}


def megatron_dtype(vocab_size: int) -> np.dtype:
    """datatrove's rule: 4-byte tokens (int32) only when the vocabulary exceeds 65,536 entries."""
    return np.dtype(np.int32) if vocab_size > np.iinfo(np.uint16).max + 1 else np.dtype(np.uint16)


def write_megatron(
    prefix: Path, tokens: np.ndarray, lengths: np.ndarray, *, dtype: np.dtype
) -> tuple[Path, Path]:
    """Write ``prefix.bin`` / ``prefix.idx`` for documents ``lengths`` laid out back to back in ``tokens``."""
    dtype = np.dtype(dtype)
    lengths = np.asarray(lengths, dtype=np.int64)
    if int(lengths.sum()) != tokens.size:
        raise ValueError(f"{prefix}: lengths sum to {int(lengths.sum())} but there are {tokens.size} tokens")
    bin_path, idx_path = prefix.with_name(prefix.name + ".bin"), prefix.with_name(prefix.name + ".idx")
    atomic_write_bytes(bin_path, np.ascontiguousarray(tokens, dtype=dtype).tobytes(order="C"))
    pointers = (np.cumsum(lengths) - lengths) * dtype.itemsize
    n = lengths.size
    with atomic_path(idx_path) as tmp, open(tmp, "wb") as f:
        f.write(INDEX_HEADER)
        f.write(struct.pack("<Q", VERSION))
        f.write(struct.pack("<B", DTYPE_CODES[dtype]))
        f.write(struct.pack("<Q", n))
        f.write(struct.pack("<Q", n + 1))
        f.write(lengths.astype("<i4").tobytes(order="C"))
        f.write(pointers.astype("<i8").tobytes(order="C"))
        f.write(np.arange(n + 1, dtype="<i8").tobytes(order="C"))
    return bin_path, idx_path


@dataclass
class MegatronIndex:
    """A parsed ``.idx`` file; ``document(i)`` reads sequence ``i`` from the memory-mapped ``.bin``."""

    dtype: np.dtype
    sizes: np.ndarray
    pointers: np.ndarray
    doc_idx: np.ndarray
    bin: np.memmap

    def __len__(self) -> int:
        return int(self.sizes.size)

    def document(self, i: int) -> np.ndarray:
        start = int(self.pointers[i]) // self.dtype.itemsize
        return np.asarray(self.bin[start : start + int(self.sizes[i])])


def read_megatron(prefix: Path) -> MegatronIndex:
    """Parse ``prefix.idx`` and map ``prefix.bin``, checking the header like Megatron-LM's reader does."""
    idx_path = prefix.with_name(prefix.name + ".idx")
    buf = idx_path.read_bytes()
    if buf[:9] != INDEX_HEADER:
        raise ValueError(f"{idx_path}: not a Megatron index (magic {buf[:9]!r})")
    (version,) = struct.unpack_from("<Q", buf, 9)
    if version != VERSION:
        raise ValueError(f"{idx_path}: index version {version}, expected {VERSION}")
    (code,) = struct.unpack_from("<B", buf, 17)
    seq_count, doc_count = struct.unpack_from("<QQ", buf, 18)
    off = 34
    sizes = np.frombuffer(buf, dtype="<i4", count=seq_count, offset=off)
    off += 4 * seq_count
    pointers = np.frombuffer(buf, dtype="<i8", count=seq_count, offset=off)
    off += 8 * seq_count
    doc_idx = np.frombuffer(buf, dtype="<i8", count=doc_count, offset=off)
    off += 8 * doc_count
    if off != len(buf):
        raise ValueError(f"{idx_path}: {len(buf) - off} trailing bytes after the document index")
    dtype = np.dtype(CODE_DTYPES[code])
    bin_path = prefix.with_name(prefix.name + ".bin")
    data = np.memmap(bin_path, dtype=dtype, mode="r") if bin_path.stat().st_size else np.zeros(0, dtype)
    return MegatronIndex(dtype=dtype, sizes=sizes, pointers=pointers, doc_idx=doc_idx, bin=data)  # type: ignore[arg-type]


@WRITERS.add("megatron")
class MegatronWriter(TokenWriter):
    """``megatron/<split>_<shard>.bin`` + ``.idx`` per token shard (uint16, or int32 past 65,536 ids)."""

    default = True
    owns = ("megatron",)

    def write(self, shard: TokenShard, out: Path, opts: ExportOptions) -> list[Entry]:
        (out / "megatron").mkdir(exist_ok=True)
        dtype = megatron_dtype(shard.tokenizer.vocab_size)
        paths = write_megatron(out / "megatron" / shard.prefix, shard.tokens, shard.lengths, dtype=dtype)
        return [shard.entry(str(p.relative_to(out)), "megatron") for p in paths]

    def card_note(self, tokenizer: dict[str, Any] | None) -> str:
        return "\nMegatron-LM: pass `megatron/train_00000` (a `.bin`/`.idx` prefix) as a data path.\n"
