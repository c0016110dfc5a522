"""Where a proxy training step spends its time: torch.profiler over a few steps of the real loop's
pieces (decoder forward + fused head/cross-entropy, backward, clip, fused AdamW), grouped by kind.

    python benchmarks/profile_proxy_step.py --model proxy_5m --vocab 2048 --seq 128 --batch 16 --steps 6

Prints tokens/s, MFU against a matmul peak measured in the same process, and the share of self CPU
time per group of operators (matmul, attention, softmax/CE, elementwise/norm, optimizer, other).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

import numpy as np
import torch

from curate.instrument.decoder import build_model
from curate.instrument.device import use_autocast as _use_autocast
from curate.instrument.model_config import ModelConfig
from curate.instrument.step import build_optimizer, lm_loss
from curate.instrument.train_config import TrainConfig

GROUPS = [
    ("matmul", ("addmm", "mm", "bmm", "matmul", "linear")),
    ("attention", ("scaled_dot_product", "flash", "attention", "_efficient")),
    ("softmax / cross-entropy", ("softmax", "log_softmax", "nll", "cross_entropy", "logsumexp")),
    ("optimizer", ("adam", "_fused", "foreach")),
    ("casts / copies", ("to_copy", "copy_", "_to", "contiguous", "clone")),
    (
        "elementwise / norm / rotary",
        ("mul", "add", "rsqrt", "pow", "mean", "silu", "neg", "cat", "sigmoid", "sub", "div"),
    ),
]


def group_of(name: str) -> str:
    n = name.lower()
    for g, keys in GROUPS:
        if any(k in n for k in keys):
            return g
    return "other"


def matmul_peak(dtype: torch.dtype, n: int = 1024, reps: int = 10) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="proxy_5m")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    mcfg = ModelConfig.named(args.model, vocab_size=args.vocab, seq_len=args.seq)
    model = build_model(mcfg)
    cfg = TrainConfig(model=args.model, seq_len=args.seq, batch_size=args.batch, tokens=10**9)
    auto = _use_autocast(cfg, torch.device("cpu"))
    head = torch.bfloat16 if auto else torch.float32
    opt = build_optimizer(model, cfg)
    rng = np.random.default_rng(0)

    def step() -> None:
        batch = torch.from_numpy(rng.integers(0, args.vocab, (args.batch, args.seq + 1)).astype(np.int64))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=auto):
            loss = lm_loss(model, batch, head_dtype=head)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    wall = time.perf_counter() - t0
    tokens = args.steps * args.batch * args.seq
    shares: dict[str, float] = defaultdict(float)
    total = 0.0
    for ev in prof.key_averages():
        if ev.key.startswith("ProfilerStep") or ev.self_cpu_time_total <= 0:
            continue
        shares[group_of(ev.key)] += ev.self_cpu_time_total
        total += ev.self_cpu_time_total
    desc = mcfg.describe()
    peak = matmul_peak(torch.bfloat16 if auto else torch.float32)
    tps = tokens / wall
    print(
        f"{args.model}: {desc['params']:,} params, {desc['flops_per_token']:,} FLOP/token, autocast={'bf16' if auto else 'off'}, "
        f"threads={args.threads}, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{tps:,.0f} tokens/s (profiled, so a little slow); matmul peak {peak / 1e9:.1f} GFLOP/s; MFU {tps * desc['flops_per_token'] / peak:.0%}"
    )
    for g, v in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {g:<30} {v / total:6.1%}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
