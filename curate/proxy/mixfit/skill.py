"""How well a mixture regression ranks mixtures it was not fitted on, and how well any could: the Spearman
rank correlation of its held-out predictions with the measured losses (``scipy.stats.spearmanr``), a
permutation p-value that refits on shuffled losses, a bootstrap interval that refits on resampled
mixtures, and the split-seed noise ceiling."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from curate.proxy.mixfit.regress import AUTO, FOLDS, fold_ids, select


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho (``scipy.stats.spearmanr``: tied values share their average rank), NaN where a side
    is constant (no ranking to correlate)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(st.spearmanr(a, b).statistic)


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of held-out predictions ``a`` and measured values ``b``; ``None`` when
    either side is constant or has under 3 values."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rho = _rho(a, b) if len(a) >= 3 else math.nan
    return None if math.isnan(rho) else rho


@dataclass(frozen=True)
class Procedure:
    """What is fitted and scored, the same on the measured losses, on every permutation of them and on
    every bootstrap resample: ``model`` (``auto``: the one of :data:`curate.proxy.mixfit.regress.AUTO` of
    least held-out error, chosen afresh each time), held out by ``folds``-fold cross-validation
    (:func:`curate.proxy.mixfit.regress.fold_ids` with ``seed``)."""

    model: str
    folds: int = FOLDS
    seed: int = 0

    def run(
        self, w: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None
    ) -> tuple[str, dict[str, float], np.ndarray]:
        """The model used, every candidate model's held-out error and the held-out predictions."""
        g = np.arange(len(y)) if groups is None else groups
        folds = fold_ids(g, self.folds, self.seed)
        models = AUTO if self.model == "auto" else (self.model,)
        return select(w, y, models, folds)

    def rho(self, w: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> float:
        return _rho(self.run(w, y, groups)[2], y)


def permutation_p(
    proc: Procedure, w: np.ndarray, y: np.ndarray, observed: float | None, n_perm: int, seed: int
) -> float | None:
    """One-sided permutation p-value of the held-out Spearman ``observed``: the losses shuffled over the
    mixtures ``n_perm`` times, the whole procedure (model choice included) refitted on each, and
    ``p = (1 + #{rho_perm >= observed}) / (1 + n_perm)`` (a permutation whose predictions have no ranking
    counts as below). Small only when the weights carry signal about the losses; ``None`` without an
    observed value."""
    if observed is None:
        return None
    rng = np.random.default_rng(seed)
    above = 0
    for _ in range(n_perm):
        r = proc.rho(w, rng.permutation(y))
        above += int(not math.isnan(r) and r >= observed - 1e-12)
    return (1 + above) / (1 + n_perm)


def refit_bootstrap(
    proc: Procedure, w: np.ndarray, y: np.ndarray, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of the held-out Spearman that refits: mixtures resampled with
    replacement, and on each resample the whole procedure run again (copies of one mixture share a fold,
    so none is predicted by a fit that saw it), its held-out predictions ranked against the resample's
    losses. A resample without a ranking is left out; ``(None, None)`` when fewer than half remain or under
    3 mixtures."""
    n = len(y)
    if n < 3:
        return None, None
    rng = np.random.default_rng(seed)
    rhos = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        if len(np.unique(idx)) < 3:
            continue
        r = proc.rho(w[idx], y[idx], groups=idx)
        if not math.isnan(r):
            rhos.append(r)
    if len(rhos) < n_boot // 2:
        return None, None
    lo, hi = np.quantile(rhos, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def split_seed_ceiling(a: np.ndarray, b: np.ndarray) -> dict[str, float | int | None]:
    """The split-seed noise ceiling from the same mixtures measured on two seeds (``a``, ``b``):
    ``split_spearman``, the rank correlation of one seed's losses with the other's (the reliability of a
    single seed's ranking), and ``ceiling = sqrt(split_spearman)``: about the highest rank correlation
    with one seed's measurement that any predictor can reach, even one that knows every mixture's expected
    loss exactly (classical test theory: a measurement correlates with its own truth as the square root of
    its correlation with a repeat). ``None`` under 3 mixtures or without a ranking; a ceiling of 0 when
    the seeds disagree (split Spearman at or below 0)."""
    rho = spearman(np.asarray(a), np.asarray(b))
    return {
        "mixtures": len(a),
        "split_spearman": rho,
        "ceiling": None if rho is None else math.sqrt(max(rho, 0.0)),
    }
