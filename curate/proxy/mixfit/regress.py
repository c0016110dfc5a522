"""The regressions from mixture weights to a target loss, as the field fits them: least squares on the
weights (RegMix's linear model), LightGBM's gradient-boosted trees (RegMix) and the log-linear mixing law
(Olmix), their held-out predictions by k-fold cross-validation, and the choice between models by held-out
error."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import lightgbm
import numpy as np
from scipy import optimize

Predictor = Callable[[np.ndarray], np.ndarray]

MODELS = ("linear", "gbm", "loglinear")
AUTO = ("loglinear", "gbm")  # ``model: auto`` chooses between these by held-out error
FOLDS = 10  # k-fold cross-validation; leave-one-out under 10 mixtures


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


LOGLINEAR_FORM = "y(w) = c + exp(sum_s t_s w_s), c >= 0"
LOGLINEAR_GRID = 24  # starting values of c, between 0 and the lowest loss
LOGLINEAR_NFEV = 50  # the polish's evaluations at most (a law that fits converges in a few)


def fit_loglinear(w: np.ndarray, y: np.ndarray) -> Predictor:
    """Olmix's log-linear mixing law (Chen et al. 2026; the data mixing law of Ye et al. 2024):
    ``y(w) = c + exp(sum_s t_s w_s)`` with ``c >= 0``, so ``log(y - c)`` is linear in the weights (the
    weights sum to one, so the exponent needs no intercept of its own). Fitted by least squares on ``y``:
    for each ``c`` of a grid in ``[0, min y)`` the ``t`` of least squares of ``log(y - c)`` on ``w``; the
    best of those polished by ``scipy.optimize.least_squares`` (trust region, ``c >= 0``). Olmix fits the
    same law by a Huber loss from random restarts; here the grid replaces the restarts, so a refit gives
    the same predictions."""
    w = np.atleast_2d(np.asarray(w, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64)
    lo, span = float(y.min()), float(np.ptp(y))
    if span == 0 or lo <= 0:
        mean = float(y.mean())
        return lambda x: np.full(len(np.atleast_2d(x)), mean)
    grid = [lo - span * g for g in np.geomspace(1e-2, 1e2, LOGLINEAR_GRID)]
    best: tuple[float, np.ndarray] | None = None
    best_sse = math.inf
    for c in [0.0, *(g for g in grid if g > 0)]:
        t, *_ = np.linalg.lstsq(w, np.log(y - c), rcond=None)
        sse = float(((c + np.exp(w @ t) - y) ** 2).sum())
        if sse < best_sse:
            best, best_sse = (c, t), sse
    assert best is not None

    def residual(p: np.ndarray) -> np.ndarray:
        return p[0] + np.exp(np.clip(w @ p[1:], -50, 50)) - y

    def jacobian(p: np.ndarray) -> np.ndarray:
        return np.hstack([np.ones((len(w), 1)), np.exp(np.clip(w @ p[1:], -50, 50))[:, None] * w])

    x0 = np.concatenate([[best[0]], best[1]])
    lower = np.concatenate([[0.0], np.full(w.shape[1], -np.inf)])
    p = optimize.least_squares(
        residual,
        x0,
        jac=jacobian,
        bounds=(lower, np.inf),
        method="trf",
        x_scale="jac",
        max_nfev=LOGLINEAR_NFEV,
    ).x
    if float((residual(p) ** 2).sum()) > best_sse:  # the polish never makes the fit worse
        p = x0
    return lambda x: p[0] + np.exp(np.clip(np.atleast_2d(x) @ p[1:], -50, 50))


FITS: dict[str, Callable[[np.ndarray, np.ndarray], Predictor]] = {
    "linear": fit_linear,
    "gbm": fit_gbm,
    "loglinear": fit_loglinear,
}


def fit(w: np.ndarray, y: np.ndarray, model: str) -> Predictor:
    """The regression ``model`` (one of :data:`MODELS`) fitted on mixtures ``w`` with losses ``y``."""
    if model not in FITS:
        raise ValueError(f"mixfit.fit: model {model!r} is not one of {', '.join(FITS)}")
    return FITS[model](w, y)


def fold_ids(groups: np.ndarray, k: int, seed: int) -> np.ndarray:
    """A fold for every row: the distinct ``groups`` (a mixture and its copies in a bootstrap resample are
    one group, so a copy never predicts itself) shuffled by ``seed`` and dealt into ``min(k, groups)``
    folds."""
    uniq, inverse = np.unique(np.asarray(groups), return_inverse=True)
    order = np.random.default_rng(seed).permutation(len(uniq))
    fold_of = np.empty(len(uniq), dtype=np.int64)
    fold_of[order] = np.arange(len(uniq)) % min(k, len(uniq))
    return fold_of[inverse]


def heldout_predictions(w: np.ndarray, y: np.ndarray, model: str, folds: np.ndarray) -> np.ndarray:
    """Each row's loss predicted by the regression fitted on the rows of the other folds."""
    w, y = np.atleast_2d(w), np.asarray(y, dtype=np.float64)
    out = np.empty(len(y))
    for f in np.unique(folds):
        test = folds == f
        out[test] = fit(w[~test], y[~test], model)(w[test])
    return out


def rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(y)) ** 2)))


def select(
    w: np.ndarray, y: np.ndarray, models: tuple[str, ...], folds: np.ndarray
) -> tuple[str, dict[str, float], np.ndarray]:
    """The model of least held-out error (root mean square over the folds' predictions; ties to the first
    of ``models``): its name, every model's error and its held-out predictions."""
    preds = {m: heldout_predictions(w, y, m, folds) for m in models}
    errors = {m: rmse(p, y) for m, p in preds.items()}
    best = min(models, key=lambda m: (errors[m], models.index(m)))
    return best, errors, preds[best]
