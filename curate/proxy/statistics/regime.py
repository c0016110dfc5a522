"""``regime`` in ``goodput.json``: where the run's proxy sits beside published proxy regimes (tokens per
parameter, compute per run) and a GPU projection from FLOPs (a projection, not a measurement)."""

from __future__ import annotations

from typing import Any

# Published proxy regimes, for the report's "where this run sits" table (facts as the papers state them).
PUBLISHED_REGIMES = [
    {
        "name": "Chinchilla compute-optimal (Hoffmann et al. 2022)",
        "params": None,
        "tokens_per_param": 20,
        "note": "the usual '1x' training length",
    },
    {
        "name": "DCLM smallest competition scale (Li et al. 2024)",
        "params": 412e6,
        "tokens": 8.2e9,
        "tokens_per_param": 20,
        "note": "412M parameters at 1x Chinchilla",
    },
    {
        "name": "DataDecide (Magnusson et al. 2025)",
        "params": 150e6,
        "tokens_per_param": 100,
        "note": "150M-parameter rankings predict the 1B winner in ~80% of pairs, with continuous metrics",
    },
    {
        "name": "RegMix (Liu et al. 2024)",
        "params": 1e6,
        "tokens": 1e9,
        "tokens_per_param": 1000,
        "note": "mixtures ranked with 1M-parameter models, each trained on ~1B tokens",
    },
]


GPU_DEVICE, GPU_PEAK_FLOPS, GPU_MFU = "one H100 SXM", 989e12, 0.3


def regime(main: dict[str, Any], ladder: list[dict[str, Any]]) -> dict[str, Any]:
    rate = GPU_PEAK_FLOPS * GPU_MFU
    gpu_tps = rate / main["flops_per_token"] if main["flops_per_token"] else None
    dd_flops = 6 * 150e6 * 150e6 * 100  # DataDecide-like 150M model at 100 tokens/param
    return {
        "model": main["model"],
        "params": main["params"],
        "non_embedding": main["non_embedding"],
        "tokens": main["budget"],
        "tokens_per_param": main["tokens_per_param"],
        "compute_flops_per_run": main["compute_flops_per_run"],
        "measured_tokens_per_s": main["tokens_per_s"],
        "published": PUBLISHED_REGIMES,
        "gpu_projection": {
            "device": GPU_DEVICE,
            "peak_flops": GPU_PEAK_FLOPS,
            "mfu": GPU_MFU,
            "note": "a projection from FLOPs, not a measurement: tokens/s = peak x MFU / flops_per_token",
            "this_point_tokens_per_s": gpu_tps,
            "this_point_run_s": main["budget"] / gpu_tps if gpu_tps else None,
            "datadecide_150m_run_hours": dd_flops / rate / 3600,
            "ladder_compute_flops": [p["compute_flops_per_run"] for p in ladder],
        },
    }
