"""The predicted best mixture: as RegMix, the average of the mixtures of lowest predicted loss among those
tried and a pool drawn by the search's own design, within the epoch limit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from curate.proxy.mixfit.regress import fit
from curate.proxy.mixfit.space import Design, epochs

N_POOL = 4096  # mixtures drawn by the design the predicted best is chosen among (beside every one tried)
TOP_K = 40  # the chosen mixture averages this many of the best predicted (RegMix averages its top 128)


@dataclass
class Choice:
    """The predicted best mixture: its weights, predicted loss with a bootstrap interval (the regression
    refitted on resampled mixtures) and its epochs per source."""

    weights: np.ndarray
    predicted: float
    interval: tuple[float, float]
    epochs: np.ndarray
    within_limit: bool


def choose(
    w: np.ndarray,
    y: np.ndarray,
    tokens: np.ndarray,
    horizon: float,
    design: Design,
    *,
    model: str,
    max_epochs: float,
    n_boot: int,
    seed: int,
) -> Choice:
    """The average of the :data:`TOP_K` mixtures of lowest predicted loss among the tried ones ``w`` and
    :data:`N_POOL` draws of ``design`` (the region the regression was fitted on), those within
    ``max_epochs`` per source only (the least-repeated when none is; epochs are linear in the weights, so
    the average stays within the limit). Its interval refits the regression on mixtures resampled with
    replacement; it describes the prediction, never the decision (the confirmation on fresh seeds is
    that)."""
    rng = np.random.default_rng(seed + 1)
    pool = np.vstack([w, design.natural[None, :], design.draw(N_POOL, rng)])
    worst = epochs(pool, tokens, horizon).max(axis=1)
    ok = worst <= max_epochs
    if not ok.any():
        ok = worst <= worst.min()
    pool = pool[ok]
    f0 = fit(w, y, model)
    top = np.argsort(f0(pool), kind="stable")[:TOP_K]
    best = pool[top].mean(axis=0)
    predicted = float(f0(best[None, :])[0])
    boot = [fit(w[idx], y[idx], model)(best[None, :])[0] for idx in rng.integers(0, len(y), (n_boot, len(y)))]
    lo, hi = np.quantile(np.array(boot), [0.025, 0.975])
    ep = epochs(best, tokens, horizon)
    return Choice(best, predicted, (float(lo), float(hi)), ep, bool(ep.max() <= max_epochs + 1e-9))
