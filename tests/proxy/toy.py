"""Shared toy data for the proxy tests that train tiny runs: a small vocabulary of English words, a
document drawn from it, and the smallest proxy section that trains (a few steps of ``proxy_tiny``)."""

from __future__ import annotations

from typing import Any

import numpy as np

WORDS = (
    "the cat sat on a mat and the dog ran to the park while birds sang over green hills "
    "under a wide blue sky with soft white clouds drifting slowly east"
).split()

TINY_TRAIN = {"seq_len": 32, "batch_size": 4, "n_evals": 3, "ckpt_every": 4, "threads": 1}


def doc(rng: np.random.Generator, n: int) -> str:
    """``n`` words of :data:`WORDS` drawn by ``rng``, ending with a full stop."""
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n)) + "."


def tiny_section(**extra: Any) -> dict[str, Any]:
    """raw vs curated at 8 steps of 128 tokens, 2 seeds, a held-out split and the ``docs`` source held out."""
    return {
        "model": "proxy_tiny",
        "budget": 32 * 4 * 8,
        "seeds": 2,
        "tokenizer": {"vocab_size": 300},
        "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}},
        "eval": [{"name": "heldout", "holdout": 0.1}, {"name": "docs", "kind": "text", "source": "docs"}],
        "train": dict(TINY_TRAIN),
        "n_boot": 20,
        **extra,
    }
