"""Proxy trainer speed, old vs new, interleaved in one process (issue 21, item 8: "speed is power").

    .venv/bin/python benchmarks/bench_trainer.py --model proxy_5m --vocab 2048 --seq 128 --batch 16 \\
        --steps 8 --rounds 7 --threads 1

``old`` is the trainer's step as on main before issue 21: transformers' ``LlamaForCausalLM``
(:meth:`ModelConfig.build_reference`) through main's ``lm_loss`` / ``build_optimizer`` (copied verbatim
below, so later edits to ``train.py`` do not move the baseline). ``new`` is today's ``train.py`` with
:meth:`ModelConfig.build`. Each round times ``--steps`` optimizer steps of each (after ``--warmup``
untimed ones), old and new alternating which goes first, on the same batches from the same initial
weights. The machine is shared, so the primary measure is tokens per CPU-second of this process (with
one thread: tokens per second per core, insensitive to time-slicing by other processes, though not to
their cache traffic); tokens per wall-second per thread is printed beside it. Medians over rounds of
each and of the per-round CPU-time ratio are reported with the load average. Both runs' per-step losses are compared too: same maths, so they must
agree to float rounding.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from curate.proxy.fused_ce import linear_cross_entropy
from curate.proxy.model import ModelConfig
from curate.proxy.train import TrainConfig, _use_autocast, build_optimizer, lm_loss


def main_lm_loss(
    model: Any, batch: torch.Tensor, *, head_dtype: torch.dtype, chunk: int = 256
) -> torch.Tensor:
    """``curate.proxy.train.lm_loss`` at main (1c0d3a7)."""
    x, y = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()
    h = model.model(input_ids=x).last_hidden_state
    return linear_cross_entropy(
        h.reshape(-1, h.size(-1)), model.lm_head.weight, y.reshape(-1), chunk=chunk, mm_dtype=head_dtype
    )


def main_build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """``curate.proxy.train.build_optimizer`` at main (1c0d3a7)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=1e-8, fused=True)


class Trainer:
    """One implementation's model + optimizer + step (the inner loop of ``Run.train``, without eval)."""

    def __init__(self, name: str, mcfg: ModelConfig, cfg: TrainConfig, *, autocast: bool) -> None:
        self.name, self.cfg, self.autocast = name, cfg, autocast
        torch.manual_seed(cfg.seed)
        if name == "old":
            self.model, self.loss_fn = mcfg.build_reference(), main_lm_loss
            self.opt = main_build_optimizer(self.model, cfg)
        else:
            self.model, self.loss_fn = mcfg.build(), lm_loss
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


def run_round(tr: Trainer, batches: list[torch.Tensor], warmup: int) -> tuple[float, float, list[float]]:
    """Wall seconds and this process's CPU seconds for the timed steps, and every step's loss."""
    losses = [tr.step(b) for b in batches[:warmup]]
    t0, c0 = time.perf_counter(), time.process_time()
    losses += [tr.step(b) for b in batches[warmup:]]
    return time.perf_counter() - t0, time.process_time() - c0, losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="proxy_5m")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8, help="timed optimizer steps per round and implementation")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--autocast", default="auto", choices=["auto", "bf16", "off"])
    args = ap.parse_args()
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
        f"{args.steps} timed steps ({tokens:,} tokens) per implementation, threads {args.threads}, "
        f"autocast {'bf16' if auto else 'off'}; load at start {os.getloadavg()}"
    )
    tps: dict[str, list[float]] = {"old": [], "new": []}  # tokens per CPU-second of this process
    wall: dict[str, list[float]] = {"old": [], "new": []}  # tokens per wall-second per thread
    ratios, loss_diff = [], 0.0
    make: dict[str, Callable[[], Trainer]] = {
        k: (lambda k=k: Trainer(k, mcfg, cfg, autocast=auto)) for k in ("old", "new")
    }
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        cpu, losses = {}, {}
        for name in order:
            secs, cpu[name], losses[name] = run_round(make[name](), batches, args.warmup)
            tps[name].append(tokens / cpu[name])
            wall[name].append(tokens / secs / args.threads)
        ratios.append(cpu["old"] / cpu["new"])
        loss_diff = max(loss_diff, max(abs(a - b) for a, b in zip(losses["old"], losses["new"], strict=True)))
        print(
            f"round {r}: tokens per CPU-s old {tps['old'][-1]:,.0f}  new {tps['new'][-1]:,.0f}  "
            f"(per wall-s per thread {wall['old'][-1]:,.0f} / {wall['new'][-1]:,.0f})  "
            f"ratio {ratios[-1]:.2f}  load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    med = {k: statistics.median(v) for k, v in tps.items()}
    medw = {k: statistics.median(v) for k, v in wall.items()}
    print(
        f"median tokens per CPU-second: old {med['old']:,.0f}, new {med['new']:,.0f} (per wall-second per "
        f"thread: old {medw['old']:,.0f}, new {medw['new']:,.0f}, ratio {medw['new'] / medw['old']:.2f}); median per-round ratio "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}, n={len(ratios)}); "
        f"max |loss_old - loss_new| over {n} steps: {loss_diff:.2e}; load at end {os.getloadavg()}"
    )


if __name__ == "__main__":
    main()
