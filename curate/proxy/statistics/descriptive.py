"""Data goodput: the descriptive half of ``goodput.json``, as pure functions (the called numbers,
multiplier, goodput and ranking, come from the paired statistic of :mod:`curate.proxy.statistics.analysis`).

Inputs are eval curves: for each recipe, for each seed, bpb at the same token counts ``t_1 < ... < t_K``
(``t_K = T``, the budget). ``b_r(t)`` is the mean over seeds (and over eval sets, for the headline
numbers). All functions are numpy-only and deterministic (the bootstrap draws from a fixed seed).

Only ``b_r(T)`` is read from a finished (cooled-down) model; the earlier points are checkpoints of a run
still training at its peak learning rate, shown as training curves (``curves``) and never read for a
number. Nothing is extrapolated: no law is fitted to a curve's tail.

* :func:`tokens_to_reach` inverts a measured curve *inside* its range: ``t(b)``, interpolated linearly in
  ``(log t, bpb)`` on the curve's running-minimum envelope (so noise that makes bpb tick up never makes a
  bpb "reached" twice); outside the range there is no value, only a bound (:mod:`curate.proxy.statistics.analysis`).
* :func:`learning_signal`: ``(b_base(T) - b_r(T)) / T`` in bpb per token.
* :func:`bootstrap` resamples seeds with replacement (per recipe) for the descriptive bands;
  :func:`ranking` orders recipes by their own seeds' bands (superseded in ``goodput.json`` by the paired
  ranking).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np


def tokens_to_reach(
    tokens: np.ndarray | list[float], bpb: np.ndarray | list[float], target: float
) -> tuple[float, bool]:
    """``t(target)``: tokens the measured curve ``(tokens, bpb)`` needs to reach bpb ``target``: the first
    crossing of its running-minimum envelope, interpolated linearly in log-token space. Returns
    ``(tokens, False)``: the flag says "not extrapolated", always. A target outside the curve's range
    (better than its best, worse than its first point) has no measured value: ``ValueError`` (the caller
    reports the range's end as a bound)."""
    t = np.asarray(tokens, dtype=np.float64)
    b = np.minimum.accumulate(np.asarray(bpb, dtype=np.float64))
    if not b[0] >= target >= b[-1]:
        raise ValueError(
            f"bpb {target} is outside the measured curve's range [{b[-1]}, {b[0]}]: a bound, not a value"
        )
    for i in range(len(t) - 1):
        if b[i] == target:
            return float(t[i]), False
        if b[i] > target == b[i + 1]:
            return float(t[i + 1]), False
        if b[i] > target > b[i + 1]:
            frac = (b[i] - target) / (b[i] - b[i + 1])
            return float(math.exp(math.log(t[i]) + frac * (math.log(t[i + 1]) - math.log(t[i])))), False
    return float(t[-1]), False


def learning_signal(base_final_bpb: float, recipe_final_bpb: float, budget: float) -> float:
    """``(b_base(T) - b_r(T)) / T``: bpb gained over the baseline, per training token."""
    return (base_final_bpb - recipe_final_bpb) / budget


def slope_curve(
    tokens: np.ndarray | list[float], bpb: np.ndarray | list[float]
) -> tuple[list[float], list[float]]:
    """``-d b / d ln t`` between consecutive eval points, at their geometric midpoints."""
    t = np.asarray(tokens, dtype=np.float64)
    b = np.asarray(bpb, dtype=np.float64)
    mid = np.sqrt(t[1:] * t[:-1])
    return mid.tolist(), (-(b[1:] - b[:-1]) / np.diff(np.log(t))).tolist()


def value_at(tokens: np.ndarray | list[float], bpb: np.ndarray | list[float], t: float) -> float:
    """bpb at ``t`` tokens, interpolated linearly in log-token space (clamped to the curve's ends)."""
    return float(
        np.interp(
            math.log(t), np.log(np.asarray(tokens, dtype=np.float64)), np.asarray(bpb, dtype=np.float64)
        )
    )


def bootstrap_indices(n_seeds: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot, n_seeds)`` seed indices drawn with replacement."""
    return rng.integers(0, n_seeds, size=(n_boot, n_seeds))


def percentile_ci(samples: np.ndarray | list[float], level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap ``samples`` (non-finite samples count as +inf)."""
    s = np.asarray(samples, dtype=np.float64)
    s = np.where(np.isfinite(s), s, np.inf)
    # inverted_cdf: no interpolation, so an infinite sample never turns a bound into nan.
    lo, hi = np.percentile(s, [50 * (1 - level), 50 * (1 + level)], method="inverted_cdf")
    return float(lo), float(hi)


def separated(ci_a: tuple[float, float], ci_b: tuple[float, float]) -> bool:
    """True when two intervals do not overlap."""
    return ci_a[1] < ci_b[0] or ci_b[1] < ci_a[0]


def ranking(final_bpb: dict[str, float], final_ci: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Order recipes by mean bpb at ``T`` (lower is better); a pair's order is *called* only where the
    bootstrap CIs separate, else the pair is a tie."""
    order = sorted(final_bpb, key=lambda r: (final_bpb[r], r))
    pairs = []
    for a, b in itertools.combinations(order, 2):
        called = separated(final_ci[a], final_ci[b])
        pairs.append({"better": a if called else None, "a": a, "b": b, "separated": called})
    # Tiers: a new tier starts when a recipe is separated from every member of the current tier.
    tiers: list[list[str]] = []
    for r in order:
        if tiers and not all(separated(final_ci[r], final_ci[m]) for m in tiers[-1]):
            tiers[-1].append(r)
        else:
            tiers.append([r])
    return {"metric": "mean eval bpb at T (lower is better)", "order": order, "tiers": tiers, "pairs": pairs}


def finite_or_none(x: float) -> float | None:
    """JSON has no infinity (nor NaN): a non-finite number is ``null``."""
    return float(x) if math.isfinite(x) else None


@dataclass
class RecipeCurves:
    """One recipe's eval curves: ``bpb[eval_set]`` is ``(n_seeds, K)`` at the shared ``tokens``.

    ``tokens_kept`` is the recipe's dataset size in tokens (all of it, not just the ``T`` trained on);
    ``device_s`` the proxy-training device-seconds summed over its seeds, ``tokens_trained`` the tokens
    those runs processed.
    """

    bpb: dict[str, np.ndarray]
    tokens_kept: int
    device_s: float = 0.0
    tokens_trained: int = 0


def _headline(rc: RecipeCurves, sets: list[str] | None = None) -> np.ndarray:
    # The headline curve averages the headline eval sets (default: all) with equal weight: (n_seeds, K).
    names = sorted(sets) if sets else sorted(rc.bpb)
    return np.mean(np.stack([np.asarray(rc.bpb[k], dtype=np.float64) for k in names]), axis=0)


@dataclass(frozen=True)
class _Frame:
    """What every recipe is described against: the eval points ``t`` (the last is the budget), the
    baseline's mean headline bpb at ``T``, and the raw input's tokens."""

    t: np.ndarray
    budget: int
    base_final: float
    tokens_in: int
    level: float


def _eval_curves(rc: RecipeCurves, draws: np.ndarray, f: _Frame) -> dict[str, Any]:
    """Per eval set: mean bpb with bootstrap bands, per-seed curves, and the slope ``-d bpb / d ln t``."""
    curves = {}
    for name, arr in sorted(rc.bpb.items()):
        arr = np.asarray(arr, dtype=np.float64)
        cis = [percentile_ci(arr[draws, j].mean(axis=1), f.level) for j in range(len(f.t))]
        mids, slope = slope_curve(f.t, arr.mean(axis=0))
        curves[name] = {
            "tokens": [int(x) for x in f.t],
            "bpb_mean": arr.mean(axis=0).tolist(),
            "bpb_ci_low": [c[0] for c in cis],
            "bpb_ci_high": [c[1] for c in cis],
            "per_seed": arr.tolist(),
            "slope_tokens": mids,
            "neg_dbpb_dlnt": slope,
        }
    return curves


def _recipe_metrics(rc: RecipeCurves, h: np.ndarray, draws: np.ndarray, f: _Frame) -> dict[str, Any]:
    """One recipe's descriptive entry, from its headline curves ``h`` (seeds x points) and its bootstrap
    draws of seeds: bpb at ``T`` (its finished models) with its band, the learning signal, yield, data
    counts, measured costs and the training curves. The multiplier, goodput and effective tokens are the
    paired statistic's (filled in by :mod:`curate.proxy.assembly.assemble`)."""
    final = float(h[:, -1].mean())
    final_ci = percentile_ci([float(h[d, -1].mean()) for d in draws], f.level)
    return {
        "learning_signal_per_token": learning_signal(f.base_final, final, f.budget),
        "bpb_at_T": {"value": final, "ci_low": final_ci[0], "ci_high": final_ci[1]},
        "yield": rc.tokens_kept / f.tokens_in if f.tokens_in else math.nan,
        "tokens_in": int(f.tokens_in),
        "tokens_kept": int(rc.tokens_kept),
        "costs": {"proxy_device_s": rc.device_s, "proxy_tokens_trained": int(rc.tokens_trained)},
        "curves": _eval_curves(rc, draws, f),
    }


CURVES_NOTE = (
    "recipes[r].curves are training curves: bpb at checkpoints of runs still training at their peak "
    "learning rate (not cooled down), except the last point, each seed's finished model at T. They are "
    "descriptive: no number in this file (multiplier, call, ranking, decision agreement) is read from "
    "them, and none is extrapolated from a fitted curve"
)


def goodput_report(
    recipes: dict[str, RecipeCurves],
    *,
    baseline: str,
    tokens: list[int] | np.ndarray,
    budget: int,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    headline: list[str] | None = None,
) -> dict[str, Any]:
    """The descriptive metrics of every recipe, with bootstrap bands over seeds (schema: docs/goodput.md).

    ``tokens`` are the shared eval points (the last one is ``budget``). The baseline's ``tokens_kept`` is
    ``tokens_in``, the raw input's size in tokens.
    """
    if baseline not in recipes:
        raise ValueError(f"baseline recipe {baseline!r} has no curves; recipes: {', '.join(sorted(recipes))}")
    t = np.asarray(tokens, dtype=np.float64)
    if t[-1] != budget:
        raise ValueError(f"the last eval point ({t[-1]:g} tokens) must be the budget T={budget}")
    heads = {r: _headline(rc, headline) for r, rc in recipes.items()}
    rng = np.random.default_rng(seed)
    draws = {r: bootstrap_indices(h.shape[0], n_boot, rng) for r, h in sorted(heads.items())}
    frame = _Frame(
        t=t,
        budget=budget,
        base_final=float(heads[baseline][:, -1].mean()),
        tokens_in=recipes[baseline].tokens_kept,
        level=level,
    )
    out = {r: _recipe_metrics(rc, heads[r], draws[r], frame) for r, rc in sorted(recipes.items())}
    final_mean = {r: e["bpb_at_T"]["value"] for r, e in out.items()}
    final_ci = {r: (e["bpb_at_T"]["ci_low"], e["bpb_at_T"]["ci_high"]) for r, e in out.items()}
    return {
        "recipes": out,
        "baseline": baseline,
        "ranking": ranking(final_mean, final_ci),
        "curves_note": CURVES_NOTE,
        "bootstrap": {"n_boot": n_boot, "level": level, "seed": seed},
    }
