"""A ladder of three points whose answers are known, as goodput.json holds it: a cheap point that ranks as the
top point does, one that reverses every pair, a pair the top point cannot tell from a tie, every point on
seeds of its own (the transfer study's tests and the report's ladder chart read it)."""

from __future__ import annotations

import numpy as np

# dyadic levels and seed noise, so every difference is exact; "tie" is raw plus a pattern of mean exactly 0
LEVELS = {"raw": 3.0, "a": 2.875, "b": 2.9375, "c": 3.125, "tie": 3.0}
NOISE = np.array([3, -1, 2, -4, 1, -1]) / 1024
TIE = np.array([1, -1, 1, -1, 1, -1]) / 128


def ladder_point(name, compute, seeds, device_s, sign=1.0, *, tie_at=0.0):
    n = len(seeds)
    per_seed = {r: (sign * (v - 3.0) + 3.0 + NOISE[:n] * (i + 1)) for i, (r, v) in enumerate(LEVELS.items())}
    per_seed["tie"] = per_seed["raw"] + (TIE[:n] if tie_at == 0.0 else tie_at)
    per_seed["null"] = per_seed["raw"] + 1 / 256
    budget = int(name.split("@")[1])
    return {
        "name": name,
        "model": name.split("@")[0],
        "budget": budget,
        "seeds": list(seeds),
        "params": 1e6,
        "tokens_per_param": 0.3,
        "compute_flops_per_run": compute,
        "device_s": device_s,
        "mde_multiplier": {"worse": 0.8, "better": 1.2},
        # raw's finished curve, 0.25 bpb per doubling of tokens around the point's budget
        "baseline_curve": {"budgets": [budget // 2, budget, budget * 2], "bpb": [3.25, 3.0, 2.75]},
        "recipes": {
            r: {
                "per_seed_bpb_at_T": v.tolist(),
                "bpb_at_T": float(v.mean()),
                "multiplier": {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "bounds": {}},
                "call": "not_called",
                "diff_bpb": {"value": 0.0},
            }
            for r, v in per_seed.items()
        },
    }


def ladder_goodput(points):
    roles = {
        "raw": "baseline",
        "a": "recipe",
        "b": "recipe",
        "c": "recipe",
        "tie": "recipe",
        "null": "control",
    }
    return {
        "baseline": "raw",
        "recipes": {r: {"role": k} for r, k in roles.items()},
        "ladder": {"reference": points[-1]["name"], "main": points[0]["name"], "points": points},
    }


# the main point ranks as the top point does (and calls "tie" better than raw: a pair of weight 0); the
# middle point reverses every pair; the top point has six seeds, so its ceiling splits them 3 and 3
MAIN = ladder_point("proxy_1m@100", 1e12, range(4), 360.0, tie_at=-1 / 64)
REVERSED = ladder_point("proxy_1m@400", 4e12, range(4, 8), 900.0, sign=-1.0, tie_at=1 / 64)
TOP = ladder_point("proxy_5m@1000", 30e12, range(8, 14), 6000.0)
G = ladder_goodput([MAIN, TOP, REVERSED])
