"""Where every document goes: a seeded shuffle, a train/validation split, shards of a target size.

All functions are pure numpy on per-document arrays, so the layout is a function of (document
lengths, seed, fractions, targets) alone: the same inputs give the same files.
"""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "validation")


def split_order(n_docs: int, *, seed: int, val_fraction: float) -> dict[str, np.ndarray]:
    """Shuffle ``range(n_docs)`` with ``seed``; the first ``val_fraction`` of it is the validation split.

    A positive fraction yields at least one validation document whenever there are two or more
    documents, so a small run still gets a validation split; train keeps at least one document.
    """
    order = np.random.default_rng(seed).permutation(n_docs).astype(np.int64)
    n_val = round(val_fraction * n_docs)
    if val_fraction > 0 and n_docs >= 2:
        n_val = min(max(n_val, 1), n_docs - 1)
    return {"train": order[n_val:], "validation": order[:n_val]}


def shard_by_size(sizes: np.ndarray, *, target: int, max_items: int | None = None) -> list[np.ndarray]:
    """Cut a sequence of items with ``sizes`` into consecutive shards (returned as position arrays).

    Greedy, never splitting an item: a shard closes at the first item that brings it to ``target``, so
    every shard but the last holds at least ``target`` and less than ``target`` plus its last item;
    ``max_items`` also bounds the items per shard. One ``searchsorted`` per shard, not per item.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n = sizes.size
    cum = np.cumsum(sizes)
    target = max(int(target), 1)
    shards: list[np.ndarray] = []
    begin, base = 0, 0
    while begin < n:
        end = min(int(np.searchsorted(cum, base + target, side="left")), n - 1) + 1
        if max_items:
            end = min(end, begin + max_items)
        shards.append(np.arange(begin, end, dtype=np.int64))
        begin, base = end, int(cum[end - 1])
    return shards


def expand_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(np.asarray(starts, dtype=np.int64), lengths) + within


class TokenStore:
    """The tokenized documents, one ``(tokens, lengths)`` pair of ``.npy`` files per tokenize task.

    Documents are numbered globally in task order; ``gather(docs)`` returns their ids back to back in
    the order asked, reading each task's token file through a memory map.
    """

    def __init__(self, parts: list[tuple[str, str]]) -> None:
        self.tokens = [np.load(t, mmap_mode="r") for t, _ in parts]
        lengths = [np.load(n) for _, n in parts]
        self.lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        self.part = np.repeat(np.arange(len(parts)), [x.size for x in lengths]).astype(np.int64)
        # Offset of every document inside its own part's token file.
        self.offset = (
            np.concatenate([np.cumsum(x) - x for x in lengths]) if lengths else np.zeros(0, np.int64)
        )
        self.dtype = self.tokens[0].dtype if self.tokens else np.dtype(np.uint16)

    def __len__(self) -> int:
        return int(self.lengths.size)

    def gather(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of ``docs`` (global numbers) back to back, and their lengths."""
        lens = self.lengths[docs]
        out = np.empty(int(lens.sum()), dtype=self.dtype)
        dst_start = np.cumsum(lens) - lens
        for p in np.unique(self.part[docs]):
            m = self.part[docs] == p
            src = expand_ranges(self.offset[docs][m], lens[m])
            out[expand_ranges(dst_start[m], lens[m])] = self.tokens[p][src]
        return out, lens
