"""Small documents and a character tokenizer for the stream and shard tests (shared by the instrument's
and the controls' tests)."""

from __future__ import annotations

import numpy as np


class CharTok:
    """A tokenizer stand-in: one token per character code (mod 250), EOS = 0."""

    dtype = np.uint16
    eos_id = 0

    def encode_batch(self, texts):
        return [[1 + ord(c) % 250 for c in t] for t in texts]


def docs(n: int) -> tuple[list[str], list[str]]:
    """``n`` ids and texts of 1-5 repeats of "text number i"."""
    ids = [f"doc-{i}" for i in range(n)]
    return ids, [f"text number {i} " * (1 + i % 5) for i in range(n)]
