"""Bits per byte on held-out token shards (the training stream's order is :mod:`curate.instrument.streams`).

bpb of an eval set = (sum over the set's document tokens of the next-token NLL, in nats) /
(ln 2 · UTF-8 bytes of the set's text). The eval stream is ``EOS doc1 EOS doc2 EOS ...`` cut into
windows of ``seq_len + 1`` tokens overlapping by one, so every document token is predicted exactly
once (context restarts at window edges); end-of-text targets are masked out, as they have no bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from curate.instrument.fused_ce import linear_nll


@dataclass
class EvalSet:
    """An eval set ready for :func:`bpb`: its windows ``(n, seq_len + 1)`` and its text's UTF-8 bytes."""

    name: str
    windows: np.ndarray
    n_bytes: int
    eos_id: int

    @classmethod
    def from_shard(cls, name: str, tokens: np.ndarray, n_bytes: int, *, eos_id: int, seq_len: int) -> EvalSet:
        """Windows over ``EOS + tokens`` (a shard's documents, each ending in EOS); ``n_bytes`` is the UTF-8
        size of exactly those documents' text."""
        stream = np.concatenate([np.array([eos_id], dtype=np.int64), np.asarray(tokens, dtype=np.int64)])
        n_win = max(1, math.ceil((len(stream) - 1) / seq_len))
        pad = n_win * seq_len + 1 - len(stream)
        stream = np.concatenate(
            [stream, np.full(pad, eos_id, dtype=np.int64)]
        )  # padding targets are EOS: masked
        idx = np.arange(n_win)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
        return cls(name=name, windows=stream[idx], n_bytes=int(n_bytes), eos_id=eos_id)


def _token_nll(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, autocast: bool) -> torch.Tensor:
    """Next-token NLL (nats) of every target ``y`` (flattened) given inputs ``x``: through the fused head
    for a decoder with ``model.model`` and ``model.lm_head`` (as ``LlamaForCausalLM``), else ``.logits``."""
    device = _device(model)
    fused = hasattr(model, "model") and hasattr(model, "lm_head")
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
        if fused:
            lm: Any = model
            h = lm.model(input_ids=x).last_hidden_state
            mm_dtype = torch.bfloat16 if autocast else torch.float32
            return linear_nll(h.reshape(-1, h.size(-1)), lm.lm_head.weight, y, mm_dtype=mm_dtype)
        logits = model(input_ids=x).logits
        return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y, reduction="none")


@torch.no_grad()
def bpb(model: torch.nn.Module, es: EvalSet, *, batch_size: int = 16, autocast: bool = False) -> float:
    """Bits per byte of ``model`` on ``es`` (see the module docstring).

    A decoder with a tied-style head (``model.model`` and ``model.lm_head``, as ``LlamaForCausalLM``) is
    scored through :func:`curate.instrument.fused_ce.linear_nll` (chunked; head matmuls in bf16 when
    ``autocast``, as autocast would run ``lm_head``); any other causal LM through its ``.logits``.
    """
    was_training = model.training
    model.eval()
    total = 0.0
    device = _device(model)
    for i in range(0, len(es.windows), batch_size):
        w = torch.from_numpy(es.windows[i : i + batch_size])
        x, y = w[:, :-1].to(device), w[:, 1:].reshape(-1).to(device)
        nll = _token_nll(model, x, y, autocast=autocast)
        total += float(nll[y != es.eos_id].double().sum())
    model.train(was_training)
    return total / (math.log(2) * es.n_bytes)


@torch.no_grad()
def row_nll(
    model: torch.nn.Module,
    windows: np.ndarray,
    mask: np.ndarray,
    *,
    batch_size: int = 16,
    autocast: bool = False,
) -> np.ndarray:
    """Summed next-token NLL (nats) of each row of ``windows (n, L+1)`` over the targets ``mask (n, L)``
    marks (a benchmark item's continuation, :mod:`curate.instrument.choice`)."""
    was_training = model.training
    model.eval()
    device = _device(model)
    out = np.zeros(len(windows), dtype=np.float64)
    # Rows are short (a context and a continuation) and right-padded: score them in length order, each
    # batch cut to its longest row (causal attention: padding after a row's end never changes it).
    ends = np.where(mask.any(axis=1), mask.shape[1] - np.argmax(mask[:, ::-1], axis=1), 1)
    order = np.argsort(ends, kind="stable")
    for i in range(0, len(order), batch_size):
        sel = order[i : i + batch_size]
        width = int(ends[sel].max())
        w = torch.from_numpy(np.ascontiguousarray(windows[sel, : width + 1]))
        x, y = w[:, :-1].to(device), w[:, 1:].reshape(-1).to(device)
        nll = _token_nll(model, x, y, autocast=autocast).double().reshape(len(sel), -1).cpu().numpy()
        out[sel] = (nll * mask[sel, :width]).sum(axis=1)
    model.train(was_training)
    return out


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
