"""A tiny proxy training run for the trainer tests: a learnable token stream and a config of a few steps.

Imported by tests/instrument/test_train.py, and by the subprocess it SIGKILLs mid-run (so this is a module of its
own, not part of a test file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from curate.instrument.evaluate import EvalSet
from curate.instrument.train import Run
from curate.instrument.train_config import TrainConfig

VOCAB = 512


def write_data(tmp: Path) -> tuple[np.ndarray, np.ndarray]:
    """Write ``train.npy`` and ``eval.npy`` into ``tmp`` and return them (train, eval)."""
    rng = np.random.default_rng(0)
    # A learnable stream: a repeating pattern with noise, so the loss falls within a few steps.
    base = np.tile(np.arange(1, 97, dtype=np.uint16), 400)
    noise = rng.integers(1, VOCAB, size=base.shape).astype(np.uint16)
    train = np.where(rng.random(base.shape) < 0.1, noise, base)
    ev = np.tile(np.arange(1, 97, dtype=np.uint16), 20)
    np.save(tmp / "train.npy", train)
    np.save(tmp / "eval.npy", ev)
    return train, ev


def tiny_config(**kw) -> TrainConfig:
    """24 optimizer steps of ``proxy_tiny`` on 32-token windows, a checkpoint every 5; ``kw`` overrides."""
    base = dict(
        model="proxy_tiny",
        seq_len=32,
        batch_size=4,
        grad_accum=2,
        tokens=32 * 8 * 24,
        lr=1e-2,
        n_evals=4,
        ckpt_every=5,
        log_every=1,
        seed=3,
        threads=1,
        spike_warmup=5,
    )
    base.update(kw)
    return TrainConfig(**base)


def train_tiny(tmp: Path, out: str, cfg: TrainConfig) -> dict:
    """Train ``cfg`` on :func:`write_data`'s files in ``tmp`` into ``tmp/out``; returns the run's result."""
    train, ev = np.load(tmp / "train.npy"), np.load(tmp / "eval.npy")
    es = [EvalSet.from_shard("ev", ev, 2 * len(ev), eos_id=0, seq_len=cfg.seq_len)]
    torch.set_num_threads(1)
    return Run(cfg, train_tokens=train, eval_sets=es, vocab_size=VOCAB, out_dir=tmp / out).train()
