"""One proxy run's settings and its learning-rate schedule (:class:`TrainConfig`): the budget in whole
optimizer steps, warmup-stable-decay (or cosine), the cool-down branches that give finished models at
shorter budgets from one trunk, and the log-spaced eval points. The loop itself is :mod:`curate.instrument.train`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from curate.instrument.model_config import DEFAULT_MODEL, DEFAULT_SEQ_LEN


@dataclass
class TrainConfig:
    """One proxy run. The defaults are the proxy's (``proxy.train`` overrides any field but ``model``,
    ``tokens`` and ``seed``, which the proxy section's ``model``, ``budget`` and ``seeds`` set).

    tokens: the budget ``T`` (rounded down to whole steps, a multiple of 4 steps so ``T/4`` is an eval
    point). batch_size: sequences per micro-batch; grad_accum: micro-batches per step. n_evals: number of
    log-spaced eval points (plus ``T/4`` and ``T``). autocast: ``auto`` (bf16 on GPU and on CPUs with
    native bf16 matmuls, see :func:`cpu_has_native_bf16`; fp32 otherwise), ``bf16`` or ``off``; with bf16
    the decoder runs under autocast and the head's matmuls in bf16 (softmax and loss in fp32).
    ce_chunk: tokens per chunk of the fused head + cross-entropy. threads: torch intra-op threads (``None``: the worker's CPU share).
    schedule: ``wsd`` (warmup, constant, linear cool-down to ``min_lr_frac`` over the last ``decay_frac``)
    or ``cosine``. warmup_steps: a fixed warmup (``None``: ``warmup_frac`` of the run's steps); runs whose
    trunks must agree share one. branches: budgets (tokens, each below ``tokens``) at which a cooled-down
    copy of the run is evaluated (WSD only; see the module docstring). eval_budget: the budget whose eval
    points this run logs (``None``: ``tokens``; a trunk sets the main budget, which must be a branch).
    compile: run the decoder's training forward/backward through ``torch.compile`` (eval stays eager):
    1.15-1.17x tokens per CPU-second at proxy_5m on the 2-core CPU, after a one-off compilation of 76-189 s
    there at load 10-19 (seconds once inductor's on-disk cache holds the graph); off by default, as on a
    cold cache it pays only past ~500-1,200 steps (BENCHMARKS.md).
    doc_chunk: documents longer than this many tokens enter the stream as pieces of at most ``doc_chunk``
    tokens, each placed by its own hash (``curate.instrument.streams.DocStream``), so one long document is
    spread over the run instead of filling a stretch of consecutive steps; 0 keeps whole documents.
    faults: test-only fault injection, ``{step: "nan" | "spike" | "kill"}``.
    broken: a deliberately broken instrument, for measuring how often the controls catch one (never for
    a verdict): ``shuffle_tokens`` trains on each sequence's tokens in a random order (the model sees no
    word order, so a recipe's word-order damage is invisible); ``unpaired`` seeds each run by its own
    training data as well as ``seed`` (initialisation and order no longer shared between recipes, so
    paired differences lose their common noise). ``""``: the instrument as it is.
    """

    model: str = DEFAULT_MODEL
    seq_len: int = DEFAULT_SEQ_LEN
    tokens: int = 300_000
    batch_size: int = 16
    grad_accum: int = 1
    lr: float = 3e-3
    min_lr_frac: float = 0.0
    warmup_frac: float = 0.05
    warmup_steps: int | None = None
    schedule: str = "wsd"
    decay_frac: float = 0.2
    branches: list[int] = field(default_factory=list)
    eval_budget: int | None = None
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    seed: int = 0
    n_evals: int = 5
    eval_batch_size: int = 16
    ckpt_every: int = 50
    log_every: int = 10
    autocast: str = "auto"
    ce_chunk: int = 256
    compile: bool = False
    threads: int | None = None
    spike_loss: float = 1.5
    spike_grad: float = 10.0
    spike_warmup: int = 20
    max_bad_in_a_row: int = 3
    doc_chunk: int = 512
    faults: dict[int, str] = field(default_factory=dict)
    broken: str = ""

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.grad_accum * self.seq_len

    def steps_for(self, tokens: int) -> int:
        """Optimizer steps a budget of ``tokens`` buys (whole steps, a multiple of 4 so ``T/4`` is a step)."""
        steps = (tokens // self.tokens_per_step) // 4 * 4
        if steps < 4:
            raise ValueError(f"budget {tokens} tokens < 4 steps of {self.tokens_per_step} tokens")
        return steps

    @property
    def steps(self) -> int:
        return self.steps_for(self.tokens)

    def decay_start(self, steps: int) -> int:
        """The step a WSD run of ``steps`` steps starts its cool-down (the trunk is shared until then)."""
        return int(steps * (1 - self.decay_frac))

    def warmup(self) -> int:
        return (
            self.warmup_steps if self.warmup_steps is not None else max(1, int(self.warmup_frac * self.steps))
        )

    def eval_steps(self) -> list[int]:
        """Log-spaced steps from ``S/64`` to ``S`` with ``S/4`` always included, ``S`` the steps of
        ``eval_budget`` (default: this run's)."""
        s = self.steps_for(self.eval_budget) if self.eval_budget else self.steps
        pts = np.unique(np.round(np.geomspace(max(1, s / 64), s, self.n_evals)).astype(int))
        return sorted(set(pts.tolist()) | {s // 4, s})

    def branch_steps(self) -> dict[int, int]:
        """``{cool-down start: steps}`` of every branch (the run's own end excluded)."""
        if self.branches and self.schedule != "wsd":
            raise ValueError("branches need schedule: wsd (a shared constant-LR trunk)")
        out = {}
        for b in sorted(set(self.branches)):
            n = self.steps_for(b)
            if n >= self.steps:
                raise ValueError(f"branch budget {b} is not below the run's {self.tokens} tokens")
            out[self.decay_start(n)] = n
        if (
            self.eval_budget
            and self.eval_budget != self.tokens
            and self.steps_for(self.eval_budget) not in out.values()
        ):
            raise ValueError(f"eval_budget {self.eval_budget} must be one of the branches {self.branches}")
        return out

    def lr_at(self, step: int, steps: int | None = None) -> float:
        """The learning rate at ``step`` of a run of ``steps`` steps (default: this run's)."""
        s, warm = steps or self.steps, self.warmup()
        if step < warm:
            return self.lr * (step + 1) / warm
        lo = self.lr * self.min_lr_frac
        if self.schedule == "wsd":
            decay_start = self.decay_start(s)
            if step < decay_start:
                return self.lr
            return lo + (self.lr - lo) * (1 - (step - decay_start) / max(1, s - decay_start))
        if self.schedule != "cosine":
            raise ValueError(f"unknown schedule {self.schedule!r}; valid: cosine, wsd")
        frac = (step - warm) / max(1, s - warm)
        return lo + 0.5 * (self.lr - lo) * (1 + math.cos(math.pi * frac))
