"""Every pair's 95% interval covers its true difference 95% of the time, even when pairs differ in noise.

Recipes share different fractions of raw's stream (measured: curated ~41-54%, toward_target ~10%), so
their paired differences with raw differ in noise: six-seed sds 0.014 (curated - raw) and 0.030
(toward_target - raw) at lr 1e-3. Simulated here with one raw draw per seed used by every pair, as in the
product: ``H[r, s] = mu_r + seed_s + e_rs``, ``e_rs = f_r e_raw,s + sqrt(1 - f_r^2) z_rs`` (all of sd
SIGMA), so ``sd(e_r - e_raw) = SIGMA sqrt(2 - 2 f_r)``. The intervals come from the code path the calls
use (:meth:`curate.proxy.statistics.analysis.Pairs.interval`); the old interval, the residual variance pooled over the
recipes x seeds table, is computed here only to show what this test guards against.
"""

from __future__ import annotations

import math

import numpy as np

from curate.proxy import stats
from curate.proxy.statistics import analysis

SEEDS = 3
DRAWS = 10_000
SIGMA = 0.025
SD_DIFF = {"curated": 0.014, "toward_target": 0.030}
SHARE = {r: 1 - (sd / SIGMA) ** 2 / 2 for r, sd in SD_DIFF.items()}  # f_r: corr(e_r, e_raw)
MU = {"raw": 3.10, "curated": 3.09, "toward_target": 3.12}
PAIRS = [("curated", "raw"), ("toward_target", "raw"), ("curated", "toward_target")]


def _draws() -> dict[str, np.ndarray]:
    """DRAWS x SEEDS headline bpb per recipe, raw's noise shared by every pair at each seed."""
    rng = np.random.default_rng(20261206)
    seed_effect = rng.normal(0, 0.05, (DRAWS, SEEDS))
    e_raw = rng.normal(0, SIGMA, (DRAWS, SEEDS))
    h = {"raw": MU["raw"] + seed_effect + e_raw}
    for r, f in SHARE.items():
        own = rng.normal(0, SIGMA, (DRAWS, SEEDS))
        h[r] = MU[r] + seed_effect + f * e_raw + math.sqrt(1 - f * f) * own
    return h


def _pooled_covers(h: dict[str, np.ndarray], k: int, a: str, b: str, t: float) -> bool:
    """The removed pooled interval: residual variance of the recipes x seeds table, df (R - 1)(n - 1)."""
    y = np.stack([h[r][k] for r in ("raw", "curated", "toward_target")])
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    sd = math.sqrt(2 * float((resid**2).sum()) / 4)
    d = float((h[a][k] - h[b][k]).mean())
    return abs(d - (MU[a] - MU[b])) <= t * sd / math.sqrt(SEEDS)


def test_each_pairs_own_interval_covers_its_true_difference_95_percent_of_the_time():
    h = _draws()
    # the simulated sds are the measured ones
    for r, sd in SD_DIFF.items():
        assert abs(float((h[r] - h["raw"]).std(ddof=1)) - sd) < 0.0005
    covered = dict.fromkeys(PAIRS, 0)
    pooled_tt = pooled_cur = 0
    t_pooled = stats.t_quantile(0.975, 4)
    for k in range(DRAWS):
        pairs = analysis.Pairs(
            {r: v[k][:, None] for r, v in h.items()}, ["raw", "curated", "toward_target"], "raw"
        )
        for a, b in PAIRS:
            iv = pairs.interval(a, b)
            covered[(a, b)] += iv.ci_low <= MU[a] - MU[b] <= iv.ci_high
        pooled_tt += _pooled_covers(h, k, "toward_target", "raw", t_pooled)
        pooled_cur += _pooled_covers(h, k, "curated", "raw", t_pooled)
    rates = {p: c / DRAWS for p, c in covered.items()}
    assert all(0.94 <= x <= 0.96 for x in rates.values()), rates
    # what the pooled interval did: too short for the noisier pair (0.906 here), too long for the quieter
    assert not 0.94 <= pooled_tt / DRAWS <= 0.96
    assert pooled_tt / DRAWS < 0.93
    assert pooled_cur / DRAWS > 0.97
