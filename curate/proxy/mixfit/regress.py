"""The mixture search's numbers: candidate mixtures, epochs and Muennighoff's value of them, the regression
from weights to target bpb (RegMix: linear least squares, or LightGBM's gradient-boosted trees), its
leave-one-out predictions and their Spearman rank correlation with a bootstrap interval
(``scipy.stats``), and the choice of the predicted best mixture within the epoch limit."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lightgbm
import numpy as np
from scipy import stats as st

from curate.proxy.statistics.repetition import muennighoff_value

N_POOL = 4096  # Dirichlet draws the predicted best is chosen among (beside every candidate tried)
TOP_K = 40  # the chosen mixture averages this many of the best predicted (RegMix averages its top 100)

Predictor = Callable[[np.ndarray], np.ndarray]


def natural_weights(tokens: np.ndarray) -> np.ndarray:
    """Each source's share of the tokens: the mixture the data has as it is."""
    t = np.asarray(tokens, dtype=np.float64)
    return t / t.sum()


def epochs(w: np.ndarray, tokens: np.ndarray, horizon: float) -> np.ndarray:
    """Passes over each source's tokens that a ``horizon``-token run at weights ``w`` makes."""
    return np.asarray(w, dtype=np.float64) * float(horizon) / np.asarray(tokens, dtype=np.float64)


def muennighoff_factor(w: np.ndarray, ep: np.ndarray) -> float:
    """What Muennighoff et al.'s fit values a mixture's tokens at, per trained token: each source's share
    times the value of its tokens at ``ep`` epochs (:func:`curate.proxy.statistics.repetition.muennighoff_value`),
    1 within an epoch. Reported beside a mixture, never applied to it: its proxy runs repeat each source as
    the horizon does (:mod:`curate.proxy.data.mixtures`), so the measured multiplier already prices
    repetition as this proxy feels it (the data-limited arm's repetition curve says how that compares)."""
    return float(sum(float(x) * muennighoff_value(float(e)) for x, e in zip(w, ep, strict=True)))


def dirichlet_draws(
    natural: np.ndarray, concentration: float, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` mixtures from Dirichlet(concentration x K x natural): centred on the natural mixture."""
    alpha = np.maximum(concentration * len(natural) * natural, 1e-3)
    return rng.dirichlet(alpha, size=n)


def candidates(
    sources: list[str],
    tokens: np.ndarray,
    horizon: float,
    *,
    n: int,
    concentration: float,
    max_epochs: float,
    singles: bool | str,
    seed: int,
) -> dict[str, np.ndarray]:
    """``natural``, then ``d00``.. (Dirichlet draws within ``max_epochs`` per source), then
    ``only-<source>`` for each source that alone stays within ``max_epochs`` (with ``singles``; every
    source with ``singles: all``)."""
    nat = natural_weights(tokens)
    out: dict[str, np.ndarray] = {"natural": nat}
    rng = np.random.default_rng(seed)
    draws: list[np.ndarray] = []
    for _ in range(100):
        if len(draws) >= n:
            break
        batch = dirichlet_draws(nat, concentration, max(n, 16), rng)
        ok = epochs(batch, tokens, horizon).max(axis=1) <= max_epochs
        draws += list(batch[ok])
    for i, w in enumerate(draws[:n]):
        out[f"d{i:02d}"] = w
    if singles:
        for k, s in enumerate(sources):
            if singles == "all" or horizon / tokens[k] <= max_epochs:
                out[f"only-{s}"] = np.eye(len(sources))[k]
    return out


def _design(w: np.ndarray) -> np.ndarray:
    """An intercept and every weight but the last (the weights sum to one)."""
    w = np.atleast_2d(w)
    return np.hstack([np.ones((len(w), 1)), w[:, :-1]])


def fit_linear(w: np.ndarray, y: np.ndarray) -> Predictor:
    """Least squares of ``y`` on the weights plus an intercept (RegMix's linear model)."""
    coef, *_ = np.linalg.lstsq(_design(w), np.asarray(y, dtype=np.float64), rcond=None)
    return lambda x: _design(x) @ coef


# LightGBM at the size of a mixture search (tens of runs; its defaults assume thousands: leaves of 20 rows,
# bins of 3). A leaf needs 2 runs, so the trees split from 4 runs on; 4 leaves a tree (two sources'
# interaction at most); every distinct weight is a threshold (bins of one run). 200 rounds at rate 0.05:
# the rounds leave 0.95^200 = 3.5e-5 of what the trees can fit unfitted, so the fit is never cut short by
# the round count, and there is no early stopping (no runs to spare for a validation set). No row or
# feature sampling; one thread, row-wise histograms and `deterministic`: the same fit on every machine.
GBM_ROUNDS = 200
GBM_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "learning_rate": 0.05,
    "num_leaves": 4,
    "min_data_in_leaf": 2,
    "min_data_in_bin": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "seed": 0,
    "verbosity": -1,
}


def fit_gbm(w: np.ndarray, y: np.ndarray) -> Predictor:
    """LightGBM's gradient-boosted regression trees on the weights (squared loss, :data:`GBM_PARAMS`,
    :data:`GBM_ROUNDS` rounds), as RegMix fits its mixtures."""
    data = lightgbm.Dataset(np.atleast_2d(np.asarray(w, dtype=np.float64)), np.asarray(y, dtype=np.float64))
    booster = lightgbm.train(GBM_PARAMS, data, num_boost_round=GBM_ROUNDS)
    return lambda x: np.asarray(booster.predict(np.atleast_2d(x)), dtype=np.float64)


def fit(w: np.ndarray, y: np.ndarray, model: str) -> Predictor:
    return fit_gbm(w, y) if model == "gbm" else fit_linear(w, y)


def loo_predictions(w: np.ndarray, y: np.ndarray, model: str) -> np.ndarray:
    """Each mixture's target bpb predicted by the regression fitted on every other mixture."""
    n = len(y)
    return np.array([fit(np.delete(w, i, 0), np.delete(y, i), model)(w[i : i + 1])[0] for i in range(n)])


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


def spearman_interval(
    a: np.ndarray, b: np.ndarray, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of :func:`spearman` over the pairs ``(a_i, b_i)``, resampled with
    replacement (``scipy.stats.bootstrap``, paired, ``n_boot`` resamples). A resample that leaves a side
    constant has no rank correlation and is left out (scipy's own interval would be NaN): the percentiles
    are those of the others, ``(None, None)`` when fewer than half remain or under 3 pairs. Deterministic
    (``seed``)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) < 3:
        return None, None
    with warnings.catch_warnings():  # NaN resamples: left out below, not a warning
        warnings.simplefilter("ignore", st.DegenerateDataWarning)
        boot = st.bootstrap(
            (a, b),
            _rho,
            n_resamples=n_boot,
            vectorized=False,
            paired=True,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    rhos = boot.bootstrap_distribution
    good = rhos[~np.isnan(rhos)]
    if len(good) < n_boot // 2:
        return None, None
    lo, hi = np.quantile(good, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


@dataclass
class Choice:
    """The predicted best mixture: its weights, predicted bpb with a bootstrap interval, the share of
    bootstrap fits under which it beats the natural mixture, and its epochs per source."""

    weights: np.ndarray
    predicted: float
    interval: tuple[float, float]
    p_better: float
    epochs: np.ndarray
    within_limit: bool


def choose(
    w: np.ndarray,
    y: np.ndarray,
    tokens: np.ndarray,
    horizon: float,
    *,
    model: str,
    max_epochs: float,
    concentration: float,
    n_boot: int,
    seed: int,
) -> Choice:
    """As RegMix: the average of the :data:`TOP_K` mixtures of lowest predicted target bpb among the tried
    ones and :data:`N_POOL` draws from the candidates' own Dirichlet (the region the regression was fitted
    on), those within ``max_epochs`` per source only (the least-repeated when none is; epochs are linear
    in the weights, so the average stays within the limit). Its interval and ``p_better`` refit the
    regression on mixtures resampled with replacement."""
    rng = np.random.default_rng(seed + 1)
    nat = natural_weights(tokens)
    pool = np.vstack([w, nat[None, :], dirichlet_draws(nat, concentration, N_POOL, rng)])
    worst = epochs(pool, tokens, horizon).max(axis=1)
    ok = worst <= max_epochs
    if not ok.any():
        ok = worst <= worst.min()
    pool = pool[ok]
    f0 = fit(w, y, model)
    top = np.argsort(f0(pool), kind="stable")[:TOP_K]
    best = pool[top].mean(axis=0)
    predicted = float(f0(best[None, :])[0])
    boot_best, better = [], 0
    for idx in rng.integers(0, len(y), (n_boot, len(y))):
        f = fit(w[idx], y[idx], model)
        pb, pn = f(best[None, :])[0], f(nat[None, :])[0]
        boot_best.append(pb)
        better += int(pb < pn)
    lo, hi = np.quantile(np.array(boot_best), [0.025, 0.975])
    ep = epochs(best, tokens, horizon)
    return Choice(
        best, predicted, (float(lo), float(hi)), better / n_boot, ep, bool(ep.max() <= max_epochs + 1e-9)
    )
