"""Where a search's mixtures come from: the natural mixture, each mixture's epochs at the horizon and what
Muennighoff et al.'s fit values them at, the candidates (spread over the whole simplex as RegMix samples
its runs, a few draws around the natural mixture, each source alone) and whether a mixture lies inside the
region the fitted candidates sampled."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from curate.proxy.statistics.repetition import muennighoff_value

# The default number of spread candidates per source. On RegMix's own 1M-parameter runs (17 Pile domains,
# benchmarks/regmix_check.py), the held-out Spearman of fits on n training runs drawn at random (the mean of
# 20 draws) reaches 0.95 at 64 runs (3.8 per domain) with LightGBM and at 96 (5.6 per domain) with the
# log-linear law; 6 per source covers both. Olmix finds the runs a search needs grow linearly with the
# domains.
RUNS_PER_SOURCE = 6
MIN_RUNS = 16


def default_runs(n_sources: int) -> int:
    """Spread candidates for ``n_sources`` sources when ``proxy.mix.runs`` is not given."""
    return max(MIN_RUNS, RUNS_PER_SOURCE * n_sources)


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


def spread_draws(
    natural: np.ndarray,
    n: int,
    rng: np.random.Generator,
    *,
    strength: tuple[float, float],
    temperature: float,
    min_weight: float,
) -> np.ndarray:
    """``n`` mixtures spread over the whole simplex, as RegMix draws its runs (Liu et al. 2024,
    ``mixture_config/synthesize_mixture.py``): each from Dirichlet(s x prior), the prior the natural
    weights raised to ``temperature`` and renormalised, the strength ``s`` (the Dirichlet's total
    concentration) log-uniform in ``strength``; weights under ``min_weight`` are set to 0 and the rest
    renormalised. A low strength puts most of a draw on one or two sources (corners and edges), a high one
    near the tempered prior, so the draws span sparse and dense mixtures alike."""
    prior = np.asarray(natural, dtype=np.float64) ** temperature
    prior = prior / prior.sum()
    lo, hi = strength
    out: list[np.ndarray] = []
    while len(out) < n:
        s = np.exp(rng.uniform(math.log(lo), math.log(hi), size=(n, 1)))
        g = rng.standard_gamma(s * prior[None, :])  # Dirichlet rows of different strengths
        w = g / np.where(g.sum(axis=1, keepdims=True) > 0, g.sum(axis=1, keepdims=True), 1.0)
        w = np.where(w < min_weight, 0.0, w)
        keep = w.sum(axis=1) > 0  # a row whose every weight underflowed is drawn again
        out += list(w[keep] / w[keep].sum(axis=1, keepdims=True))
    return np.array(out[:n])


@dataclass(frozen=True)
class Design:
    """How a search draws mixtures: spread ones (:func:`spread_draws`) and, with ``local``, draws around the
    natural mixture (:func:`dirichlet_draws`) in the proportion ``local / (spread + local)``. The choice's
    pool is drawn by the same design, so the regression is asked only about the region it was fitted on."""

    natural: np.ndarray
    spread: int
    local: int
    strength: tuple[float, float]
    temperature: float
    min_weight: float
    concentration: float

    def draw_spread(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return spread_draws(
            self.natural,
            n,
            rng,
            strength=self.strength,
            temperature=self.temperature,
            min_weight=self.min_weight,
        )

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` mixtures in the design's proportions (the choice's pool)."""
        k = len(self.natural)
        total = self.spread + self.local
        n_local = round(n * self.local / total) if total else 0
        parts = [self.draw_spread(n - n_local, rng)] if n > n_local else [np.zeros((0, k))]
        if n_local:
            parts.append(dirichlet_draws(self.natural, self.concentration, n_local, rng))
        return np.vstack(parts)


def _within(
    draw: Any, n: int, tokens: np.ndarray, horizon: float, max_epochs: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """``n`` draws of ``draw(batch, rng)`` within ``max_epochs`` per source (fewer when 100 batches hold
    too few: a design whose draws nearly all repeat a small source too often)."""
    out: list[np.ndarray] = []
    for _ in range(100):
        if len(out) >= n:
            break
        batch = draw(max(n, 16), rng)
        out += list(batch[epochs(batch, tokens, horizon).max(axis=1) <= max_epochs])
    return out[:n]


def candidates(
    sources: list[str],
    tokens: np.ndarray,
    horizon: float,
    design: Design,
    *,
    max_epochs: float,
    singles: bool | str,
    seed: int,
) -> dict[str, np.ndarray]:
    """``natural``, then ``s00``.. (``design.spread`` spread draws), ``d00``.. (``design.local`` draws
    around the natural mixture), each within ``max_epochs`` per source, then ``only-<source>`` for each
    source that alone stays within ``max_epochs`` (with ``singles``; every source with ``singles: all``)."""
    out: dict[str, np.ndarray] = {"natural": design.natural}
    rng = np.random.default_rng(seed)
    for i, w in enumerate(_within(design.draw_spread, design.spread, tokens, horizon, max_epochs, rng)):
        out[f"s{i:02d}"] = w
    local = _within(
        lambda m, r: dirichlet_draws(design.natural, design.concentration, m, r),
        design.local,
        tokens,
        horizon,
        max_epochs,
        rng,
    )
    for i, w in enumerate(local):
        out[f"d{i:02d}"] = w
    if singles:
        for k, s in enumerate(sources):
            if singles == "all" or horizon / tokens[k] <= max_epochs:
                out[f"only-{s}"] = np.eye(len(sources))[k]
    return out


def total_variation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Half the L1 distance between mixtures (rows of ``b`` against ``a``): the share of tokens that would
    have to move from one source to another to turn one mixture into the other."""
    return 0.5 * np.abs(np.atleast_2d(b) - np.asarray(a)[None, :]).sum(axis=1)


def region(w: np.ndarray, fitted: np.ndarray, sources: list[str]) -> dict[str, Any]:
    """Whether mixture ``w`` lies inside the region the ``fitted`` mixtures sampled. Outside when a source's
    weight is above the largest (or below the smallest) it has in any fitted mixture (``outside_range``),
    or when ``w`` is farther from its nearest fitted mixture (total variation) than 95% of the fitted
    mixtures are from their own nearest neighbour (``nearest_tv`` against ``spacing_tv_p95``): a hole
    in the sample, where the regression interpolates from afar."""
    fitted = np.atleast_2d(np.asarray(fitted, dtype=np.float64))
    lo, hi = fitted.min(axis=0), fitted.max(axis=0)
    outside = {
        s: {"weight": round(float(x), 6), "sampled": [round(float(a), 6), round(float(b), 6)]}
        for s, x, a, b in zip(sources, w, lo, hi, strict=True)
        if x > b + 1e-9 or x < a - 1e-9
    }
    nearest = float(total_variation(w, fitted).min())
    spacing = [float(np.delete(total_variation(f, fitted), i).min()) for i, f in enumerate(fitted)]
    p95 = float(np.quantile(spacing, 0.95)) if len(fitted) > 1 else 0.0
    return {
        "inside": not outside and nearest <= p95 + 1e-12,
        "outside_range": outside,
        "nearest_tv": round(nearest, 6),
        "spacing_tv_p95": round(p95, 6),
        "method": "outside when a source's weight leaves the range it has over the fitted mixtures, or "
        "when the mixture is farther (total variation) from its nearest fitted mixture than 95% of the "
        "fitted mixtures are from theirs",
    }
