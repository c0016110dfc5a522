"""The proxy model ladder: Llama-style causal LMs from ~1M to ~100M parameters, one depth dial.

``depth`` sets everything (nanochat's rule): width ``64·depth``, head dim 64, SwiGLU hidden ``8/3·width``
rounded up to a multiple of 32, tied input/output embeddings. Parameter counts below are with the
default 8192-token vocabulary:

=========== ===== ===== ======= =========
name        depth width params  non-embed
=========== ===== ===== ======= =========
proxy_1m    2     128   1.45M   0.40M
proxy_5m    4     256   5.31M   3.21M
proxy_14m   6     384   13.8M   10.6M
proxy_30m   8     512   29.5M   25.3M
proxy_90m   12    768   91.2M   85.0M
=========== ===== ===== ======= =========

(``proxy_tiny``, depth 1, 0.58M with 8192 tokens, is the CPU demo's size, usually with a 2048 vocab.) FLOPs per token follow nanoGPT/PaLM:
``6·N + 12·layers·width·seq_len`` where ``N`` counts every parameter that does a matmul (the tied
embedding does the output projection; the input lookup is free).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_MODEL = "proxy_tiny"  # the size of a proxy run unless proxy.model names another
DEFAULT_SEQ_LEN = 128  # tokens per training window unless proxy.train.seq_len says otherwise

LADDER: dict[str, int] = {
    "proxy_tiny": 1,
    "proxy_1m": 2,
    "proxy_5m": 4,
    "proxy_14m": 6,
    "proxy_30m": 8,
    "proxy_90m": 12,
}


@dataclass(frozen=True)
class ModelConfig:
    """A point on the ladder. ``depth`` derives width, heads and MLP size; ``seq_len`` the context."""

    depth: int = LADDER[DEFAULT_MODEL]
    vocab_size: int = 8192
    seq_len: int = DEFAULT_SEQ_LEN

    @classmethod
    def named(cls, name: str, *, vocab_size: int = 8192, seq_len: int = DEFAULT_SEQ_LEN) -> ModelConfig:
        if name not in LADDER:
            raise ValueError(f"unknown model size {name!r}; valid sizes: {', '.join(LADDER)}")
        return cls(depth=LADDER[name], vocab_size=vocab_size, seq_len=seq_len)

    @property
    def width(self) -> int:
        return 64 * self.depth

    @property
    def heads(self) -> int:
        return max(1, self.width // 64)

    @property
    def mlp(self) -> int:
        return int(math.ceil(8 * self.width / 3 / 32) * 32)

    def hf_config(self) -> Any:
        from transformers import LlamaConfig

        # A plain kwargs dict: transformers 4.x and 5.x both accept these (5.x folds rope_theta into
        # rope_parameters); 10000 is the default theta.
        kwargs: dict[str, Any] = dict(
            vocab_size=self.vocab_size,
            hidden_size=self.width,
            intermediate_size=self.mlp,
            num_hidden_layers=self.depth,
            num_attention_heads=self.heads,
            num_key_value_heads=self.heads,
            max_position_embeddings=self.seq_len,
            tie_word_embeddings=True,
            attention_dropout=0.0,
            rms_norm_eps=1e-5,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=None,
            attn_implementation="sdpa",
            use_cache=False,
        )
        return LlamaConfig(**kwargs)

    def build_reference(self) -> Any:
        """A freshly initialised transformers ``LlamaForCausalLM`` (seed torch first for determinism): the
        reference network (the trainer's model before the hand-written decoder; kept for tests and the benchmark)."""
        from transformers import LlamaForCausalLM

        return LlamaForCausalLM(self.hf_config())

    def param_counts(self) -> dict[str, int]:
        """Total parameters, those outside the embedding, and those doing matmuls (for FLOPs)."""
        w, d, v, f = self.width, self.depth, self.vocab_size, self.mlp
        per_layer = 4 * w * w + 3 * w * f + 2 * w  # q,k,v,o + gate/up/down + two RMSNorm weights
        non_embed = d * per_layer + w  # final norm
        return {"params": non_embed + v * w, "non_embedding": non_embed, "matmul": non_embed + v * w}

    def flops_per_token(self) -> int:
        """Training FLOPs per token: ``6·N_matmul + 12·layers·width·seq_len`` (attention scores)."""
        return 6 * self.param_counts()["matmul"] + 12 * self.depth * self.width * self.seq_len

    def describe(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "width": self.width,
            "heads": self.heads,
            "mlp": self.mlp,
            **self.param_counts(),
            "flops_per_token": self.flops_per_token(),
        }
