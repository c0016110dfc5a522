"""What one training step is made of: the loss through the fused tied head (:func:`lm_loss`, its decoder
optionally through ``torch.compile``) and the AdamW optimizer (:func:`build_optimizer`). The loop that
drives them is :class:`curate.instrument.train.Run`."""

from __future__ import annotations

import weakref
from typing import Any

import torch

from curate.instrument.fused_ce import linear_cross_entropy
from curate.instrument.train_config import TrainConfig

_COMPILED: weakref.WeakKeyDictionary[torch.nn.Module, Any] = weakref.WeakKeyDictionary()


def compiled(decoder: torch.nn.Module) -> Any:
    """``torch.compile(decoder)``, one per decoder (it shares the decoder's parameters; the eager module
    itself is left as it is, so evaluation and saving do not trigger recompilations)."""
    if decoder not in _COMPILED:
        _COMPILED[decoder] = torch.compile(decoder)
    return _COMPILED[decoder]


def lm_loss(
    model: Any,
    batch: torch.Tensor,
    *,
    head_dtype: torch.dtype = torch.float32,
    chunk: int = 256,
    compile: bool = False,
) -> torch.Tensor:
    """Mean next-token cross-entropy: the decoder's hidden states through the tied head, fused with the
    loss (:func:`curate.instrument.fused_ce.linear_cross_entropy`), no label shift copies (``batch`` holds
    ``seq_len + 1`` tokens per row). ``compile``: the decoder through :func:`compiled`."""
    # Contiguous copies: a strided view as input_ids slows the embedding backward measurably on CPU.
    x, y = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()
    decoder = compiled(model.model) if compile else model.model
    h = decoder(input_ids=x).last_hidden_state
    return linear_cross_entropy(
        h.reshape(-1, h.size(-1)), model.lm_head.weight, y.reshape(-1), chunk=chunk, mm_dtype=head_dtype
    )


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # fused=True: one kernel per step for all parameters (CPU and CUDA), measurably faster than foreach.
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=1e-8, fused=True)
