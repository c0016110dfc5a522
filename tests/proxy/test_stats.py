"""Paired statistics, power and decision accuracy: exact values against closed forms and t tables."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from curate.proxy import stats
from curate.proxy.statistics import analysis


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


def test_t_quantile_has_its_closed_forms_and_refuses_what_it_does_not_mean():
    # df 1 is Cauchy: tan(pi (p - 1/2)); df 2: (2p - 1) sqrt(2 / (4 p (1 - p)))
    assert stats.t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-12)
    assert stats.t_quantile(0.975, 2) == pytest.approx(0.95 * math.sqrt(2 / (4 * 0.975 * 0.025)), rel=1e-12)
    assert stats.t_quantile(0.8, 2) == pytest.approx(0.6 * math.sqrt(2 / (4 * 0.8 * 0.2)), rel=1e-12)
    with pytest.raises(ValueError, match=r"t_quantile: p=0.4 must be in \(0.5, 1\)"):
        stats.t_quantile(0.4, 3)
    with pytest.raises(ValueError, match="t_quantile: df=0 must be >= 1"):
        stats.t_quantile(0.975, 0)


def test_proportion_interval_is_clopper_pearsons_exact_interval():
    # all n inside: the lower end solves p^n = 0.025; none: the upper end solves (1 - p)^n = 0.025
    assert stats.proportion_interval(20, 20) == (pytest.approx(0.025 ** (1 / 20), abs=1e-12), 1.0)
    assert stats.proportion_interval(0, 20) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20), abs=1e-12))
    assert round(stats.proportion_interval(20, 20)[0], 3) == 0.832
    # one of n: the lower end solves 1 - (1 - p)^n = 0.025; n - 1 of n: the upper end p^n = 0.975
    lo, hi = stats.proportion_interval(1, 10)
    assert lo == pytest.approx(1 - 0.975 ** (1 / 10), abs=1e-12)
    lo, hi = stats.proportion_interval(19, 20)
    assert hi == pytest.approx(0.975 ** (1 / 20), abs=1e-12)
    # and its lower end is where 19 or more of 20 has probability 0.025: 20 p^19 (1 - p) + p^20
    assert 20 * lo**19 * (1 - lo) + lo**20 == pytest.approx(0.025, abs=1e-12)


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


def test_decision_accuracy_counts_pairs_ordered_alike():
    small = {"a": 1.0, "b": 2.0, "c": 3.0}
    ref = {"a": 1.0, "b": 3.0, "c": 2.0}
    assert stats.decision_accuracy(small, ref) == pytest.approx(2 / 3)
    assert stats.decision_accuracy({"a": 1.0}, ref) is None
    assert stats.decision_accuracy({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}) == 1.0
    # only the pairs the reference called: (b, c) is ordered differently but was not called
    assert stats.decision_accuracy(small, ref, [("a", "b"), ("a", "c")]) == 1.0
    assert stats.decision_accuracy(small, ref, []) is None


# A baseline linear in ln t: b(t) = 5 - 0.1 ln t, so inside the curve t_base(B + d) / T = exp(-d / 0.1).
TOKENS = np.geomspace(1_000, 64_000, 7)
CURVE = 5 - 0.1 * np.log(TOKENS)


def test_multiplier_is_the_difference_mapped_through_the_measured_curve_and_bounded_outside_it():
    base = analysis.Baseline(TOKENS, CURVE[None, :], TOKENS[3])  # T = 8,000: measured from T/8 to 8T
    m, side = base.multiplier(0.02)  # worse by 0.02 bpb: the baseline got there at T * exp(-0.2)
    assert m == pytest.approx(math.exp(-0.2))
    assert side is None
    assert base.multiplier(0.0) == (1.0, None)
    assert base.diff_for(math.exp(-0.2)) == pytest.approx(0.02)
    assert base.multiplier(-0.02)[0] == pytest.approx(math.exp(0.2))
    # beyond the measured range a bound, never an extrapolated number
    assert base.multiplier(-0.5) == (pytest.approx(8.0), "above")
    assert base.multiplier(0.5) == (pytest.approx(0.125), "below")
    assert base.diff_for(10.0) is None
    iv = stats.paired_interval([-0.3, -0.5, -0.4])
    block = analysis.multiplier_block(base, iv)
    assert (block["value"], block["bounds"]["value"]) == (pytest.approx(8.0), ">")
    assert analysis.fmt_multiplier(block) == ">8.00"
    assert block["range"] == pytest.approx([0.125, 8.0])


def test_the_multiplier_interval_widens_with_each_seeds_own_curve_and_keeps_the_call():
    # Two seeds whose curves differ in slope: the interval's ends are mapped through each and the mean.
    budgets = np.array([2_000.0, 4_000.0, 8_000.0, 16_000.0])
    curves = np.array([5 - 0.1 * np.log(budgets), 5.2 - 0.2 * np.log(budgets)])
    base = analysis.Baseline(budgets, curves, 8_000)
    iv = stats.Interval(-0.02, -0.03, -0.01, 2, 0.01)
    block = analysis.multiplier_block(base, iv)
    steep, shallow = math.exp(0.03 / 0.2), math.exp(0.03 / 0.1)  # the ci_high end: d = -0.03
    assert block["ci_high"] == pytest.approx(shallow, rel=1e-6)
    assert block["ci_low"] == pytest.approx(math.exp(0.01 / 0.2), rel=1e-6)
    assert block["ci_low"] > 1  # d's interval excludes 0, so m's excludes 1
    assert steep < block["ci_high"]


def test_a_seed_whose_finished_run_at_t_is_worse_than_a_shorter_one_keeps_m0_at_1():
    # Seed 5 of the demo at proxy_1m@294,912 (2026-12-03): its finished run at T is worse than at T/2.
    # Mapped through that curve, d = 0 read 0.31x, so raw against itself got [0.31, 1.00] and a recipe
    # called better (d's interval below 0) got a multiplier interval reaching down to 0.39.
    budgets = np.array([73_728.0, 147_456.0, 294_912.0, 589_824.0])
    curves = np.array([[3.2018, 3.1413, 3.0210, 2.7927], [3.1976, 3.1259, 3.1761, 2.8665]])
    base = analysis.Baseline(budgets, curves, 294_912)
    assert base.multiplier(0.0, curves[1]) == (1.0, None)
    itself = analysis.multiplier_block(base, stats.paired_interval([0.0, 0.0]))
    assert (itself["value"], itself["ci_low"], itself["ci_high"]) == (1.0, 1.0, 1.0)
    called = analysis.multiplier_block(base, stats.Interval(-0.089, -0.153, -0.026, 6, 0.07))
    assert called["ci_low"] > 1  # d's interval excludes 0, so m's excludes 1 on every seed's curve
    # seed 5, better by 0.02: on its envelope (3.1976, 3.1259, 3.1259, 2.8665) its own B = 3.1761 is first
    # reached at 73,728 * 2^0.300 and B - 0.02 at 73,728 * 2^0.579, interpolated in log-tokens
    m, side = base.multiplier(-0.02, curves[1])
    step = 3.1976 - 3.1259
    assert (m, side) == (pytest.approx(2 ** ((3.1976 - 3.1561) / step - (3.1976 - 3.1761) / step)), None)
    # better by 0.1 reaches past 2T on that scale: a bound at the measured range's end, not a number
    assert base.multiplier(-0.1, curves[1]) == (2.0, "above")


def test_power_pools_the_verdict_pairs_spread_with_the_runs_other_pairs():
    base = analysis.Baseline(TOKENS, CURVE[None, :], TOKENS[3])
    heads = {
        "raw": np.array([[1.00], [2.00], [3.00]]),
        "a": np.array([[1.01], [2.02], [3.03]]),  # a - raw: 0.01, 0.02, 0.03 (sd 0.01)
        "b": np.array([[1.00], [1.99], [3.01]]),  # b - raw: 0.00, -0.01, 0.01 (sd 0.01)
        "null": np.array([[1.00], [2.04], [3.00]]),  # null - raw: 0, 0.04, 0 (sd 0.04 / sqrt(3))
    }
    pairs = analysis.Pairs(heads, ["raw", "a", "b"], "raw")
    pw = analysis.power(base, pairs, 3, ("a", "raw"))
    assert pw["pair"] == ["a", "raw"]
    # no calibrated noise: a - raw pooled with b - raw (both sd 0.01), df 2 + 2, not the pair's own 2
    assert (pw["sd_diff_bpb"], pw["sd_dof"]) == (pytest.approx(0.01), 4)
    assert pw["sd_source"] == "pooled over 2 pairs with the baseline"
    # (t_.975,4 + t_.8,4) * 0.01 / sqrt(3) = (2.7764 + 0.9410) * 0.01 / 1.7321
    assert pw["mde_bpb"] == pytest.approx(0.021462, abs=1e-6)
    assert pw["mde_multiplier"]["worse"] == pytest.approx(math.exp(-pw["mde_bpb"] / 0.1))
    lo, hi = pw["sd_interval"]  # the spread's own 95% interval (chi-square, df 4) and the MDE at its ends
    assert (lo, hi) == (
        pytest.approx(0.01 * math.sqrt(4 / 11.1433), rel=1e-4),
        pytest.approx(0.01 * math.sqrt(4 / 0.4844), rel=1e-4),
    )
    assert pw["mde_bpb_interval"][0] < pw["mde_bpb"] < pw["mde_bpb_interval"][1]
    assert "pooled_over" not in pw
    row = next(r for r in pw["seeds_needed"] if r["multiplier"] == 0.8)
    assert row["diff_bpb"] == pytest.approx(-0.1 * math.log(0.8))  # 0.0223: n = 3 gives 0.0215 at df 4
    assert row["seeds"] == 4
    assert set(pw["by_pair"]) == {"a", "b", "null"}
    null = pw["by_pair"]["null"]
    # null - raw pooled with a - raw and b - raw: (2 * (0.04 / sqrt(3))^2 + 2 * 0.01^2 + 2 * 0.01^2) / 6
    sd = math.sqrt((2 * (0.04 / math.sqrt(3)) ** 2 + 4 * 0.01**2) / 6)
    assert (null["sd_diff_bpb"], null["sd_dof"]) == (pytest.approx(sd), 6)
    assert null["mde_bpb"] == pytest.approx(stats.mde(sd, 3, dof=6))
    # with a calibrated prior the pair's own spread is pooled with it instead
    prior = analysis.Noise(0.02, 40, "fresh seeds")
    pp = analysis.power(base, pairs, 3, ("a", "raw"), prior)
    assert pp["sd_dof"] == 42
    assert pp["sd_diff_bpb"] == pytest.approx(math.sqrt((40 * 0.02**2 + 2 * 0.01**2) / 42))
    # every call reads the pair's own interval: a - raw with its own sd, not one shared by a and b
    iv = pairs.interval("a", "raw")
    assert (iv.sd, iv.value, iv.n) == (pytest.approx(0.01), pytest.approx(0.02), 3)
    assert iv.ci_high - iv.value == pytest.approx(stats.t_quantile(0.975, 2) * 0.01 / math.sqrt(3))
    # without a baseline (a caller that does not name one): the noisiest pair of members, conservatively
    # sds: raw - a 0.01, raw - null 0.0231, a - null (0.01, -0.02, 0.03) 0.0252
    anon = analysis.power(base, analysis.Pairs(heads, ["raw", "a", "null"]), 3)
    assert anon["pair"] == ["a", "null"]
    assert anon["sd_diff_bpb"] == pytest.approx(math.sqrt(0.0019 / 3))
    assert "by_pair" not in anon
    rank = analysis.ranking(heads, pairs)
    sds = {(p["a"], p["b"]): p["diff_bpb"]["sd"] for p in rank["pairs"]}
    assert sds[("raw", "a")] == pytest.approx(0.01)
    assert sds[("raw", "null")] == pytest.approx(0.04 / math.sqrt(3))  # a control: its own, like any pair
    assert "own per-seed differences (df = seeds - 1)" in rank["metric"]


def test_seeds_needed_is_the_smallest_n_whose_own_t_mde_reaches_the_effect():
    # sd 0.01: n = 3 -> 5.3634 * 0.01 / 1.7321 = 0.0310; n = 4 -> (3.1824 + 0.9785) * 0.01 / 2 = 0.020805
    assert stats.mde(0.01, 4) == pytest.approx((3.18245 + 0.97847) * 0.01 / 2, abs=1e-6)
    assert stats.seeds_needed(0.0223, 0.01) == 4
    assert stats.seeds_needed(0.02081, 0.01) == 4  # mde(0.01, 4) = 0.020805
    assert stats.seeds_needed(0.02080, 0.01) == 5


RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _intervals(x: Any) -> list[dict[str, Any]]:
    """Every stored paired interval (value, ci_low, ci_high, n, sd) in a results file, nested anywhere."""
    if isinstance(x, list):
        return [iv for v in x for iv in _intervals(v)]
    if not isinstance(x, dict):
        return []
    own = [x] if {"value", "ci_low", "ci_high", "n", "sd"} <= set(x) and (x["n"] or 0) >= 2 else []
    return own + [iv for v in x.values() for iv in _intervals(v)]


def test_the_committed_results_recompute_from_their_stored_means_sds_and_seeds():
    # each stored interval is mean +- t_.975,n-1 sd / sqrt(n); their per-seed values are not stored, so
    # the mean and sd are taken as stored and the interval is what this module makes of them
    files = sorted(RESULTS.glob("*.json"))
    assert {f.name for f in files} >= {
        "calibration-fresh-2026-12-06.json",
        "mix_search-web-2026-12-06.json",
        "transfer_ladder-web-2026-12-06.json",
    }
    seen = 0
    for f in files:
        for iv in _intervals(json.loads(f.read_text())):
            half = stats.t_quantile(0.975, iv["n"] - 1) * iv["sd"] / math.sqrt(iv["n"])
            again = stats.Interval(iv["value"], iv["value"] - half, iv["value"] + half, iv["n"], iv["sd"])
            assert again.as_dict() == pytest.approx(iv, abs=1e-9), f.name
            seen += 1
    assert seen >= 100
    cal = json.loads((RESULTS / "calibration-fresh-2026-12-06.json").read_text())
    for point in ("demo", "web"):
        c = cal[point]
        nulls = [stats.Interval(**d["null_minus_raw"]) for d in c["per_draw"]]
        inside = sum(not iv.excludes(0.0) for iv in nulls)
        assert inside == c["null_inside"] == 20
        lo, hi = stats.proportion_interval(inside, len(nulls))
        assert [round(lo, 3), round(hi, 3)] == c["null_inside_ci95"]
        # the curated - raw noise pooled over the draws (df 2 each), and its detectable effect at 3 seeds
        sd = math.sqrt(np.mean([d["curated_minus_raw"]["sd"] ** 2 for d in c["per_draw"]]))
        assert sd == pytest.approx(c["sd_curated_minus_raw_bpb"], abs=1e-12)
        if "mde_bpb_at_3_seeds" in c:
            assert stats.mde(sd, 3) == pytest.approx(c["mde_bpb_at_3_seeds"], abs=1e-9)
    # the web null's interval over the 20 draw means was written with the table's t_.975,19 = 2.093: the
    # library's 2.0930241 widens each end by 1.2e-7 (the rounded figure in the docs, -0.0147 to +0.0069, stays)
    web = stats.paired_interval([d["null_minus_raw"]["value"] for d in cal["web"]["per_draw"]])
    stored = cal["web"]["null_mean_diff_ci95_over_draws"]
    assert web.ci_low == pytest.approx(stored[0] - 1.24e-7, abs=1e-9)
    assert web.ci_high == pytest.approx(stored[1] + 1.24e-7, abs=1e-9)
    assert [round(web.ci_low, 4), round(web.ci_high, 4)] == [-0.0147, 0.0069]
