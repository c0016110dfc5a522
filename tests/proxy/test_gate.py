"""The gate's statistics: TOST on a spread pooled with the calibrated prior, the margin a null with no bias
passes, and the planted control's power (textbook values)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy.statistics.gate import Noise, pooled, power_one_sided, supported_margin, tost


def test_the_spread_is_pooled_with_the_prior_by_degrees_of_freedom():
    d = [0.01, -0.02, 0.03, 0.0]  # s^2 = 0.000433..., df 3
    s2 = float(np.var(d, ddof=1))
    p = pooled(d, Noise(0.027, 40, "seeds 1000-1059"))
    assert p.dof == 43
    assert p.sd == pytest.approx(math.sqrt((40 * 0.027**2 + 3 * s2) / 43), rel=1e-12)
    assert p.source == "this run's pair (df 3) pooled with seeds 1000-1059 (df 40)"
    assert pooled(d, None) == Noise(math.sqrt(s2), 3, "this run's pair")


def test_tost_is_the_90_percent_interval_inside_the_margin():
    d = [0.01, -0.02, 0.03, 0.0]
    e = tost(d, 0.05, prior=Noise(0.027, 40))
    half = 1.6810707032025196 * e.noise.sd / 2  # t_{0.95, 43}
    assert (e.ci_low, e.ci_high) == pytest.approx((0.005 - half, 0.005 + half), rel=1e-12)
    assert e.equivalent
    assert e.bound == pytest.approx(0.005 + half)
    assert not tost(d, 0.02, prior=Noise(0.027, 40)).equivalent  # the interval reaches past 0.02
    biased = tost([0.06, 0.05, 0.07, 0.055], 0.05, prior=Noise(0.027, 40))
    assert not biased.equivalent
    assert biased.as_dict()["level"] == 0.9
    one = tost([0.0], 0.05)  # one seed, no prior: no interval, never equivalent
    assert (one.ci_low, one.ci_high, one.equivalent) == (-math.inf, math.inf, False)


def test_the_margin_a_null_without_bias_passes_and_the_power_of_a_paired_t():
    # (t_{0.95, 43} + z_{0.975+0.0125}) * sd / sqrt(n): 97.5% of unbiased nulls pass
    assert supported_margin(0.027, 4, 43) == pytest.approx((1.6810707 + 2.2414027) * 0.0135, rel=1e-6)
    rng = np.random.default_rng(0)
    m = supported_margin(0.027, 4, 10_000)
    passed = np.mean(
        [tost(rng.normal(0, 0.027, 4), m, prior=Noise(0.027, 10_000)).equivalent for _ in range(4000)]
    )
    assert 0.965 < passed < 0.985
    assert power_one_sided(1.0, 1.0, 10) == pytest.approx(0.8031, abs=1e-4)  # Cohen's d 1, n 10: 80%
    assert power_one_sided(0.5, 1.0, 34) == pytest.approx(0.8078, abs=1e-4)  # d 0.5, n 34
    assert power_one_sided(0.5, 1.0, 1) == 0.0
