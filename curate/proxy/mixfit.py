"""The mixture search's numbers, pure numpy: candidate mixtures, epochs and the repetition discount, the
regression from weights to target bpb (RegMix: linear least squares or gradient-boosted stumps), its
leave-one-out predictions and their Spearman rank correlation with a bootstrap interval, and the choice
of the predicted best mixture within the epoch limit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Muennighoff et al. 2023 ("Scaling Data-Constrained Language Models"): repeated data decays in value
# with R* = 15.4 repetitions; up to ~4 epochs it is close to fresh data.
R_STAR = 15.4
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


def repetition_factor(w: np.ndarray, ep: np.ndarray) -> float:
    """Effective tokens per trained token of a mixture: each source's share times the value of its
    tokens at ``ep`` epochs, ``(1 + R*(1 - exp(-(e-1)/R*))) / e`` (Muennighoff et al. 2023), 1 within an
    epoch. A mixture's goodput is its measured multiplier times this factor."""
    e = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    value = (1.0 + R_STAR * (1.0 - np.exp(-(e - 1.0) / R_STAR))) / e
    return float(np.sum(np.asarray(w) * value))


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


def fit_gbm(w: np.ndarray, y: np.ndarray, *, rounds: int = 100, rate: float = 0.1) -> Predictor:
    """Gradient-boosted stumps on the weights (squared loss): each round splits one weight at the
    threshold that most reduces the residuals' squared error."""
    w, y = np.atleast_2d(np.asarray(w, dtype=np.float64)), np.asarray(y, dtype=np.float64)
    base = float(y.mean())
    stumps: list[tuple[int, float, float, float]] = []
    pred = np.full(len(y), base)
    for _ in range(rounds):
        r = y - pred
        best: tuple[float, int, float, float, float] | None = None
        for j in range(w.shape[1]):
            for t in np.unique(w[:, j])[:-1]:
                left = w[:, j] <= t
                lv, rv = float(r[left].mean()), float(r[~left].mean())
                sse = float(((r - np.where(left, lv, rv)) ** 2).sum())
                if best is None or sse < best[0]:
                    best = (sse, j, float(t), lv, rv)
        if best is None:
            break
        _, j, t, lv, rv = best
        stumps.append((j, t, rate * lv, rate * rv))
        pred += np.where(w[:, j] <= t, rate * lv, rate * rv)

    def predict(x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        out = np.full(len(x), base)
        for j, t, lv, rv in stumps:
            out += np.where(x[:, j] <= t, lv, rv)
        return out

    return predict


def fit(w: np.ndarray, y: np.ndarray, model: str) -> Predictor:
    return fit_gbm(w, y) if model == "gbm" else fit_linear(w, y)


def loo_predictions(w: np.ndarray, y: np.ndarray, model: str) -> np.ndarray:
    """Each mixture's target bpb predicted by the regression fitted on every other mixture."""
    n = len(y)
    return np.array([fit(np.delete(w, i, 0), np.delete(y, i), model)(w[i : i + 1])[0] for i in range(n)])


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their average rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    for v in np.unique(x):
        m = x == v
        r[m] = r[m].mean()
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation; ``None`` when either side is constant or has under 3 values."""
    ra, rb = ranks(a), ranks(b)
    if len(ra) < 3 or ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def spearman_interval(
    a: np.ndarray, b: np.ndarray, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of :func:`spearman` over the pairs (resampled with replacement)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a), np.asarray(b)
    vals = [spearman(a[i], b[i]) for i in rng.integers(0, len(a), (n_boot, len(a)))]
    good = np.array([v for v in vals if v is not None])
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
