"""Data goodput: the metrics of DESIGN.md ("Data goodput: the metrics"), as pure functions.

Inputs are eval curves: for each recipe, for each seed, bpb at the same token counts ``t_1 < ... < t_K``
(``t_K = T``, the budget). ``b_r(t)`` is the mean over seeds (and over eval sets, for the headline
numbers). All functions are numpy-only and deterministic (the bootstrap draws from a fixed seed).

* :func:`tokens_to_reach` inverts the baseline curve: ``t_base(b)``, interpolated linearly in
  ``(log t, bpb)`` on the baseline's running-minimum envelope (so noise that makes bpb tick up never
  makes a bpb "reached" twice), else extrapolated with a power law ``a + c·t^-alpha`` fitted to the
  baseline curve (:func:`fit_power_law`), flagged ``extrapolated``.
* :func:`multiplier`: ``m_r = t_base(b_r(T)) / T``.
* :func:`learning_signal`: ``(b_base(T) - b_r(T)) / T`` in bpb per token, and the curve
  ``-d b_r / d ln t`` at the geometric midpoints of the eval points.
* yield, goodput ``g = y·m`` and effective tokens ``tokens_in·g`` are one-liners in :func:`recipe_metrics`.
* :func:`bootstrap` resamples seeds with replacement (per recipe, baseline included) for CIs;
  :func:`ranking` calls an order between two recipes only where their CIs on bpb at ``T`` separate;
  :func:`decision_agreement` is the fraction of recipe pairs ordered the same at ``T/4`` and ``T``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PowerLaw:
    """``bpb(t) = a + c·t^-alpha``; ``rmse`` is the fit's residual in bpb."""

    a: float
    c: float
    alpha: float
    rmse: float

    def __call__(self, t: np.ndarray | float) -> np.ndarray | float:
        return self.a + self.c * np.power(t, -self.alpha)

    def inverse(self, b: float) -> float:
        """Tokens at which the law reaches ``b``; ``inf`` when ``b`` is at or below the asymptote ``a``."""
        if self.c <= 0 or b <= self.a:
            return math.inf
        return float(((b - self.a) / self.c) ** (-1.0 / self.alpha))


def _lsq_for_alpha(t: np.ndarray, b: np.ndarray, alpha: float) -> tuple[float, float, float]:
    # For a fixed exponent the law is linear in (a, c): solve exactly, return (a, c, sse).
    x = np.power(t, -alpha)
    design = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(design, b, rcond=None)
    resid = design @ coef - b
    return float(coef[0]), float(coef[1]), float(resid @ resid)


def fit_power_law(tokens: np.ndarray | list[float], bpb: np.ndarray | list[float]) -> PowerLaw:
    """Least-squares fit of ``a + c·t^-alpha``: exact linear solve for ``(a, c)`` at each ``alpha``,
    a log-spaced grid over ``alpha`` in [1e-3, 3], then golden-section refinement around the best.

    No scipy: the problem is one-dimensional once ``(a, c)`` are profiled out.
    """
    t = np.asarray(tokens, dtype=np.float64)
    b = np.asarray(bpb, dtype=np.float64)
    if len(t) < 3:
        raise ValueError(f"a power law needs >= 3 points, got {len(t)}")
    # Scale tokens so t^-alpha stays well conditioned; c is rescaled back at the end.
    scale = float(np.exp(np.mean(np.log(t))))
    ts = t / scale
    grid = np.geomspace(1e-3, 3.0, 400)
    sses = [_lsq_for_alpha(ts, b, a)[2] for a in grid]
    i = int(np.argmin(sses))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = _lsq_for_alpha(ts, b, x1)[2], _lsq_for_alpha(ts, b, x2)[2]
    for _ in range(200):
        if hi - lo < 1e-12:
            break
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = _lsq_for_alpha(ts, b, x1)[2]
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = _lsq_for_alpha(ts, b, x2)[2]
    alpha = (lo + hi) / 2
    a, c, sse = _lsq_for_alpha(ts, b, alpha)
    return PowerLaw(a=a, c=c * scale**alpha, alpha=alpha, rmse=math.sqrt(sse / len(t)))


def fit_tail(
    tokens: np.ndarray | list[float], bpb: np.ndarray | list[float], min_frac: float = 1 / 16
) -> PowerLaw:
    """:func:`fit_power_law` on the curve's tail (points at >= ``min_frac`` of the last token count, at
    least 3): early points sit on the flat start of training, which no power law describes."""
    t = np.asarray(tokens, dtype=np.float64)
    keep = t >= t[-1] * min_frac
    if keep.sum() < 3:
        keep = np.arange(len(t)) >= len(t) - 3
    return fit_power_law(t[keep], np.asarray(bpb, dtype=np.float64)[keep])


def tokens_to_reach(
    tokens: np.ndarray | list[float],
    bpb: np.ndarray | list[float],
    target: float,
    law: PowerLaw | None = None,
) -> tuple[float, bool]:
    """``t_base(target)``: tokens the curve ``(tokens, bpb)`` needs to reach bpb ``target``.

    Returns ``(tokens, extrapolated)``. Inside the curve's range the answer is the first crossing of the
    running-minimum envelope, interpolated linearly in log-token space. Outside it (better than the
    curve's best, or worse than its first point) the power law ``law`` (fitted to the tail here when
    ``None``), shifted to pass through the envelope's nearest end point, is inverted; the result is
    flagged.
    """
    t = np.asarray(tokens, dtype=np.float64)
    b = np.minimum.accumulate(np.asarray(bpb, dtype=np.float64))
    if b[0] >= target >= b[-1]:
        for i in range(len(t) - 1):
            if b[i] == target:
                return float(t[i]), False
            if b[i] > target == b[i + 1]:
                return float(t[i + 1]), False
            if b[i] > target > b[i + 1]:
                frac = (b[i] - target) / (b[i] - b[i + 1])
                return float(math.exp(math.log(t[i]) + frac * (math.log(t[i + 1]) - math.log(t[i])))), False
        return float(t[-1]), False
    law = law or fit_tail(t, np.asarray(bpb, dtype=np.float64))
    # Anchor the law at the envelope's nearest end (shift a), so t_base is continuous where the curve
    # stops and monotone beyond it: a law that fits the tail imperfectly can never turn "better than the
    # baseline's best" into m < 1.
    anchor = -1 if target < b[-1] else 0
    law = dataclasses.replace(law, a=law.a + float(b[anchor] - law(t[anchor])))
    return law.inverse(target), True


def multiplier(
    base_tokens: np.ndarray,
    base_bpb: np.ndarray,
    recipe_final_bpb: float,
    budget: float,
    law: PowerLaw | None = None,
) -> tuple[float, bool]:
    """``m_r = t_base(b_r(T)) / T`` and whether ``t_base`` was extrapolated."""
    t, extrapolated = tokens_to_reach(base_tokens, base_bpb, recipe_final_bpb, law)
    return t / budget, extrapolated


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


def decision_agreement(at_quarter: dict[str, float], at_full: dict[str, float]) -> float | None:
    """Fraction of recipe pairs ordered the same by bpb at ``T/4`` and at ``T`` (DataDecide's measure).
    ``None`` with fewer than two recipes. Exact ties count as agreeing only with ties."""
    recipes = sorted(at_full)
    pairs = list(itertools.combinations(recipes, 2))
    if not pairs:
        return None
    same = sum(np.sign(at_quarter[a] - at_quarter[b]) == np.sign(at_full[a] - at_full[b]) for a, b in pairs)
    return float(same) / len(pairs)


def finite_or_none(x: float) -> float | None:
    """JSON has no infinity: an unreachable target (beyond the power law's asymptote) is ``null``."""
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


class _BaselineLaws:
    """Power-law fits of resampled baseline curves, cached by seed multiset (few distinct ones)."""

    def __init__(self, tokens: np.ndarray, seeds_bpb: np.ndarray) -> None:
        self.tokens, self.seeds_bpb = tokens, seeds_bpb
        self.cache: dict[tuple[int, ...], PowerLaw] = {}

    def t_base(self, idx: np.ndarray, target: float) -> tuple[float, bool]:
        key = tuple(sorted(idx.tolist()))
        curve = self.seeds_bpb[list(key)].mean(axis=0)
        t, b = self.tokens, np.minimum.accumulate(curve)
        if b[0] >= target >= b[-1]:
            return tokens_to_reach(t, curve, target)
        if key not in self.cache:
            self.cache[key] = fit_tail(t, curve)
        return tokens_to_reach(t, curve, target, self.cache[key])


@dataclass(frozen=True)
class _Frame:
    """What every recipe is measured against: the eval points ``t`` (the last is the budget), the
    baseline's mean headline curve, its tail law and bootstrap draws, and the raw input's tokens."""

    t: np.ndarray
    budget: int
    base_mean: np.ndarray
    law: PowerLaw
    base_laws: _BaselineLaws
    base_draws: np.ndarray
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
    """One recipe's entry of the report, from its headline curves ``h`` (seeds x points) and its
    bootstrap draws of seeds (paired with the baseline's draws, index by index)."""
    mean_curve = h.mean(axis=0)
    final = float(mean_curve[-1])
    m, extrapolated = multiplier(f.t, f.base_mean, final, f.budget, f.law)
    m_boot, finals = [], []
    for k in range(len(draws)):
        rf = float(h[draws[k]].mean(axis=0)[-1])
        tb, _ = f.base_laws.t_base(f.base_draws[k], rf)
        m_boot.append(tb / f.budget)
        finals.append(rf)
    m_lo, m_hi = percentile_ci(m_boot, f.level)
    y = rc.tokens_kept / f.tokens_in if f.tokens_in else math.nan
    final_ci = percentile_ci(finals, f.level)
    tokens_per_dev_h = rc.tokens_trained / (rc.device_s / 3600) if rc.device_s > 0 else math.nan
    mids, slope = slope_curve(f.t, mean_curve)
    return {
        "multiplier": {
            "value": finite_or_none(m),
            "ci_low": finite_or_none(m_lo),
            "ci_high": finite_or_none(m_hi),
            "extrapolated": bool(extrapolated),
        },
        "learning_signal_per_token": learning_signal(float(f.base_mean[-1]), final, f.budget),
        "learning_signal_curve": {"tokens": mids, "neg_dbpb_dlnt": slope},
        "bpb_at_T": {"value": final, "ci_low": final_ci[0], "ci_high": final_ci[1]},
        "bpb_at_T_over_4": value_at(f.t, mean_curve, f.budget / 4),
        "yield": y,
        "goodput": {
            "value": finite_or_none(y * m),
            "ci": [finite_or_none(y * m_lo), finite_or_none(y * m_hi)],
        },
        "effective_tokens": finite_or_none(f.tokens_in * y * m),
        "tokens_in": int(f.tokens_in),
        "tokens_kept": int(rc.tokens_kept),
        "costs": {
            "proxy_device_s": rc.device_s,
            "proxy_tokens_trained": int(rc.tokens_trained),
            "effective_tokens_per_device_hour": finite_or_none(m * tokens_per_dev_h),
        },
        "curves": _eval_curves(rc, draws, f),
    }


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
    """Every DESIGN.md metric for every recipe, with bootstrap CIs over seeds (schema: curate.proxy.phase).

    ``tokens`` are the shared eval points (the last one is ``budget``). The baseline's ``tokens_kept`` is
    ``tokens_in``, the raw input's size in tokens.
    """
    if baseline not in recipes:
        raise ValueError(f"baseline recipe {baseline!r} has no curves; recipes: {', '.join(sorted(recipes))}")
    t = np.asarray(tokens, dtype=np.float64)
    if t[-1] != budget:
        raise ValueError(f"the last eval point ({t[-1]:g} tokens) must be the budget T={budget}")
    heads = {r: _headline(rc, headline) for r, rc in recipes.items()}
    base_mean = heads[baseline].mean(axis=0)
    law = fit_tail(t, base_mean)
    rng = np.random.default_rng(seed)
    draws = {r: bootstrap_indices(h.shape[0], n_boot, rng) for r, h in sorted(heads.items())}
    frame = _Frame(
        t=t,
        budget=budget,
        base_mean=base_mean,
        law=law,
        base_laws=_BaselineLaws(t, heads[baseline]),
        base_draws=draws[baseline],
        tokens_in=recipes[baseline].tokens_kept,
        level=level,
    )
    out = {r: _recipe_metrics(rc, heads[r], draws[r], frame) for r, rc in sorted(recipes.items())}
    final_mean = {r: e["bpb_at_T"]["value"] for r, e in out.items()}
    final_ci = {r: (e["bpb_at_T"]["ci_low"], e["bpb_at_T"]["ci_high"]) for r, e in out.items()}
    at_quarter = {r: e["bpb_at_T_over_4"] for r, e in out.items()}
    return {
        "recipes": out,
        "baseline": baseline,
        "baseline_power_law": {"a": law.a, "c": law.c, "alpha": law.alpha, "rmse": law.rmse},
        "ranking": ranking(final_mean, final_ci),
        "decision_agreement": decision_agreement(at_quarter, final_mean),
        "bootstrap": {"n_boot": n_boot, "level": level, "seed": seed},
    }
