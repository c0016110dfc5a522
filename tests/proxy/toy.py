"""Shared toy data for the proxy tests that train tiny runs: a small vocabulary of English words, a
document drawn from it, and the smallest proxy section that trains (a few steps of ``proxy_tiny``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "and",
    "the",
    "dog",
    "ran",
    "to",
    "the",
    "park",
    "while",
    "birds",
    "sang",
    "over",
    "green",
    "hills",
    "under",
    "a",
    "wide",
    "blue",
    "sky",
    "with",
    "soft",
    "white",
    "clouds",
    "drifting",
    "slowly",
    "east",
]

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


def write_kept(run_dir: Path, rng: np.random.Generator) -> list[str]:
    """kept/part-00000.parquet: 60 documents of 60 words, the last 10 from source ``docs`` (the toy eval
    source), with a score column ``toy.score`` rising from 0 to 1; returns their texts."""
    (run_dir / "kept").mkdir()
    kept = [doc(rng, 60) for _ in range(60)]
    table = pa.table(
        {
            "id": [f"k{i}" for i in range(60)],
            "text": kept,
            "source": ["t"] * 50 + ["docs"] * 10,
            "toy.score": np.linspace(0, 1, 60),
        }
    )
    pq.write_table(table, run_dir / "kept" / "part-00000.parquet")
    return kept


def write_rejected(
    run_dir: Path, texts: list[str], reasons: list[str], stages: list[str] | None = None
) -> None:
    """rejected/part-00000.parquet with one row per text; ``stage`` defaults to each reason's prefix."""
    (run_dir / "rejected").mkdir()
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(len(texts))],
            "text": texts,
            "source": ["t"] * len(texts),
            "stage": stages if stages is not None else [r.split(":")[0] for r in reasons],
            "reason": reasons,
        }
    )
    pq.write_table(table, run_dir / "rejected" / "part-00000.parquet")
