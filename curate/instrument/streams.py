"""Coupled document streams: the deterministic order in which a run reads its training documents.

:class:`DocStream` orders a recipe's documents (or pieces of them) by a hash of ``(seed, epoch, id)``
only, so every recipe's stream at a seed is raw's with its dropped documents deleted (docs/goodput.md,
"Coupled streams").
"""

from __future__ import annotations

import numpy as np
import torch

STREAM_SALT = 0x73747265616D  # "stream": the document order's hash, apart from the null's membership
CHUNK_SALT = 0x6368756E6B  # "chunk": a piece's key from its document's id hash and its index


class DocStream:
    """A recipe's training stream at one seed: its documents in one order shared by every recipe.

    Each document is cut into pieces of at most ``chunk`` tokens (``chunk=0``: whole documents); piece
    ``j`` of the document with id hash ``h`` has the key ``mix64(h ^ mix64(CHUNK_SALT + j))`` (the
    document's own hash when whole). Epoch ``e`` orders the pieces by ``mix64(key ^ mix64(STREAM_SALT +
    seed·2^20 + e))``, a function of ``(seed, epoch, id, j)`` only, packs them in that order (a
    document's last piece ends in its EOS) and the run reads the packed stream front to back: sequence
    ``g`` is tokens ``[g·seq_len, g·seq_len + seq_len + 1)``. Every recipe's stream at seed ``s`` is
    therefore raw's stream with the documents it drops deleted (common random numbers): a document both
    recipes keep lands at the same relative places in both, and a difference between two recipes at one
    seed is a difference of data, not of data-order luck. Pieces keep one long document (on the web input:
    a 35,829-character blog post of 92,670 tokens, a third of a 294,912-token run) from filling a stretch of
    consecutive steps that the model first overfits and then has to unlearn, and from being wholly in or
    wholly out of the first ``T`` tokens at a seed (docs/goodput.md). Resuming at a step needs only the step.
    """

    def __init__(
        self,
        tokens: np.ndarray,
        idx: np.ndarray,
        hids: np.ndarray,
        *,
        seq_len: int,
        seed: int,
        chunk: int = 0,
    ) -> None:
        from curate.instrument.hashing import mix64

        self.tokens, self.seq_len, self.seed = tokens, seq_len, seed
        if len(tokens) <= seq_len:
            raise ValueError(f"training data has {len(tokens)} tokens; needs more than seq_len={seq_len}")
        idx = np.asarray(idx, dtype=np.int64)
        doc_hids = np.asarray(hids, dtype=np.uint64)
        lengths = np.diff(idx)
        if chunk > 0:
            pieces = np.maximum(1, -(-lengths // chunk))  # ceil, at least one piece per document
            doc = np.repeat(np.arange(len(lengths)), pieces)
            j = np.arange(len(doc)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
            self.starts = idx[:-1][doc] + j * chunk
            self.lengths = np.minimum(chunk, lengths[doc] - j * chunk)
            self.doc_hids = doc_hids[doc]
            self._keys = mix64(self.doc_hids ^ mix64(np.uint64(CHUNK_SALT) + j.astype(np.uint64)))
        else:
            self.starts, self.lengths, self.doc_hids, self._keys = idx[:-1], lengths, doc_hids, doc_hids
        self._mix = mix64
        self._stream = np.zeros(0, dtype=np.int64)
        self._order: np.ndarray | None = None
        self._next, self._epochs = 0, 0

    def order(self, epoch: int) -> np.ndarray:
        """Piece indices in the order epoch ``epoch`` of seed ``self.seed`` visits them."""
        salt = self._mix(np.array([STREAM_SALT + (self.seed << 20) + epoch], dtype=np.uint64))
        return np.argsort(self._mix(self._keys ^ salt), kind="stable")

    def _grow(self, n_tokens: int) -> None:
        """Extend the packed stream to at least ``n_tokens`` tokens (whole pieces, epoch after epoch)."""
        parts = [self._stream]
        have = len(self._stream)
        while have < n_tokens:
            if self._order is None or self._next >= len(self._order):
                self._order, self._next = self.order(self._epochs), 0
                self._epochs += 1
            rest = self._order[self._next :]
            lens = self.lengths[rest]
            k = int(np.searchsorted(np.cumsum(lens), n_tokens - have)) + 1  # pieces still needed
            take, lens = rest[:k], lens[:k]
            ends = np.cumsum(lens)
            pos = np.repeat(self.starts[take] - (ends - lens), lens) + np.arange(int(ends[-1]))
            parts.append(np.asarray(self.tokens[pos], dtype=np.int64))
            have += int(ends[-1])
            self._next += len(take)
        self._stream = np.concatenate(parts)

    def epochs_at(self, n_sequences: int) -> float:
        return n_sequences * self.seq_len / max(1, len(self.tokens))

    def batch(self, first: int, size: int) -> torch.Tensor:
        """Sequences ``first .. first+size-1`` of the run as a ``(size, seq_len + 1)`` int64 tensor."""
        end = (first + size) * self.seq_len + 1
        self._grow(end)
        rows = np.lib.stride_tricks.sliding_window_view(
            self._stream[first * self.seq_len : end], self.seq_len + 1
        )
        return torch.from_numpy(np.array(rows[:: self.seq_len][:size]))  # a copy: the view is read-only

    def doc_tokens(self, n_tokens: int) -> dict[int, int]:
        """How many of the stream's first ``n_tokens`` tokens each document (by id hash) contributes."""
        out: dict[int, int] = {}
        left, epoch = n_tokens, 0
        while left > 0:
            for i in self.order(epoch):
                take = min(int(self.lengths[i]), left)
                h = int(self.doc_hids[i])
                out[h] = out.get(h, 0) + take
                left -= take
                if left <= 0:
                    break
            epoch += 1
        return out
