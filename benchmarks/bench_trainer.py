"""Proxy trainer speed, old vs new, interleaved in one process (a faster trainer buys statistical power).

    .venv/bin/python benchmarks/bench_trainer.py --model proxy_5m --vocab 2048 --seq 128 --batch 16 \\
        --steps 8 --rounds 7 --threads 1 [--variants old,flash,new,new+compile]

``flash`` is today's trainer with torch's flash attention kernel on every dtype (the decoder before its
attention was written out on CPU in bf16). ``old`` is the trainer's step before its own decoder: transformers' ``LlamaForCausalLM``
(:meth:`ModelConfig.build_reference`) through the earlier ``lm_loss`` / ``build_optimizer`` (copied verbatim
below, so later edits to ``train.py`` do not move the baseline). ``new`` is today's ``train.py`` with
:meth:`ModelConfig.build`. Each round times ``--steps`` optimizer steps of each (after ``--warmup``
untimed ones), old and new alternating which goes first, on the same batches from the same initial
weights. The machine is shared, so the primary measure is tokens per CPU-second of this process (with
one thread: tokens per second per core, insensitive to time-slicing by other processes, though not to
their cache traffic); tokens per wall-second per thread is printed beside it. Medians over rounds of
each and of the per-round CPU-time ratio are reported with the load average. Both runs' per-step losses are compared too: same maths, so they must
agree to float rounding. ``+compile`` variants run the decoder through ``torch.compile`` (``new+compile``
is ``TrainConfig(compile=True)``'s path; the first step, the compilation, is timed apart). Last, the fp32 (or bf16) matmul rate at 1024³ is measured in the same
process: divided by the model's FLOPs per token it is the ceiling no same-maths trainer can pass here; and
the rate at the model's own shapes (every matmul of a step, forward and backward, timed alone at its shape:
:func:`shape_ceiling`), the ceiling once small shapes are counted. Each variant's share of both is printed.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from typing import Any

import numpy as np
import torch

from curate.instrument.decoder import build_model
from curate.instrument.device import use_autocast as _use_autocast
from curate.instrument.fused_ce import linear_cross_entropy
from curate.instrument.model_config import ModelConfig
from curate.instrument.step import build_optimizer, lm_loss
from curate.instrument.train_config import TrainConfig


def main_lm_loss(
    model: Any, batch: torch.Tensor, *, head_dtype: torch.dtype, chunk: int = 256
) -> torch.Tensor:
    """``curate.instrument.train.lm_loss`` at main (1c0d3a7)."""
    x, y = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()
    h = model.model(input_ids=x).last_hidden_state
    return linear_cross_entropy(
        h.reshape(-1, h.size(-1)), model.lm_head.weight, y.reshape(-1), chunk=chunk, mm_dtype=head_dtype
    )


def main_build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """``curate.instrument.train.build_optimizer`` at main (1c0d3a7)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=1e-8, fused=True)


class Trainer:
    """One implementation's model + optimizer + step (the inner loop of ``Run.train``, without eval)."""

    def __init__(self, variant: str, mcfg: ModelConfig, cfg: TrainConfig, *, autocast: bool) -> None:
        self.cfg, self.autocast, self.variant = cfg, autocast, variant
        torch.manual_seed(cfg.seed)
        if variant.startswith("old"):
            self.model, self.loss_fn = mcfg.build_reference(), main_lm_loss
            self.opt = main_build_optimizer(self.model, cfg)
            if variant.endswith("+compile"):
                self.model.model.compile()
        else:  # the trainer's own path: lm_loss(..., compile=TrainConfig.compile)
            self.model = build_model(mcfg)
            self.loss_fn = functools.partial(lm_loss, compile=variant.endswith("+compile"))
            self.opt = build_optimizer(self.model, cfg)
        self.model.train()
        self.head_dtype = torch.bfloat16 if autocast else torch.float32

    def step(self, batch: torch.Tensor) -> float:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.autocast):
            loss = self.loss_fn(self.model, batch, head_dtype=self.head_dtype, chunk=self.cfg.ce_chunk)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach())


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The decoder's attention before it was written out on CPU in bf16: torch's kernel on every dtype."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def run_round(tr: Trainer, batches: list[torch.Tensor], warmup: int) -> dict[str, Any]:
    """CPU and wall seconds of the first step and of the timed steps, and every step's loss. The ``flash``
    variant runs today's trainer with :func:`flash_attention` in the decoder."""
    if tr.variant == "flash":
        from curate.instrument import decoder

        saved, decoder.causal_attention = decoder.causal_attention, flash_attention
        try:
            return _timed(tr, batches, warmup)
        finally:
            decoder.causal_attention = saved
    return _timed(tr, batches, warmup)


def _timed(tr: Trainer, batches: list[torch.Tensor], warmup: int) -> dict[str, Any]:
    c0, t0 = time.process_time(), time.perf_counter()
    losses = [tr.step(batches[0])]
    first = {"first_cpu": time.process_time() - c0, "first_wall": time.perf_counter() - t0}
    losses += [tr.step(b) for b in batches[1:warmup]]
    c0, t0 = time.process_time(), time.perf_counter()
    losses += [tr.step(b) for b in batches[warmup:]]
    return {"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0, "losses": losses, **first}


def matmul_rate(dtype: torch.dtype, n: int = 1024, reps: int = 10) -> float:
    """FLOP per CPU-second of an ``n``³ matmul (median of 5)."""
    return 2 * n**3 / _mm_seconds(n, n, n, dtype, reps=reps)


def _mm_seconds(m: int, k: int, n: int, dtype: torch.dtype, batch: int = 1, reps: int = 20) -> float:
    """CPU seconds of one ``(batch, m, k) @ (batch, k, n)`` matmul (median of 5 timings of ``reps``)."""
    a, b = torch.randn(batch, m, k, dtype=dtype).squeeze(0), torch.randn(batch, k, n, dtype=dtype).squeeze(0)
    a @ b
    times = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(reps):
            a @ b
        times.append((time.process_time() - c0) / reps)
    return statistics.median(times)


def shape_ceiling(
    mcfg: ModelConfig, batch: int, seq: int, dtype: torch.dtype, chunk: int
) -> dict[str, float]:
    """The ceiling at the model's own shapes: every matmul of one training step (forward, and backward's
    two per forward matmul: the input's gradient and the weight's), timed alone at its shape in ``dtype``;
    tokens per CPU-second if a step were those matmuls and nothing else. Attention's score and value
    matmuls are batched over ``batch x heads``; the tied head runs in chunks of ``chunk`` tokens."""
    w, h, hd, v = mcfg.width, mcfg.heads, mcfg.width // mcfg.heads, mcfg.vocab_size
    tok = batch * seq
    # (rows, inner, cols) per forward matmul, and how many of each per step
    dense = [(tok, w, 3 * w), (tok, w, w), (tok, w, 2 * mcfg.mlp), (tok, mcfg.mlp, w)]
    total = flops = 0.0
    for m, k, n in dense:
        for shape in ((m, k, n), (m, n, k), (k, m, n)):  # forward, grad of input, grad of weight
            total += mcfg.depth * _mm_seconds(*shape, dtype)
            flops += mcfg.depth * 2 * m * k * n
    for shape in ((seq, hd, seq), (seq, seq, hd)):  # scores, values; backward: two of each shape's kind
        s = _mm_seconds(*shape, dtype, batch=batch * h)
        total += 3 * mcfg.depth * s
        flops += 3 * mcfg.depth * 2 * batch * h * shape[0] * shape[1] * shape[2]
    n_chunks = -(-tok // chunk)
    for shape in ((chunk, w, v), (chunk, v, w), (v, chunk, w)):  # logits, grad of h, grad of the head
        total += n_chunks * _mm_seconds(*shape, dtype)
        flops += n_chunks * 2 * chunk * w * v
    return {"tokens_per_cpu_s": tok / total, "gflop_per_cpu_s": flops / total / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="proxy_5m")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8, help="timed optimizer steps per round and variant")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (the first is timed apart)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--autocast", default="auto", choices=["auto", "bf16", "off"])
    ap.add_argument(
        "--variants", default="old,new", help="comma-separated: old, new, flash, old+compile, new+compile"
    )
    args = ap.parse_args()
    variants = args.variants.split(",")
    known = ("old", "new", "flash", "old+compile", "new+compile")
    if variants[0] != "old" or any(v not in known for v in variants):
        raise SystemExit(
            f"--variants {args.variants!r}: start with old, then any of new, flash, old+compile, new+compile"
        )
    torch.set_num_threads(args.threads)
    mcfg = ModelConfig.named(args.model, vocab_size=args.vocab, seq_len=args.seq)
    cfg = TrainConfig(model=args.model, seq_len=args.seq, batch_size=args.batch, autocast=args.autocast)
    auto = _use_autocast(cfg, torch.device("cpu"))
    rng = np.random.default_rng(0)
    n = args.warmup + args.steps
    batches = [
        torch.from_numpy(rng.integers(0, args.vocab, (args.batch, args.seq + 1)).astype(np.int64))
        for _ in range(n)
    ]
    tokens = args.steps * args.batch * args.seq
    print(
        f"{args.model} vocab {args.vocab} seq {args.seq} batch {args.batch}: {args.rounds} rounds x "
        f"{args.steps} timed steps ({tokens:,} tokens) per variant, threads {args.threads}, "
        f"autocast {'bf16' if auto else 'off'}; load at start {os.getloadavg()}"
    )
    cpu_tps: dict[str, list[float]] = {v: [] for v in variants}  # tokens per CPU-second of this process
    wall_tps: dict[str, list[float]] = {v: [] for v in variants}  # tokens per wall-second per thread
    ratios: dict[str, list[float]] = {v: [] for v in variants[1:]}  # CPU time old / variant, per round
    first: dict[str, list[float]] = {v: [] for v in variants}
    loss_diff = dict.fromkeys(variants[1:], 0.0)
    for r in range(args.rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        res = {v: run_round(Trainer(v, mcfg, cfg, autocast=auto), batches, args.warmup) for v in order}
        for v in variants:
            cpu_tps[v].append(tokens / res[v]["cpu"])
            wall_tps[v].append(tokens / res[v]["wall"] / args.threads)
            first[v].append(res[v]["first_wall"])
            if v != "old":
                ratios[v].append(res["old"]["cpu"] / res[v]["cpu"])
                diffs = [abs(a - b) for a, b in zip(res["old"]["losses"], res[v]["losses"], strict=True)]
                loss_diff[v] = max(loss_diff[v], *diffs)
        print(
            f"round {r}: tokens per CPU-s "
            + "  ".join(f"{v} {cpu_tps[v][-1]:,.0f}" for v in variants)
            + "  | per wall-s per thread "
            + "  ".join(f"{v} {wall_tps[v][-1]:,.0f}" for v in variants)
            + f"  | load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(f"median over {args.rounds} rounds (load at end {os.getloadavg()}):")
    for v in variants:
        line = (
            f"  {v:<12} {statistics.median(cpu_tps[v]):7,.0f} tokens per CPU-s, "
            f"{statistics.median(wall_tps[v]):7,.0f} per wall-s per thread; first step {statistics.median(first[v]):.1f} s wall "
            f"(round 0: {first[v][0]:.1f} s)"
        )
        if v != "old":
            rs = ratios[v]
            line += (
                f"; per-round ratio to old {statistics.median(rs):.2f} (min {min(rs):.2f}, max {max(rs):.2f}); "
                f"max |loss - loss_old| over {n} steps {loss_diff[v]:.2e}"
            )
        print(line)
    dtype = torch.bfloat16 if auto else torch.float32
    rate = matmul_rate(dtype)
    ceiling = rate / mcfg.flops_per_token()
    print(
        f"matmul 1024^3 here: {rate / 1e9:.1f} GFLOP per CPU-s; at {mcfg.flops_per_token():,} FLOP/token the "
        f"ceiling is {ceiling:,.0f} tokens per CPU-s (every FLOP at that rate)"
    )
    own = shape_ceiling(mcfg, args.batch, args.seq, dtype, cfg.ce_chunk)
    print(
        f"the model's own matmul shapes here: {own['gflop_per_cpu_s']:.1f} GFLOP per CPU-s, a ceiling of "
        f"{own['tokens_per_cpu_s']:,.0f} tokens per CPU-s (a step that were its matmuls alone)"
    )
    for v in variants:
        med = statistics.median(cpu_tps[v])
        print(
            f"  {v:<12} {med / ceiling:.0%} of the 1024^3 ceiling, {med / own['tokens_per_cpu_s']:.0%} of the "
            "own-shapes ceiling"
        )


if __name__ == "__main__":
    main()
