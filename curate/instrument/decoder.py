"""The proxy decoder written out in torch: the same network as transformers' ``LlamaForCausalLM`` at our
settings (RMSNorm, RoPE, SwiGLU, causal attention, tied head), with fewer operations per step.

Why not ``LlamaForCausalLM`` itself: it is generic (masks, caches, output hooks, kwargs plumbing, RoPE
tables recomputed every forward), with a separate pass over memory for each small elementwise operation,
forward and backward. Here (64 matmul calls per ``proxy_5m`` step instead of 100):

- q, k and v come from one matmul (their weights concatenated for the call), and so do gate and up: fewer,
  larger matmuls;
- RoPE is applied to q and k together, from ``cos``/``sin`` tables built once, with the sign of
  ``rotate_half`` folded into the ``sin`` table (exact: a negation);
- RMSNorm is ``F.rms_norm`` (one kernel);
- attention is ``F.scaled_dot_product_attention(..., is_causal=True)``, as transformers' ``sdpa`` path, except
  on CPU in bf16 (:func:`causal_attention`).

Parameters keep transformers' names and shapes (``model.layers.0.self_attn.q_proj.weight``, ...), so a
state dict moves either way unchanged: :meth:`ModelConfig.build <curate.instrument.model_config.ModelConfig.build>`
initialises through ``LlamaForCausalLM`` (the same weights at a seed as before) and :meth:`ProxyLM.save_pretrained`
writes a folder that ``LlamaForCausalLM.from_pretrained`` loads (the perplexity scorer, ``synthesize``).
``tests/instrument/test_decoder.py`` checks the forward against ``LlamaForCausalLM`` with the same weights.

Measured (``benchmarks/bench_trainer.py``, BENCHMARKS.md): on the 2-core AVX2 EPYC in fp32 this
is *not* faster in eager mode (0.96-1.01x tokens per CPU-second at proxy_5m / 1m / tiny): the step is bound
by fp32 matmuls, which both networks do alike, and transformers' per-layer Python costs little beside
them. It is the smaller graph for ``torch.compile`` and keeps the network in this repository. On an
AVX512-BF16 EPYC in bf16, with :func:`causal_attention` written out, it runs 1.17-1.31x transformers'
model and 1.19x itself with torch's flash kernel (proxy_5m; 59% of the bf16 matmul ceiling).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from curate.instrument.model_config import ModelConfig

ROPE_THETA = 10000.0
RMS_EPS = 1e-5


class _Weight(nn.Module):
    """A bias-free projection's weight ``(out, in)``, named as ``nn.Linear``'s. Created uninitialised: the
    values come from :func:`build_model` (so construction draws nothing from torch's RNG)."""

    def __init__(self, n_out: int, n_in: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))


class RMSNorm(nn.Module):
    """``weight · x / sqrt(mean(x²) + eps)``, normalised in fp32 and cast back before the weight (as
    transformers' ``LlamaRMSNorm``)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:
            return F.rms_norm(x, (x.shape[-1],), self.weight, RMS_EPS)
        return self.weight * F.rms_norm(x.float(), (x.shape[-1],), None, RMS_EPS).to(x.dtype)


def rope_tables(seq_len: int, head_dim: int, device: torch.device | None = None) -> torch.Tensor:
    """``(2, seq_len, head_dim)``: ``cos`` and the signed ``sin`` (first half negated) of the rotary angles,
    so ``rope(x) = x·cos + swap_halves(x)·sin_signed`` equals ``x·cos + rotate_half(x)·sin``."""
    inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    freqs = torch.arange(seq_len, device=device).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    half = head_dim // 2
    sin = emb.sin()
    return torch.stack((emb.cos(), torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)))


@functools.lru_cache(maxsize=16)
def _causal_mask(t: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(t, t)``: 0 on and below the diagonal, ``-inf`` above (added to the scores)."""
    return torch.full((t, t), float("-inf"), dtype=dtype, device=device).triu(1)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal self-attention of ``(batch, heads, seq, head_dim)`` tensors.

    On CPU in bf16 it is written out: scores ``q·kᵀ/√d`` (bf16 matmul), the causal mask added, softmax,
    then the values (bf16 matmul), as transformers' ``eager`` attention computes it. torch's CPU flash
    kernel (``F.scaled_dot_product_attention``) runs 2-3x slower than that at head dim 64 and the
    proxy's windows (128-256 tokens), forward and backward, and it was the largest cost after the
    matmuls (``benchmarks/profile_proxy_step.py``). The scores are rounded to bf16 before the softmax
    (the flash kernel keeps them in fp32): outputs agree with an fp32 reference to bf16 precision
    (``tests/instrument/test_decoder.py``). Elsewhere (fp32, GPU) ``F.scaled_dot_product_attention``."""
    if q.device.type != "cpu" or q.dtype != torch.bfloat16:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + _causal_mask(t, q.dtype, q.device)
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.q_proj, self.k_proj = _Weight(width, width), _Weight(width, width)
        self.v_proj, self.o_proj = _Weight(width, width), _Weight(width, width)

    def forward(self, x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        w = torch.cat((self.q_proj.weight, self.k_proj.weight, self.v_proj.weight))
        qkv = F.linear(x, w).view(b, t, 3, self.heads, self.head_dim)
        qk, v = qkv[:, :, :2], qkv[:, :, 2]
        cos, sin = rope[0, :t, None, None, :], rope[1, :t, None, None, :]
        half = self.head_dim // 2
        swapped = torch.cat((qk[..., half:], qk[..., :half]), dim=-1)
        qk = torch.addcmul(qk * cos.to(qk.dtype), swapped, sin.to(qk.dtype))
        q, k = qk[:, :, 0].transpose(1, 2), qk[:, :, 1].transpose(1, 2)
        o = causal_attention(q, k, v.transpose(1, 2))
        return F.linear(o.transpose(1, 2).reshape(b, t, c), self.o_proj.weight)


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj, self.up_proj = _Weight(hidden, width), _Weight(hidden, width)
        self.down_proj = _Weight(width, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, torch.cat((self.gate_proj.weight, self.up_proj.weight))).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_proj.weight)


class Layer(nn.Module):
    def __init__(self, width: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.self_attn = Attention(width, heads)
        self.mlp = MLP(width, hidden)
        self.input_layernorm = RMSNorm(width)
        self.post_attention_layernorm = RMSNorm(width)

    def forward(self, x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope)
        return x + self.mlp(self.post_attention_layernorm(x))


@dataclass
class DecoderOutput:
    """What ``model.model(input_ids=...)`` returns (the field transformers' ``BaseModelOutput`` has)."""

    last_hidden_state: torch.Tensor


@dataclass
class LMOutput:
    logits: torch.Tensor


class Decoder(nn.Module):
    """The body (``LlamaModel``'s place): embedding, layers, final norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(
            cfg.vocab_size, cfg.width, _weight=torch.empty(cfg.vocab_size, cfg.width)
        )
        self.layers = nn.ModuleList(Layer(cfg.width, cfg.heads, cfg.mlp) for _ in range(cfg.depth))
        self.norm = RMSNorm(cfg.width)
        self.rope: torch.Tensor
        self.register_buffer("rope", rope_tables(cfg.seq_len, cfg.width // cfg.heads), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> DecoderOutput:
        t = input_ids.shape[1]
        rope = self.rope
        if t > rope.shape[1]:  # longer than the configured context: tables for this length
            rope = rope_tables(t, rope.shape[2], device=rope.device)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, rope)
        return DecoderOutput(self.norm(x))


class ProxyLM(nn.Module):
    """A proxy causal LM: ``model`` (the decoder) and ``lm_head`` (tied to ``model.embed_tokens``).

    Built uninitialised; use :meth:`ModelConfig.build <curate.instrument.model_config.ModelConfig.build>`."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.model = Decoder(cfg)
        self.lm_head = _Weight(cfg.vocab_size, cfg.width)
        self.lm_head.weight = self.model.embed_tokens.weight  # type: ignore[assignment]  # tied: one parameter

    def forward(self, input_ids: torch.Tensor) -> LMOutput:
        """Full logits ``(batch, seq, vocab)`` (the generic path; training and eval use the fused head)."""
        return LMOutput(F.linear(self.model(input_ids).last_hidden_state, self.lm_head.weight))

    def save_pretrained(self, path: str | Path, *, safe_serialization: bool = True) -> None:
        """A transformers ``LlamaForCausalLM`` folder (``config.json``, ``model.safetensors``) holding these
        weights, as ``LlamaForCausalLM.save_pretrained`` writes it."""
        from transformers import LlamaForCausalLM

        with torch.device("meta"):
            hf: Any = LlamaForCausalLM(self.cfg.hf_config())
        hf.load_state_dict({k: v.detach().cpu() for k, v in self.state_dict().items()}, assign=True)
        hf.tie_weights()
        # transformers draws a "Writing model shards" bar per save: one per proxy run, through `curate -q`.
        from transformers.utils import logging as hf_logging

        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            hf.save_pretrained(path, safe_serialization=safe_serialization)
        finally:
            if shown:
                hf_logging.enable_progress_bar()


def build_model(cfg: ModelConfig) -> ProxyLM:
    """A freshly initialised :class:`ProxyLM` of ``cfg`` (seed torch first for determinism).

    Its weights are those :meth:`ModelConfig.build_reference` draws at the same RNG state, copied (the
    reference's initialisation, and so every earlier run's, is kept exactly; building it costs milliseconds)."""
    lm = ProxyLM(cfg)
    lm.load_state_dict(cfg.build_reference().state_dict())
    return lm
