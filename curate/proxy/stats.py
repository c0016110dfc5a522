"""Paired statistics over seeds, power, and decision accuracy: the numbers a goodput verdict rests on.

Seed ``s`` fixes a proxy run's model initialisation and its data-order RNG in every recipe
(:class:`curate.instrument.train.Run`, :class:`curate.instrument.streams.DocStream`), so the runs of two recipes
with the same seed are *paired*: their difference cancels the part of the seed-to-seed spread that
both share (an unlucky initialisation is unlucky for both). Everything here is numpy and ``math``
only (no scipy), deterministic, and tested against published table values.

* :func:`t_quantile`: Student's t quantile by bisection on a Simpson-integrated density.
* :func:`paired_interval`: mean of per-seed differences with a two-sided t-interval (df = n - 1).
* :func:`paired_p`: the two-sided p-value of the same paired t (closed form for integer df).
* :func:`holm`: Holm's step-down adjustment of a family of p-values.
* :func:`mde`: the minimum detectable difference at a given seed count, spread, level and power
  (``(t_{1-α/2} + t_{power}) · sd / √n``, the standard two-sided paired design).
* :func:`seeds_needed`: the smallest seed count whose MDE reaches a given difference.
* :func:`decision_accuracy`: DataDecide's measure, the fraction of recipe pairs that a cheaper point
  orders the same way as the reference point; :func:`decision_accuracy_interval` its bootstrap over seeds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

METHOD = "paired t-interval over seeds (the pair's own per-seed differences, df = n - 1)"


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


def mde(sd: float, n: int, *, level: float = 0.95, power: float = 0.8) -> float:
    """Minimum detectable mean difference of a two-sided paired t-test with ``n`` seeds and per-seed
    difference spread ``sd``: ``(t_{(1+level)/2, n-1} + t_{power, n-1}) · sd / √n``; ``inf`` for n < 2."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    df = n - 1
    return (t_quantile(0.5 + level / 2, df) + t_quantile(power, df)) * sd / math.sqrt(n)


def seeds_needed(
    effect: float, sd: float, *, level: float = 0.95, power: float = 0.8, max_seeds: int = 1000
) -> int | None:
    """The smallest seed count ``n >= 2`` whose :func:`mde` (df = n - 1, the pair's own t) is at most
    ``|effect|``; ``None`` past ``max_seeds`` (or for a zero effect)."""
    effect = abs(effect)
    if effect == 0 or not math.isfinite(effect):
        return None
    if sd == 0:
        return 2
    for n in range(2, max_seeds + 1):
        if mde(sd, n, level=level, power=power) <= effect:
            return n
    return None


def t_two_sided_p(t: float, df: int) -> float:
    """``P(|T| >= |t|)`` for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4, exact):
    with ``θ = atan(|t| / √df)``, ``P(|T| < |t|)`` is ``sin θ · Σ`` over even powers of ``cos θ`` (even df)
    or ``(2/π)(θ + sin θ · Σ)`` over odd powers (odd df).

    >>> round(t_two_sided_p(4.302653, 2), 6)
    0.05
    """
    if df < 1:
        raise ValueError(f"t_two_sided_p: df={df} must be >= 1")
    if math.isinf(t):
        return 0.0
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df, 2):  # (1·3···(k-1)) / (2·4···k) · cos^k θ
            term *= (k - 1) / k * c2
            total += term
        inside = s * total
    else:
        term = total = 0.0
        if df > 1:
            term = total = math.cos(theta)
            for k in range(3, df - 1, 2):  # (2·4···(k-1)) / (1·3···k) · cos^k θ
                term *= (k - 1) / k * c2
                total += term
        inside = 2 / math.pi * (theta + s * total)
    return min(1.0, max(0.0, 1.0 - inside))


def paired_p(diffs: np.ndarray | list[float]) -> float | None:
    """The two-sided p-value of the paired t-test of mean zero over per-seed differences (df = n - 1);
    ``None`` with one seed. A zero spread gives 0 for a non-zero mean and 1 for a zero one."""
    d = np.asarray(diffs, dtype=np.float64)
    n = len(d)
    if n < 2:
        return None
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 0.0 if mean != 0 else 1.0
    return t_two_sided_p(mean / (sd / math.sqrt(n)), n - 1)


def holm(p: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of a family: sorted ascending, ``p_(i)`` becomes
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a member is rejected at level α exactly when its adjusted
    p is at most α (ties broken by name, which does not change the adjusted values)."""
    order = sorted(p, key=lambda k: (p[k], k))
    m, out, running = len(order), {}, 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[k]))
        out[k] = running
    return out


def holm_calls(
    diffs: dict[str, np.ndarray], baseline: str, *, alpha: float = 0.05, level: float = 0.95
) -> dict[str, object]:
    """``multiple_comparisons`` of ``goodput.json``: each recipe's per-seed differences against
    ``baseline`` (``diffs``, the family) by its paired t (two-sided, df = n - 1, :func:`paired_p`), Holm's
    step-down adjustment over the family at ``alpha``; a recipe is called (``better`` / ``worse`` by the
    sign of its mean difference: lower bpb is better) when its adjusted p is at most ``alpha``.
    ``call_unadjusted``: its own ``level`` interval (:func:`paired_interval`) excludes 0 or not."""
    raw_p = {r: paired_p(d) for r, d in diffs.items()}
    adj = holm({r: p for r, p in raw_p.items() if p is not None})
    pairs = {}
    for r, d in diffs.items():
        iv = paired_interval(d, level)
        side = "better" if iv.value < 0 else "worse"
        pairs[r] = {
            "p": raw_p[r],
            "p_holm": adj.get(r),
            "call": side if r in adj and adj[r] <= alpha else "not_called",
            "call_unadjusted": side if iv.excludes(0.0) else "not_called",
        }
    return {
        "method": "Holm",
        "alpha": alpha,
        "family": list(diffs),
        "pairs": pairs,
        "note": f"each of the {len(diffs)} non-control recipes against {baseline} by its paired t-test (two-sided, "
        "df = seeds - 1), Holm's step-down adjustment over them: the chance of any false call in the family is "
        f"at most {alpha:g}; the decision uses these calls",
    }


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


def decision_accuracy_interval(
    small: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    pairs: list[tuple[str, str]],
    *,
    draws: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> list[float] | None:
    """A percentile bootstrap interval of :func:`decision_accuracy` over seeds: ``small`` and ``reference``
    map each recipe to its per-seed final bpb (one value per seed, in seed order). Each draw resamples the
    seeds of each point with replacement (the same resampled seeds for every recipe of a point: seeds are
    paired within a point, independent across points) and scores the fixed ``pairs``. ``None`` without a
    pair or with fewer than two seeds at either point. Deterministic (``seed``)."""
    common = sorted(set(small) & set(reference))
    pairs = [(a, b) for a, b in pairs if a in common and b in common]
    n_s = min((len(small[r]) for r in common), default=0)
    n_r = min((len(reference[r]) for r in common), default=0)
    if not pairs or n_s < 2 or n_r < 2:
        return None
    rng = np.random.default_rng(seed)
    s_mat = np.array([np.asarray(small[r], dtype=float)[:n_s] for r in common])
    r_mat = np.array([np.asarray(reference[r], dtype=float)[:n_r] for r in common])
    idx = {r: i for i, r in enumerate(common)}
    ia = np.array([idx[a] for a, _ in pairs])
    ib = np.array([idx[b] for _, b in pairs])
    s_means = s_mat[:, rng.integers(0, n_s, (draws, n_s))].mean(axis=2)  # (recipes, draws)
    r_means = r_mat[:, rng.integers(0, n_r, (draws, n_r))].mean(axis=2)
    same = np.sign(s_means[ia] - s_means[ib]) == np.sign(r_means[ia] - r_means[ib])  # (pairs, draws)
    acc = same.mean(axis=0)
    tail = (1 - level) / 2
    return [float(np.quantile(acc, tail)), float(np.quantile(acc, 1 - tail))]
