"""Where a proxy run computes and in which precision: bf16 autocast where it pays (GPU, CPUs with native
bf16 matmuls), fp32 elsewhere; a GPU Ray assigned without CUDA in torch is said, not hidden."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from curate.instrument.train_config import TrainConfig

log = logging.getLogger(__name__)


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (x86 ``avx512_bf16`` or ``amx_bf16`` in /proc/cpuinfo).

    Measured on an earlier machine of this project (AMD EPYC with avx512_bf16, 2 threads): bf16 matmuls ran
    2.2-3x the fp32 rate at the head's shapes, a whole training step 1.3-1.8x faster (BENCHMARKS.md,
    proxy). Without these instructions torch emulates bf16 and it is slower than fp32 (about 8x on the
    AVX2-only EPYC of the trainer benchmarks), so ``auto`` stays fp32 there.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def gpu_assigned_without_cuda() -> bool:
    """True when Ray gave this worker a GPU but torch finds no CUDA (e.g. the CPU build of torch on a
    GPU node): the run then trains on CPU, and its result says so instead of staying silent."""
    from curate.core.engine import assigned_gpus

    missing = bool(assigned_gpus()) and not torch.cuda.is_available()
    if missing:
        log.warning(
            "this worker was assigned GPU(s) %s but torch has no CUDA: training on CPU", assigned_gpus()
        )
    return missing


def use_autocast(cfg: TrainConfig, device: torch.device) -> bool:
    if cfg.autocast not in ("auto", "bf16", "off"):
        raise ValueError(f"autocast={cfg.autocast!r}; valid: auto, bf16, off")
    if cfg.autocast != "auto":
        return cfg.autocast == "bf16"
    return device.type == "cuda" or (device.type == "cpu" and cpu_has_native_bf16())
