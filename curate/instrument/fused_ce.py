"""Output projection and cross-entropy fused and chunked over tokens (the Liger / Cut-Cross-Entropy idea).

At proxy sizes most of a training step is the tied ``vocab × width`` head: ``proxy_1m`` spends two thirds
of its FLOPs there, ``proxy_tiny`` ~90%. The plain path (``lm_head`` then ``F.cross_entropy``) writes the
full ``tokens × vocab`` logits (134 MB in fp32 for 16 × 256 tokens and an 8192 vocabulary), reads and
writes it again in ``log_softmax``, keeps it for backward, and passes over it twice more there. Here each
chunk of ``chunk`` tokens computes its logits, its loss and, right away, the gradient of the mean loss
with respect to its hidden states and the head weight, while the chunk is still in cache; backward only
scales the stored gradients by the incoming scalar. Same maths as ``F.cross_entropy(h @ W.T, y)``
(tests compare both, values and gradients).

``mm_dtype=torch.bfloat16`` runs the three head matmuls in bf16 (2.2-3x the fp32 matmul rate on CPUs
with AVX512-BF16, and the usual autocast precision on GPUs); the softmax, the loss and the accumulated
weight gradient stay in fp32.
"""

from __future__ import annotations

from typing import Any

import torch


def _softmax_nll(
    logits: torch.Tensor, target: torch.Tensor, rows: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fp32 softmax of a chunk's logits (one kernel, any input dtype) and each row's NLL of its target.

    ``-log p[target]`` is exact while ``p[target]`` is a normal fp32 number; below that (a loss over ~85
    nats, e.g. an injected spike) the row's NLL is recomputed from the logits with a log-sum-exp.
    """
    p = torch.softmax(logits, dim=1, dtype=torch.float32)
    pt = p[rows, target]
    nll = -torch.log(pt)
    tiny = pt < torch.finfo(torch.float32).tiny
    if bool(tiny.any()):
        r = rows[tiny]
        lg = logits[r].float()
        nll[tiny] = torch.logsumexp(lg, dim=1) - lg[torch.arange(len(r), device=lg.device), target[r]]
    return p, nll


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        h: torch.Tensor,
        weight: torch.Tensor,
        target: torch.Tensor,
        chunk: int,
        mm_dtype: torch.dtype,
    ) -> torch.Tensor:
        n = h.shape[0]
        with torch.autocast(h.device.type, enabled=False):
            w = weight.to(mm_dtype)
            grad_h = torch.empty(h.shape, dtype=h.dtype, device=h.device)
            grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=h.device)
            loss = torch.zeros((), dtype=torch.float32, device=h.device)
            scale = 1.0 / n
            for s in range(0, n, chunk):
                hc = h[s : s + chunk].to(mm_dtype)
                yc = target[s : s + chunk]
                rows = torch.arange(hc.shape[0], device=h.device)
                p, nll = _softmax_nll(hc @ w.t(), yc, rows)
                loss += nll.sum()
                # d(sum of losses)/d logits = softmax - onehot, in place over the chunk; the 1/n of the mean
                # is applied once to the (much smaller) gradients at the end
                p[rows, yc] -= 1.0
                g = p.to(mm_dtype)
                grad_h[s : s + chunk] = g @ w
                if mm_dtype == torch.float32:
                    grad_w.addmm_(g.t(), hc)
                else:
                    grad_w += (g.t() @ hc).float()
            grad_h.mul_(scale)
            grad_w.mul_(scale)
        ctx.save_for_backward(grad_h, grad_w.to(weight.dtype))
        return loss * scale

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[Any, ...]:
        grad_h, grad_w = ctx.saved_tensors
        return grad_h * grad_out, grad_w * grad_out, None, None, None


def _check_shapes(h: torch.Tensor, target: torch.Tensor) -> None:
    if h.dim() != 2 or target.shape != h.shape[:1]:
        raise ValueError(
            f"h must be (tokens, width) and target (tokens,); got {tuple(h.shape)}, {tuple(target.shape)}"
        )


def linear_cross_entropy(
    h: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    chunk: int = 256,
    mm_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Mean cross-entropy of ``h @ weight.T`` against ``target``: ``h`` is ``(tokens, width)``, ``weight``
    ``(vocab, width)``, ``target`` ``(tokens,)`` int64 (no ignore index: proxy batches are packed)."""
    _check_shapes(h, target)
    return _LinearCrossEntropy.apply(h, weight, target, chunk, mm_dtype)


@torch.no_grad()
def linear_nll(
    h: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    chunk: int = 256,
    mm_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Per-token negative log-likelihood (fp32, nats) of ``target`` under ``h @ weight.T``, chunked like
    :func:`linear_cross_entropy` so the full logits never exist (the eval path)."""
    _check_shapes(h, target)
    out = torch.empty(h.shape[0], dtype=torch.float32, device=h.device)
    with torch.autocast(h.device.type, enabled=False):
        w = weight.to(mm_dtype)
        for s in range(0, h.shape[0], chunk):
            hc, yc = h[s : s + chunk].to(mm_dtype), target[s : s + chunk]
            out[s : s + chunk] = _softmax_nll(hc @ w.t(), yc, torch.arange(hc.shape[0], device=h.device))[1]
    return out
