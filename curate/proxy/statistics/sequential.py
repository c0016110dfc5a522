"""Seeds until decided: a group-sequential design for a measurement's decision pairs.

A fixed design trains every pair at the same seeds whether its answer is clear at three seeds or needs
twelve. Here a pair is looked at after each stage of seeds (``looks``, e.g. 3, 4, 6, 8) and stops as soon
as it is decided: *called* when its z statistic crosses the efficacy boundary, *futile* (not called: its
effect is below the one worth detecting) when it falls inside the futility boundary; at the last look it is
one or the other.

* The statistic of a pair at ``n`` seeds is ``z = mean(d) sqrt(n) / sd``, ``sd`` the pair's spread known
  from the pipeline's calibration (pooled with the run's own: :func:`curate.proxy.statistics.gate.pooled`).
* The family's error (any false call among the ``m`` pairs) is held at ``alpha`` by giving each pair
  ``alpha / m`` (Bonferroni; the fixed design it is compared with uses the same split).
* Efficacy boundaries spend each pair's alpha over the looks with Lan-DeMets' O'Brien-Fleming function,
  ``alpha(t) = 4 - 4 Phi(z_{1 - a/4} / sqrt(t))`` (two-sided, information ``t = n / n_max``): little is
  spent early, so the last boundary stays near the fixed design's.
* Futility boundaries spend the type II error ``beta`` under the effect worth detecting (``effect``, in
  units of sd), evenly over the looks (Pocock-type, ``beta ln(1 + (e - 1) t)``): a pair stops for
  futility at look k when a pair with that effect would have fallen there with that probability. They
  are non-binding: the efficacy boundaries are computed as if the design never stopped for futility, so
  stopping for it can only lower the error.
* :func:`looks_for`: the looks beside a fixed design of ``n`` seeds: at most 1.2 n seeds, looked at after
  25, 40, 55, 70, 85 and 100% of them (from 2 seeds), which keeps the power within two points of the fixed
  design's at about two thirds of its seeds (``benchmarks/sequential_design.py``).
* Boundaries come from simulated paths (``paths`` standard normal increments per seed, a fixed seed):
  deterministic, and exact to Monte Carlo error (~1e-3 on a boundary with 400,000 paths).

:func:`simulate` draws whole families of pairs with given effects and reports the family error, the
power and the expected seeds per decision, beside the fixed design at :func:`fixed_seeds`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

PATHS = 400_000


@dataclass(frozen=True)
class Design:
    """A group-sequential design: the seeds at each look, each pair's two-sided level (``alpha``, the
    family's divided by its pairs), the power aimed at for an effect of ``effect`` standard deviations,
    and its boundaries on |z| (``efficacy``: call at or beyond; ``futility``: stop, not called, below)."""

    looks: tuple[int, ...]
    alpha: float
    power: float
    effect: float
    efficacy: tuple[float, ...] = field(default=())
    futility: tuple[float, ...] = field(default=())

    def decide(self, k: int, z: float) -> str | None:
        """At look ``k`` with statistic ``z``: ``better`` / ``worse`` (lower / higher bpb: ``z`` is the
        mean difference, recipe minus baseline, over its standard error), ``futile``, or ``None``
        (take the next look's seeds)."""
        if abs(z) >= self.efficacy[k]:
            return "better" if z < 0 else "worse"
        if abs(z) < self.futility[k] or k == len(self.looks) - 1:
            return "futile"
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "looks": list(self.looks),
            "alpha_per_pair": self.alpha,
            "power": self.power,
            "effect_sd": self.effect,
            "efficacy_z": [round(c, 4) for c in self.efficacy],
            "futility_z": [round(f, 4) for f in self.futility],
            "method": "group-sequential z tests on the pair's calibrated spread; efficacy: Lan-DeMets "
            "O'Brien-Fleming alpha spending, two-sided; futility: the same spending of beta under the "
            "effect worth detecting, non-binding; boundaries from simulated paths",
        }


def _spend(t: np.ndarray, a: float) -> np.ndarray:
    """Lan-DeMets' O'Brien-Fleming spending of a two-sided ``a`` (``a / 2`` a side) at information fractions
    ``t``: ``4 - 4 Phi(z_{1 - a/4} / sqrt(t))``, which is ``a`` at ``t = 1``."""
    return 4 - 4 * sps.norm.cdf(sps.norm.ppf(1 - a / 4) / np.sqrt(t))


def _paths(looks: tuple[int, ...], paths: int, seed: int) -> np.ndarray:
    """Standardized partial sums at the looks, ``(paths, looks)``: ``S_n / sqrt(n)`` of N(0, 1) seeds."""
    rng = np.random.default_rng(seed)
    steps = np.diff(np.concatenate([[0], np.asarray(looks)]))
    inc = rng.standard_normal((paths, len(looks))) * np.sqrt(steps)
    return np.cumsum(inc, axis=1) / np.sqrt(np.asarray(looks))


def design(
    looks: list[int] | tuple[int, ...],
    *,
    alpha: float,
    power: float,
    effect: float,
    paths: int = PATHS,
    seed: int = 0,
) -> Design:
    """The boundaries of a design with these ``looks`` at per-pair level ``alpha``, aiming at ``power``
    for an effect of ``effect`` standard deviations (see the module docstring)."""
    looks = tuple(int(n) for n in looks)
    if not looks or any(b <= a for a, b in itertools.pairwise(looks)) or looks[0] < 2:
        raise ValueError(f"looks: expected increasing seed counts from 2 up, got {list(looks)}")
    t = np.asarray(looks, dtype=np.float64) / looks[-1]
    z0 = _paths(looks, paths, seed)
    spent = _spend(t, alpha)
    alive = np.ones(paths, dtype=bool)
    efficacy: list[float] = []
    prev = 0.0
    for k in range(len(looks)):
        want = (spent[k] - prev) * paths  # paths to cross first here
        a = np.sort(np.abs(z0[alive, k]))[::-1]
        c = float(a[min(round(want), len(a)) - 1]) if want >= 1 else float(a[0]) + 1e-9
        efficacy.append(max(c, 0.0))
        alive &= np.abs(z0[:, k]) < efficacy[-1]
        prev = spent[k]
    # futility under the alternative: drift effect * sqrt(n)
    z1 = z0 + effect * np.sqrt(np.asarray(looks, dtype=np.float64))
    beta = 1 - power
    b_spent = beta * np.log1p((math.e - 1) * t)  # Pocock-type: futility spent evenly over the looks
    alive = np.ones(paths, dtype=bool)
    futility: list[float] = []
    prev = 0.0
    for k in range(len(looks)):
        if k == len(looks) - 1:
            futility.append(efficacy[k])
            break
        alive &= np.abs(z1[:, k]) < efficacy[k]  # those called already are not available to stop
        want = (b_spent[k] - prev) * paths
        a = np.sort(np.abs(z1[alive, k]))
        # more to stop than are left (an effect so large most paths were called already): all of them
        f = float(a[min(round(want), len(a)) - 1]) if want >= 1 and len(a) else 0.0
        futility.append(min(f, efficacy[k]))
        alive &= np.abs(z1[:, k]) >= futility[-1]
        prev = b_spent[k]
    return Design(looks, alpha, power, effect, tuple(efficacy), tuple(futility))


def looks_for(
    n_fixed: int,
    *,
    ratio: float = 1.2,
    fractions: tuple[float, ...] = (0.25, 0.4, 0.55, 0.7, 0.85, 1.0),
    first: int = 2,
) -> tuple[int, ...]:
    """The looks of a design that stands beside a fixed design of ``n_fixed`` seeds: at most ``ratio``
    times its seeds (which buys back the power early stopping costs), looked at after these
    ``fractions`` of them, never before ``first`` seeds."""
    n_max = max(first, math.ceil(ratio * n_fixed))
    return tuple(sorted({max(first, round(f * n_max)) for f in fractions}))


def fixed_power(n: int, *, alpha: float, effect: float) -> float:
    """The power of the fixed design at ``n`` seeds: a two-sided z test at ``alpha`` calls an effect of
    ``effect`` standard deviations in its direction."""
    return float(sps.norm.sf(sps.norm.ppf(1 - alpha / 2) - effect * math.sqrt(n)))


def fixed_seeds(*, alpha: float, power: float, effect: float, max_seeds: int = 1000) -> int:
    """The seeds a fixed design needs for ``power`` at an effect of ``effect`` standard deviations, two-
    sided level ``alpha``, with the spread known (the same z test as the sequential design)."""
    for n in range(2, max_seeds + 1):
        if fixed_power(n, alpha=alpha, effect=effect) >= power:
            return n
    raise ValueError(f"effect {effect} sd needs more than {max_seeds} seeds")


def outcomes(d: Design, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair's outcome (``1``: called worse, ``-1``: called better, ``0``: futile) and the seeds it
    used, from its statistic at every look (``z``: ``(..., looks)``)."""
    shape = z.shape[:-1]
    out = np.zeros(shape, dtype=np.int8)
    used = np.full(shape, d.looks[-1], dtype=np.int64)
    open_ = np.ones(shape, dtype=bool)
    for k, n in enumerate(d.looks):
        zk = z[..., k]
        call = open_ & (np.abs(zk) >= d.efficacy[k])
        stop = open_ & ~call & ((np.abs(zk) < d.futility[k]) | (k == len(d.looks) - 1))
        out[call] = np.sign(zk[call]).astype(np.int8)
        used[call | stop] = n
        open_ &= ~(call | stop)
    return out, used


def simulate(
    d: Design, effects: list[float], *, draws: int = 10_000, seed: int = 1, spread: float = 1.0
) -> dict[str, Any]:
    """``draws`` families of pairs with true ``effects`` (in standard deviations; 0: no effect; the sign
    is the bpb difference's: negative is better), each pair's seeds drawn once and read both by the
    design and by the fixed design at :func:`fixed_seeds`: the family error (any call of a pair with no
    effect, or of the wrong sign), each effect's power (a call in its direction), the seeds per decision,
    and the expected CPU of the design against the fixed one (``cpu_ratio``: seeds trained, all pairs).
    ``spread``: the pairs' true spread over the one the boundaries assume (1: calibrated exactly)."""
    rng = np.random.default_rng(seed)
    eff = np.asarray(effects, dtype=np.float64)
    n_fix = fixed_seeds(alpha=d.alpha, power=d.power, effect=d.effect)
    n_max = max(d.looks[-1], n_fix)
    seeds = spread * rng.standard_normal((draws, len(eff), n_max)) + eff[None, :, None]
    sums = np.cumsum(seeds, axis=2)
    looks = np.asarray(d.looks)
    z = sums[:, :, looks - 1] / np.sqrt(looks)
    out, used = outcomes(d, z)
    z_fix = sums[:, :, n_fix - 1] / math.sqrt(n_fix)
    out_fix = np.where(np.abs(z_fix) >= sps.norm.ppf(1 - d.alpha / 2), np.sign(z_fix), 0).astype(np.int8)
    right = np.sign(eff).astype(np.int8)

    def family_error(o: np.ndarray) -> float:
        """Draws with any call of a pair with no effect (``right`` 0) or of the wrong sign."""
        return float(((o != 0) & (o != right[None, :])).any(axis=1).mean())

    with_effect = [j for j in range(len(eff)) if eff[j] != 0]
    return {
        "draws": draws,
        "effects_sd": eff.tolist(),
        "family_error": family_error(out),
        "family_error_fixed": family_error(out_fix),
        "power": [float((out[:, j] == right[j]).mean()) for j in with_effect],
        "power_fixed": [float((out_fix[:, j] == right[j]).mean()) for j in with_effect],
        "expected_seeds": used.mean(axis=0).tolist(),
        "fixed_seeds": n_fix,
        "cpu_ratio": float(used.sum(axis=1).mean()) / (n_fix * len(eff)),
    }
