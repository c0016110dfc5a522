"""The decision gate's statistics: equivalence of the null control with raw (TOST against a stated margin,
on a spread shrunk toward the pipeline's calibrated noise), a control built worse against the null, and the
power each check has at the run's own noise.

* :class:`Noise`: a paired difference's spread per seed, with its degrees of freedom and where it was
  measured (a prior from fresh calibration seeds), and :func:`pooled`, the run's own spread of a pair
  shrunk toward it (``(df_0 s_0^2 + df s^2) / (df_0 + df)``, df ``df_0 + df``).
* :func:`tost`: two one-sided tests of ``|mean| < margin`` at level ``alpha`` (equivalent exactly when the
  ``1 - 2 alpha`` t-interval lies inside ``(-margin, margin)``); the null passes only then.
* :func:`supported_margin`: the smallest margin a null with no bias passes with probability
  ``1 - miss`` at ``n`` seeds and spread ``sd`` (``(t_{1-alpha, df} + z_{1-miss/2}) sd / sqrt(n)``): the bias
  the run can rule out, which a pipeline states as ``proxy.null_margin``.
* :func:`power_z`: the chance the z test at 5% (two-sided) on a known spread calls ``delta`` at ``n`` seeds,
  ``Phi(delta sqrt(n) / sd - z_.975)``: a control's power, stated from its calibrated dose.
* :func:`power_one_sided`: the chance a paired t-test at ``n`` seeds calls an effect ``delta`` in its
  direction (two-sided level ``level``), from the noncentral t (a control's power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from curate.core.params import bounds


@dataclass(frozen=True)
class Noise:
    """A paired difference's spread per seed (``sd``, bpb), with ``dof`` degrees of freedom, and where it
    was measured (``source``: the seeds and the file)."""

    sd: float
    dof: int
    source: str = ""
    effect: float | None = None  # the pair's mean difference there (a control's calibrated spread: its dose)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sd": self.sd, "dof": self.dof, "source": self.source}
        return out if self.effect is None else {**out, "effect": self.effect}


@dataclass(frozen=True)
class NoiseSpec:
    """A :class:`Noise` as a pipeline writes it (``proxy.noise``, a control's calibrated spread): a pair's
    per-seed spread measured on fresh calibration seeds, and (``effect``) its mean difference there (a
    control's dose in bpb, from which the run states the control's power at its own seeds)."""

    sd: float = field(metadata=bounds(0, lo_open=True))
    dof: int = field(metadata=bounds(1))
    source: str = ""
    effect: float | None = None

    def noise(self) -> Noise:
        return Noise(self.sd, self.dof, self.source, self.effect)


def pooled(diffs: np.ndarray | list[float], prior: Noise | None) -> Noise:
    """The spread of one pair's per-seed differences ``diffs`` (df n - 1), shrunk toward ``prior`` by
    degrees of freedom; without a prior, the pair's own."""
    d = np.asarray(diffs, dtype=np.float64)
    df = len(d) - 1
    s2 = float(d.var(ddof=1)) if df > 0 else 0.0
    if prior is None:
        return Noise(math.sqrt(s2), max(df, 0), "this run's pair")
    total = prior.dof + max(df, 0)
    return Noise(  # the run's pair says nothing new of the prior's effect: not carried
        math.sqrt((prior.dof * prior.sd**2 + max(df, 0) * s2) / total),
        total,
        f"this run's pair (df {max(df, 0)}) pooled with {prior.source or 'the prior'} (df {prior.dof})",
    )


@dataclass(frozen=True)
class Equivalence:
    """A TOST: the mean difference, its ``1 - 2 alpha`` interval (on ``noise``), the margin, and whether
    the interval lies inside ``(-margin, margin)`` (``equivalent``); ``bound``: the largest bias the
    interval leaves (``max(|low|, |high|)``)."""

    value: float
    ci_low: float
    ci_high: float
    margin: float
    alpha: float
    noise: Noise
    n: int

    @property
    def equivalent(self) -> bool:
        return -self.margin < self.ci_low and self.ci_high < self.margin

    @property
    def bound(self) -> float:
        return max(abs(self.ci_low), abs(self.ci_high))

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "level": 1 - 2 * self.alpha,
            "margin": self.margin,
            "equivalent": self.equivalent,
            "bound": self.bound,
            "n": self.n,
            "noise": self.noise.as_dict(),
            "method": f"two one-sided t-tests at {self.alpha:g} each (the {1 - 2 * self.alpha:.0%} t-interval "
            f"inside +-margin), on the spread {self.noise.source}",
        }


def tost(
    diffs: np.ndarray | list[float], margin: float, *, prior: Noise | None = None, alpha: float = 0.05
) -> Equivalence:
    """Two one-sided tests of ``|mean(diffs)| < margin`` at ``alpha`` each, on the pair's spread pooled
    with ``prior`` (:func:`pooled`). With no degree of freedom at all the interval is infinite."""
    d = np.asarray(diffs, dtype=np.float64)
    n = len(d)
    noise = pooled(d, prior)
    mean = float(d.mean())
    if noise.dof < 1 or n < 1:
        return Equivalence(mean, -math.inf, math.inf, margin, alpha, noise, n)
    half = float(sps.t.ppf(1 - alpha, noise.dof)) * noise.sd / math.sqrt(n)
    return Equivalence(mean, mean - half, mean + half, margin, alpha, noise, n)


def supported_margin(sd: float, n: int, dof: int, *, alpha: float = 0.05, miss: float = 0.025) -> float:
    """The smallest TOST margin a null with no bias passes with probability ``1 - miss`` at ``n`` seeds
    and per-seed spread ``sd`` (known to ``dof`` degrees of freedom): ``(t_{1-alpha,dof} + z_{1-miss/2})
    sd / sqrt(n)`` (the mean may miss on either side)."""
    return (float(sps.t.ppf(1 - alpha, dof)) + float(sps.norm.ppf(1 - miss / 2))) * sd / math.sqrt(n)


def z_stat(diffs: np.ndarray | list[float], sd: float) -> float:
    """``mean(d) sqrt(n) / sd``: the z statistic of per-seed differences on a known (pooled) spread, the
    rule the sequential calls and a control's z test read; with no spread, infinite in the mean's sign."""
    d = np.asarray(diffs, dtype=np.float64)
    return float(d.mean()) * math.sqrt(len(d)) / sd if sd > 0 else math.copysign(math.inf, float(d.mean()))


def power_one_sided(delta: float, sd: float, n: int, *, level: float = 0.95) -> float:
    """The chance the two-sided paired t-test at ``level`` over ``n`` seeds calls a true difference
    ``delta`` in its own direction, per-seed spread ``sd``: the noncentral t with df ``n - 1`` and
    noncentrality ``delta sqrt(n) / sd`` beyond the ``(1 + level) / 2`` quantile."""
    if n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if delta else 0.0
    df = n - 1
    crit = float(sps.t.ppf(0.5 + level / 2, df))
    return float(sps.nct.sf(crit, df, abs(delta) * math.sqrt(n) / sd))


def power_z(delta: float, sd: float, n: int) -> float:
    """The chance the two-sided z test at 5% on spread ``sd`` calls a true difference ``delta`` in its own
    direction at ``n`` seeds (a control's rule with its calibrated spread)."""
    if n < 1:
        return 0.0
    if sd <= 0:
        return 1.0 if delta else 0.0
    return float(sps.norm.cdf(abs(delta) * math.sqrt(n) / sd - sps.norm.ppf(0.975)))
