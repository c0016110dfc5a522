"""Paired statistics over seeds, power, and decision accuracy: the numbers a goodput verdict rests on.

Seed ``s`` fixes a proxy run's model initialisation and its data-order RNG in every recipe
(:class:`curate.instrument.train.Run`, :class:`curate.instrument.streams.DocStream`), so the runs of two recipes
with the same seed are *paired*: their difference cancels the part of the seed-to-seed spread that
both share (an unlucky initialisation is unlucky for both). Everything here is numpy and ``math``
only (no scipy), deterministic, and tested against published table values.

* :func:`t_quantile`: Student's t quantile by bisection on a Simpson-integrated density.
* :func:`paired_interval`: mean of per-seed differences with a two-sided t-interval (df = n - 1).
* :func:`mde`: the minimum detectable difference at a given seed count, spread, level and power
  (``(t_{1-α/2} + t_{power}) · sd / √n``, the standard two-sided paired design).
* :func:`seeds_needed`: the smallest seed count whose MDE reaches a given difference.
* :func:`decision_accuracy`: DataDecide's measure, the fraction of recipe pairs that a cheaper point
  orders the same way as the reference point.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

METHOD = "paired t-interval over seeds (per-seed differences; recipes: residual variance pooled over recipes x seeds)"


def _t_pdf(x: np.ndarray, df: int) -> np.ndarray:
    lg = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return np.exp(lg - (df + 1) / 2 * np.log1p(x * x / df))


def _t_cdf_upper_half(x: float, df: int, n: int = 4000) -> float:
    """P(0 <= T <= x) by composite Simpson's rule (x >= 0)."""
    if x <= 0:
        return 0.0
    grid = np.linspace(0.0, x, n + 1)
    y = _t_pdf(grid, df)
    return float((x / n) / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0.5 < p < 1``), to ~1e-6.

    >>> round(t_quantile(0.975, 2), 3)
    4.303
    """
    if not 0.5 < p < 1:
        raise ValueError(f"t_quantile: p={p} must be in (0.5, 1)")
    if df < 1:
        raise ValueError(f"t_quantile: df={df} must be >= 1")
    target = p - 0.5
    lo, hi = 0.0, 1.0
    while _t_cdf_upper_half(hi, df) < target:
        hi *= 2
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_upper_half(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class Interval:
    """A mean of per-seed differences with its two-sided interval (``None`` bounds with one seed)."""

    value: float
    ci_low: float | None
    ci_high: float | None
    n: int
    sd: float | None

    def excludes(self, x: float = 0.0) -> bool:
        """Whether the interval excludes ``x`` (never with one seed)."""
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > x or self.ci_high < x

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": self.n,
            "sd": self.sd,
        }


def paired_interval(diffs: np.ndarray | list[float], level: float = 0.95) -> Interval:
    """Mean of per-seed differences ``diffs`` and its t-interval at ``level`` (df = n - 1).

    With one seed the spread is unknown: the bounds are ``None`` and nothing can be called.
    """
    d = np.asarray(diffs, dtype=np.float64)
    n = len(d)
    if n == 0:
        raise ValueError("paired_interval: no differences")
    mean = float(d.mean())
    if n < 2:
        return Interval(mean, None, None, n, None)
    sd = float(d.std(ddof=1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, sd)


def mde(sd: float, n: int, *, level: float = 0.95, power: float = 0.8, dof: int | None = None) -> float:
    """Minimum detectable mean difference of a two-sided test of a paired difference with ``n`` seeds and
    per-seed difference spread ``sd``: ``(t_{(1+level)/2, df} + t_{power, df}) · sd / √n`` with
    ``df = dof`` (a pooled estimate's) or ``n - 1``; ``inf`` for n < 2."""
    df = dof if dof else n - 1
    if n < 2 or df < 1 or not math.isfinite(sd):
        return math.inf
    return (t_quantile(0.5 + level / 2, df) + t_quantile(power, df)) * sd / math.sqrt(n)


def seeds_needed(
    effect: float,
    sd: float,
    *,
    level: float = 0.95,
    power: float = 0.8,
    max_seeds: int = 1000,
    members: int = 2,
) -> int | None:
    """The smallest seed count ``n >= 2`` whose :func:`mde` is at most ``|effect|`` (with the pooled
    ``df = (members - 1)(n - 1)``; ``members = 2``: the plain paired test); ``None`` past ``max_seeds``
    (or for a zero effect)."""
    effect = abs(effect)
    if effect == 0 or not math.isfinite(effect):
        return None
    if sd == 0:
        return 2
    for n in range(2, max_seeds + 1):
        if mde(sd, n, level=level, power=power, dof=(members - 1) * (n - 1)) <= effect:
            return n
    return None


def pooled_interval(diffs: np.ndarray | list[float], sd: float, dof: int, level: float = 0.95) -> Interval:
    """Mean of per-seed differences with the interval of a pooled spread: ``mean +- t_{dof} · sd / √n``
    (``sd``: of one paired difference, estimated with ``dof`` degrees of freedom elsewhere)."""
    d = np.asarray(diffs, dtype=np.float64)
    n = len(d)
    mean = float(d.mean())
    if n < 2 or dof < 1:
        return Interval(mean, None, None, n, None)
    half = t_quantile(0.5 + level / 2, dof) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, sd)


def pooled_sd(diff_sets: list[np.ndarray]) -> tuple[float | None, int]:
    """Pooled standard deviation of several sets of per-seed differences (each centred on its own
    mean) and its degrees of freedom; ``None`` when no set has two seeds."""
    ss, dof = 0.0, 0
    for d in diff_sets:
        d = np.asarray(d, dtype=np.float64)
        if len(d) >= 2:
            ss += float(((d - d.mean()) ** 2).sum())
            dof += len(d) - 1
    return (math.sqrt(ss / dof), dof) if dof else (None, 0)


def decision_accuracy(
    small: dict[str, float], reference: dict[str, float], pairs: list[tuple[str, str]] | None = None
) -> float | None:
    """DataDecide's decision accuracy: the fraction of recipe pairs (over recipes scored at both
    points; ``pairs``: only these, e.g. the pairs the reference point called) that ``small`` orders the
    same way as ``reference`` (lower is better). An exact tie agrees only with a tie. ``None`` without a
    pair to compare."""
    common = sorted(set(small) & set(reference))
    if pairs is None:
        pairs = list(itertools.combinations(common, 2))
    else:
        pairs = [(a, b) for a, b in pairs if a in common and b in common]
    if not pairs:
        return None
    same = sum(np.sign(small[a] - small[b]) == np.sign(reference[a] - reference[b]) for a, b in pairs)
    return float(same) / len(pairs)
