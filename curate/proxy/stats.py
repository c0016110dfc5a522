"""Paired statistics over seeds, power and decision accuracy: the numbers a goodput verdict rests on, each
one call of ``scipy.stats`` or ``statsmodels``.

Seed ``s`` fixes a proxy run's model initialisation and its data-order RNG in every recipe
(:class:`curate.instrument.train.Run`, :class:`curate.instrument.streams.DocStream`), so the runs of two recipes
with the same seed are *paired*: their difference cancels the part of the seed-to-seed spread that
both share (an unlucky initialisation is unlucky for both). Every distribution, test and adjustment a
verdict reads is a library call here, under a name that says what its result means for the measurement.
Deterministic throughout (every resampling takes a seed).

* :func:`t_quantile`: Student's t quantile (``scipy.stats.t.ppf``).
* :func:`paired_interval`: mean of per-seed differences with a two-sided t-interval (df = n - 1).
* :func:`paired_p`: the two-sided p-value of the same paired t (``scipy.stats.ttest_1samp`` of the
  differences against 0, which is ``ttest_rel`` of the two recipes).
* :func:`holm`: Holm's step-down adjustment of a family of p-values
  (``statsmodels.stats.multitest.multipletests(method="holm")``); :func:`holm_calls` the decision's calls.
* :func:`mde`: the minimum detectable difference at a given seed count, spread, level and power
  (``(t_{1-α/2} + t_{power}) · sd / √n``, the standard two-sided paired design).
* :func:`seeds_needed`: the smallest seed count whose MDE reaches a given difference.
* :func:`proportion_interval`: the exact (Clopper-Pearson) interval of a rate such as coverage
  (``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``).
* :func:`decision_accuracy`: the plain fraction of recipe pairs that one ranking orders the same way as
  another (the ladder's ``decision_agreement``). The ladder's decision accuracy, weighted, with its
  cluster bootstrap, noise ceiling and chance, is :mod:`curate.proxy.statistics.transfer`.

The mixture regression's rank correlation and its bootstrap (``scipy.stats.spearmanr``, ``bootstrap``)
live beside the regression in :mod:`curate.proxy.mixfit` (both are leaves of ``curate.proxy``).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

METHOD = "paired t-interval over seeds (the pair's own per-seed differences, df = n - 1)"


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0.5 < p < 1``):
    ``scipy.stats.t.ppf``.

    >>> round(t_quantile(0.975, 2), 3)
    4.303
    """
    if not 0.5 < p < 1:
        raise ValueError(f"t_quantile: p={p} must be in (0.5, 1)")
    if df < 1:
        raise ValueError(f"t_quantile: df={df} must be >= 1")
    return float(st.t.ppf(p, df))


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
    """Mean of per-seed differences ``diffs`` and its t-interval at ``level``:
    ``mean ± t_{(1+level)/2, n-1} · sd / √n`` (sd with ddof 1).

    With one seed the spread is unknown: the bounds are ``None`` and nothing can be called. A zero spread
    gives the point ``[mean, mean]``.
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
    """Minimum detectable mean difference of a two-sided paired t-test with ``n`` seeds and per-seed
    difference spread ``sd``: ``(t_{(1+level)/2, df} + t_{power, df}) · sd / √n``, df the spread's degrees
    of freedom (``dof``; default the pair's own, n - 1); ``inf`` for n < 2."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    df = dof if dof is not None else n - 1
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


def paired_p(diffs: np.ndarray | list[float]) -> float | None:
    """The two-sided p-value of the paired t-test of mean zero over per-seed differences (df = n - 1,
    ``scipy.stats.ttest_1samp``); ``None`` with one seed. Differences all equal (no spread: t is undefined)
    give 0 when they are not zero and 1 when they are."""
    d = np.asarray(diffs, dtype=np.float64)
    if len(d) < 2:
        return None
    if np.ptp(d) == 0:
        return 0.0 if d[0] != 0 else 1.0
    return float(st.ttest_1samp(d, 0.0).pvalue)


def holm(p: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of a family (``multipletests(method="holm")``): sorted
    ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a member is rejected at level
    α exactly when its adjusted p is at most α."""
    if not p:
        return {}
    # statsmodels imports pandas: deferred to the one call that needs it, not paid by every import
    from statsmodels.stats.multitest import multipletests

    names = list(p)
    with _heap_frozen():
        adjusted = multipletests([p[k] for k in names], method="holm")[1]
    return {k: float(a) for k, a in zip(names, adjusted, strict=True)}


@contextlib.contextmanager
def _heap_frozen() -> Iterator[None]:
    """The objects alive on entry out of the garbage collector's sight until exit (``gc.freeze``).
    ``multipletests(method="holm")`` ends with a full ``gc.collect()``, which walks every object the process
    holds: about half a second once torch and Ray are imported, for a dozen multiplications. Frozen, that
    collection sees only what the call itself made. A caller that froze objects itself keeps them as it
    left them (nothing is frozen or unfrozen then)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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


def proportion_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a rate ``k / n`` at ``level``, e.g. how often a
    null control's interval contains 0 over independent draws (``binomtest(k, n).proportion_ci``)."""
    ci = st.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


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
