"""Paired statistics, power and decision accuracy: exact values against closed forms and t tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy import analysis, stats


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 4, 2.776),
        (0.975, 9, 2.262),
        (0.975, 29, 2.045),
        (0.8, 1, 1.376),
        (0.8, 2, 1.061),
        (0.8, 4, 0.941),
        (0.8, 29, 0.854),
    ],
)
def test_t_quantile_matches_the_published_table(p, df, table):
    assert round(stats.t_quantile(p, df), 3) == table


def test_paired_interval_is_the_t_interval_of_the_differences():
    iv = stats.paired_interval([0.1, 0.2, 0.3])
    half = stats.t_quantile(0.975, 2) * 0.1 / math.sqrt(3)
    assert iv.value == pytest.approx(0.2)
    assert iv.sd == pytest.approx(0.1)
    assert iv.n == 3
    assert (iv.ci_low, iv.ci_high) == (pytest.approx(0.2 - half), pytest.approx(0.2 + half))
    assert round(iv.ci_low, 4) == -0.0484
    assert iv.excludes(0.0) is False
    one = stats.paired_interval([0.5])
    assert one.ci_low is None
    assert one.excludes(0.0) is False


def test_mde_formula_and_seeds_needed():
    # (t_.975,2 + t_.8,2) * sd / sqrt(3) = (4.303 + 1.061) * 0.1 / 1.732
    assert stats.mde(0.1, 3) == pytest.approx((4.3027 + 1.0607) * 0.1 / math.sqrt(3), abs=1e-4)
    assert round(stats.mde(0.1, 3), 4) == 0.3097
    assert stats.mde(0.1, 1) == math.inf
    n = stats.seeds_needed(0.05, 0.1)
    assert stats.mde(0.1, n) <= 0.05 < stats.mde(0.1, n - 1)
    assert n == 34
    assert stats.seeds_needed(0.0, 0.1) is None


def test_pooled_sd_centres_each_set_on_its_own_mean():
    sd, dof = stats.pooled_sd([np.array([1.0, 3.0]), np.array([10.0, 12.0, 14.0]), np.array([7.0])])
    # sums of squares 2 + 8 = 10 over 1 + 2 degrees of freedom
    assert dof == 3
    assert sd == pytest.approx(math.sqrt(10 / 3))


def test_decision_accuracy_counts_pairs_ordered_alike():
    small = {"a": 1.0, "b": 2.0, "c": 3.0}
    ref = {"a": 1.0, "b": 3.0, "c": 2.0}
    assert stats.decision_accuracy(small, ref) == pytest.approx(2 / 3)
    assert stats.decision_accuracy({"a": 1.0}, ref) is None
    assert stats.decision_accuracy({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}) == 1.0


# A baseline linear in ln t: b(t) = 5 - 0.1 ln t, so inside the curve t_base(B + d) / T = exp(-d / 0.1).
TOKENS = np.geomspace(1_000, 64_000, 7)
CURVE = 5 - 0.1 * np.log(TOKENS)


def test_multiplier_is_the_difference_mapped_through_the_baseline_curve():
    base = analysis.Baseline(TOKENS, CURVE)
    m, ex = base.multiplier(0.02)  # worse by 0.02 bpb: the baseline got there at T * exp(-0.2)
    assert m == pytest.approx(math.exp(-0.2))
    assert ex is False
    assert base.multiplier(0.0) == (1.0, False)
    assert base.diff_for(math.exp(-0.2)) == pytest.approx(0.02)
    better, ex = base.multiplier(-0.02)
    assert better > 1
    assert ex is True


def test_mde_on_a_synthetic_curve_has_the_known_multiplier():
    base = analysis.Baseline(TOKENS, CURVE)
    diffs = [np.array([0.01, 0.02, 0.03]), np.array([0.0, -0.01, 0.01])]  # pooled sd 0.01, dof 4
    pw = analysis.power(base, diffs, 3)
    delta = stats.mde(0.01, 3)
    assert pw["sd_diff_bpb"] == pytest.approx(0.01)
    assert pw["mde_bpb"] == pytest.approx(delta)
    assert pw["mde_multiplier"]["worse"] == pytest.approx(math.exp(-delta / 0.1))
    assert pw["mde_multiplier"]["better"] > 1
    row = next(r for r in pw["seeds_needed"] if r["multiplier"] == 0.8)
    assert row["diff_bpb"] == pytest.approx(-0.1 * math.log(0.8))
    assert row["seeds"] == stats.seeds_needed(-0.1 * math.log(0.8), 0.01)
