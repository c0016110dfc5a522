"""The transfer study's statistics (curate/proxy/statistics/transfer.py) on per-seed values whose answer is
known: a cheap point that ranks as the reference does, one that reverses every pair, a pair the reference
cannot tell from a tie, the noise ceiling against a direct computation with scipy, Holm's calls against
statsmodels, and a multiplier that falls by a known ratio per doubling of compute."""

from __future__ import annotations

import gc
import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from curate.proxy.statistics import transfer
from curate.proxy.statistics.transfer import Point

RECIPES = ["raw", "a", "b", "c"]
LEVELS = {"raw": 3.00, "a": 2.90, "b": 2.95, "c": 3.10}
WOBBLE = np.array([0.004, -0.003, 0.001, -0.002, 0.003, -0.003])  # per-seed noise, one pattern per recipe


def _point(name, compute, seeds, levels=LEVELS, *, noise=0.01, rng=0, **kw):
    r = np.random.default_rng(rng)
    bpb = {k: (v + noise * r.standard_normal(len(seeds))).tolist() for k, v in levels.items()}
    return Point(name, tuple(seeds), compute, bpb, **kw)


REF = _point("top", 30.0, range(8, 14), noise=0.002, rng=1)


def test_a_cheap_point_that_ranks_as_the_reference_scores_1_and_one_that_reverses_every_pair_0():
    same = _point("cheap", 1.0, range(4), {k: v + 0.5 for k, v in LEVELS.items()}, noise=0.0)
    flipped = _point("flip", 1.0, range(4), {k: 6.0 - v for k, v in LEVELS.items()}, noise=0.0)
    acc = transfer.decision_accuracy(same, REF, RECIPES, draws=200)
    assert acc["all_pairs_weighted"]["value"] == 1.0
    assert acc["called"]["value"] == 1.0
    assert acc["all_pairs_weighted"]["pairs"] == 6
    assert acc["called"]["pairs"] == 6  # 0.05 bpb apart at sd 0.002 on 6 seeds: every pair called
    rev = transfer.decision_accuracy(flipped, REF, RECIPES, draws=200)
    assert rev["all_pairs_weighted"]["value"] == 0.0
    assert rev["called"]["value"] == 0.0
    # no seed noise at the cheap point and every reference pair far beyond its own: no draw moves them
    assert acc["all_pairs_weighted"]["ci"] == [1.0, 1.0]
    assert rev["all_pairs_weighted"]["ci"] == [0.0, 0.0]


def test_a_pair_the_reference_cannot_tell_from_a_tie_weighs_nothing():
    # dyadic values, so every difference is exact: "tie" is raw plus a pattern of mean exactly 0 (p = 1)
    seed_noise = np.array([3, -1, 2, -4, 1, -1]) / 1024
    levels = {"raw": 3.0, "a": 2.875, "b": 2.9375, "c": 3.125}
    bpb = {k: (v + seed_noise * (i + 1)).tolist() for i, (k, v) in enumerate(levels.items())}
    bpb["tie"] = (np.array(bpb["raw"]) + np.array([1, -1, 1, -1, 1, -1]) / 128).tolist()
    ref = Point("top", tuple(range(8, 14)), 30.0, bpb)
    # the cheap point orders every pair as the reference does, but calls "tie" better than raw
    cheap_levels = {**{k: v + 0.5 for k, v in levels.items()}, "tie": 3.0 + 0.5 - 0.01}
    cheap = _point("cheap", 1.0, range(4), cheap_levels, noise=0.0)
    names = [*RECIPES, "tie"]
    rows = {(p["a"], p["b"]): p for p in transfer.pairs(ref, names, [cheap])}
    assert (rows[("raw", "tie")]["diff_bpb"], rows[("raw", "tie")]["p"], rows[("raw", "tie")]["weight"]) == (
        0.0,
        1.0,
        0.0,
    )
    assert rows[("raw", "tie")]["agrees"] == {"cheap": False}
    acc = transfer.decision_accuracy(cheap, ref, names, draws=0)
    weights = [p["weight"] for p in rows.values()]
    agree = [p["weight"] * p["agrees"]["cheap"] for p in rows.values()]
    assert acc["all_pairs_weighted"]["value"] == pytest.approx(sum(agree) / sum(weights))
    assert acc["all_pairs_weighted"]["value"] == 1.0  # the pair it gets wrong had no weight to lose
    assert acc["all_pairs_weighted"]["weight"] == pytest.approx(sum(weights), abs=1e-6)
    # the unweighted share would be 9 of 10; the reference calls the other 9 pairs, not the tie
    assert sum(p["agrees"]["cheap"] for p in rows.values()) == 9
    assert acc["called"] == {"value": 1.0, "ci": None, "pairs": 9, "draws_with_value": 0}


def test_the_reference_p_values_are_scipy_paired_t_tests():
    f = REF.matrix(RECIPES)
    mean, p = transfer._reference_tests(f[None])
    for k, (i, j) in enumerate(itertools.combinations(range(len(RECIPES)), 2)):
        assert p[0, k] == pytest.approx(sps.ttest_1samp(f[i] - f[j], 0.0).pvalue, rel=1e-12)
        assert mean[0, k] == pytest.approx(float(np.mean(f[i] - f[j])))


def test_holm_rejects_as_statsmodels_does_in_every_family_and_only_among_its_members():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.02, size=(25, 12)) ** rng.uniform(0.5, 2, size=(25, 1))
    valid = rng.random((25, 12)) > 0.3
    got = transfer.holm_rejects(p, valid)
    # statsmodels' multipletests runs gc.collect() on every call, which walks every object the test process
    # holds (about half a second a call in a `make test` worker that has imported torch and Ray): the objects
    # alive before the loop are frozen out of the collector's sight while it runs
    gc.freeze()
    try:
        for row in range(25):
            members = np.flatnonzero(valid[row])
            want = multipletests(p[row, members], alpha=0.05, method="holm")[0]
            assert got[row, members].tolist() == want.tolist()
            assert not got[row, ~valid[row]].any()
    finally:
        gc.unfreeze()
    assert 0 < got.sum() < valid.sum()  # the comparison can fail both ways
    assert transfer.holm_rejects(np.array([0.01, 0.04, 0.03])).tolist() == [True, False, False]


def test_the_interval_narrows_with_more_recipes_since_pairs_follow_from_them():
    def study(n):
        levels = {f"r{i}": 3.0 + 0.01 * i for i in range(n)}
        ref = _point("top", 30.0, range(10, 16), levels, noise=0.004, rng=5)
        cheap = _point("cheap", 1.0, range(4), levels, noise=0.012, rng=6)
        return transfer.decision_accuracy(cheap, ref, list(levels), draws=400)["all_pairs_weighted"]

    few, many = study(4), study(16)
    width = [b["ci"][1] - b["ci"][0] for b in (few, many)]
    assert width[1] < width[0] / 1.5
    for b in (few, many):
        assert b["ci"][0] <= b["value"] <= b["ci"][1]
    assert (few["pairs"], many["pairs"]) == (6, 120)


def test_the_noise_ceiling_is_half_the_reference_seeds_against_the_other_half():
    ref = _point(
        "top", 30.0, range(6), {k: 3.0 + 0.003 * i for i, k in enumerate("pqrst")}, noise=0.004, rng=9
    )
    names = list("pqrst")
    got = transfer.noise_ceiling(ref, names, draws=0)
    f = ref.matrix(names)
    num = den = 0.0
    for a in itertools.combinations(range(6), 3):
        b = [i for i in range(6) if i not in a]
        for x, y in ((list(a), b), (b, list(a))):  # x plays the cheap point, y the reference
            for i, j in itertools.combinations(range(5), 2):
                w = 1 - sps.ttest_1samp(f[i, y] - f[j, y], 0.0).pvalue
                agree = np.sign(f[i, x].mean() - f[j, x].mean()) == np.sign(np.mean(f[i, y] - f[j, y]))
                num, den = num + w * agree, den + w
    assert got["all_pairs_weighted"]["value"] == pytest.approx(num / den, rel=1e-12)
    assert 0.5 < got["all_pairs_weighted"]["value"] < 1.0
    assert (got["splits"], got["seeds_per_half"]) == (20, [3])
    counts = {
        n: transfer.noise_ceiling(_point("t", 1.0, range(n)), RECIPES, draws=0)["splits"]
        for n in (3, 4, 5, 8)
    }
    assert counts == {3: 0, 4: 6, 5: 20, 8: transfer.MAX_SPLITS}
    assert transfer.noise_ceiling(_point("t", 1.0, range(3)), RECIPES, draws=50)["all_pairs_weighted"] == {
        "value": None,
        "ci": None,
        "draws_with_value": 0,
    }


def _curved(name, compute, seeds, diffs):
    """raw at 4.0 bpb with a curve linear in log2 tokens (0.2 bpb per doubling) and recipe "f" at raw + d."""
    raw = np.full(len(seeds), 4.0) + WOBBLE[: len(seeds)]
    flat = raw - 0.1 + np.resize([0.002, -0.002], len(seeds))  # 2^0.5 at every point, seeds around it
    bpb = {"raw": raw.tolist(), "f": (raw + np.asarray(diffs)).tolist(), "flat": flat.tolist()}
    return Point(
        name, tuple(seeds), compute, bpb, (250.0, 500.0, 1000.0, 2000.0), (4.4, 4.2, 4.0, 3.8), 1000.0
    )


def _fading() -> list[Point]:
    """Three points where "f" falls by a known ratio: log2 m = -d / 0.2 on this curve, m = 2^0.5 at 1x, 2^0.3
    at 4x, 2^0 at 32x: 2^-0.1 per doubling; "flat" stays at 2^0.5."""
    eps = np.array([0.002, -0.002, 0.001, -0.001])
    return [
        _curved("p1", 1.0, range(4), -0.1 + eps),
        _curved("p4", 4.0, range(4, 8), -0.06 - eps),
        _curved("p32", 32.0, range(8, 12), 0.0 + eps),
    ]


def test_a_multiplier_that_falls_by_a_known_ratio_per_doubling_is_said_to_fade():
    pts = _fading()
    t = transfer.trend(pts, ["raw", "f", "flat"], "raw")
    f, flat = t["recipes"]["f"], t["recipes"]["flat"]
    assert f["ratio_per_doubling"] == pytest.approx(2**-0.1, rel=1e-9)
    assert [p["value"] for p in f["points"]] == pytest.approx([2**0.5, 2**0.3, 1.0], rel=1e-9)
    assert f["ci"][1] < 1.0
    assert f["verdict"] == "fades"
    assert flat["ratio_per_doubling"] == pytest.approx(1.0, abs=1e-9)
    assert flat["verdict"] == "not_shown"
    assert f["p_holm"] == pytest.approx(min(1.0, 2 * f["p"]))  # the smaller of two p-values, times 2
    assert f["sentence"].startswith("f: x0.933 per doubling of compute [")
    assert f["sentence"].endswith("it fades as compute grows over 32.0x of compute (12 seeds at 3 points)")
    assert t["summary"] == (
        "over 32.0x of compute (3 points): 1 of 2 recipes fade (Holm, 5%), 0 grow, 1 show no trend either way "
        "at these seeds"
    )


def test_no_trend_shown_says_the_fade_and_growth_its_test_would_have_called():
    """A negative trend carries its detectable effect: (z_{1 - 0.05 / (2 m)} + z_0.8) HC3 standard errors of
    the slope of ln m per doubling, m the recipes Holm tests (the first step's level), as ratios."""
    import statsmodels.api as sm
    from scipy.stats import norm

    pts = _fading()
    t = transfer.trend(pts, ["raw", "f", "flat"], "raw")
    flat = t["recipes"]["flat"]
    # the same slope fitted here, on each seed's ln multiplier against log2 compute
    xs, ys = [], []
    for p in pts:
        lm, _ = transfer._log_multipliers("flat", "raw", p)
        xs += [np.log2(p.compute)] * len(lm)
        ys += lm
    se = sm.OLS(np.array(ys), sm.add_constant(np.array(xs))).fit(cov_type="HC3").bse[1]
    assert flat["se_log"] == pytest.approx(se, rel=1e-12)
    d = (norm.ppf(1 - 0.05 / 4) + norm.ppf(0.8)) * se  # two recipes tested: alpha / 2, two-sided
    assert flat["detectable_per_doubling"] == pytest.approx([np.exp(-d), np.exp(d)], rel=1e-12)
    assert flat["detectable_per_doubling"][0] < 1 < flat["detectable_per_doubling"][1]
    below, above = flat["detectable_per_doubling"]
    assert flat["sentence"].startswith("flat: x1.000 per doubling of compute [")
    assert (
        f"no fade and no growth shown (detectable at these seeds, 80% power: x{below:.3f} or x{above:.3f} per "
        "doubling) over 32.0x of compute (12 seeds at 3 points)"
    ) in flat["sentence"]
    # more seeds at the same spread: a smaller effect is detectable
    assert transfer.detectable_per_doubling(se / 2, 2)[0] > below
    # a larger family holds each test to a stricter level: a larger effect is needed
    assert transfer.detectable_per_doubling(se, 20)[0] < below


def test_a_seed_beyond_the_measured_curve_is_a_bound_and_counted():
    pts = [
        _curved("p1", 1.0, range(4), [-0.5, -0.1, -0.1, -0.1]),
        _curved("p4", 4.0, range(4, 8), [-0.1] * 4),
    ]
    f = transfer.trend(pts, ["raw", "f"], "raw")["recipes"]["f"]
    assert (f["censored"], f["points"][0]["censored"]) == (1, 1)
    assert f["verdict"] == "bounded"  # a bound is no value: not tested, and out of the Holm family
    assert f["p_holm"] is None
    assert f["sentence"].endswith(
        ": not tested, 1 seed(s) beyond the measured curve (a bound, not a value; a longer proxy.curve "
        "measures them) (8 seeds at 2 points)"
    )
    summary = transfer.trend(pts, ["raw", "f"], "raw")["summary"]
    assert summary.endswith(
        "0 show no trend either way at these seeds, 1 not tested (a seed beyond the measured curve)"
    )
    assert transfer.trend(pts[:1], ["raw", "f"], "raw") == {
        "recipes": {},
        "summary": "fewer than two points with a measured curve: no trend to test",
    }


def test_the_study_names_the_reference_checks_seeds_disjoint_and_states_chance():
    cheap = _point("cheap", 1.0, range(4))
    mid = _point("mid", 4.0, range(4, 8))
    s = transfer.study([cheap, REF, mid], RECIPES, "raw", draws=50)
    assert s["reference"] == "top"
    assert (s["seeds_disjoint"], s["shared_seeds"], s["chance"]) == (True, {}, 0.5)
    assert sorted(s["decision_accuracy"]) == ["cheap", "mid"]
    assert len(s["pairs"]) == math.comb(4, 2)
    shared = transfer.study([cheap, REF, _point("mid", 4.0, [3, 9, 20, 21])], RECIPES, "raw", draws=0)
    assert (shared["seeds_disjoint"], shared["shared_seeds"]) == (
        False,
        {"3": ["cheap", "mid"], "9": ["top", "mid"]},
    )


def test_a_draw_of_one_reference_seed_repeated_tests_nothing_and_no_estimate_has_no_interval():
    # two reference seeds: half the draws repeat one of them, whose "differences" have no spread and would
    # look certain; those draws weigh nothing, so about half the draws have a value
    ref = _point("top", 30.0, [8, 9], noise=0.02, rng=1)
    cheap = _point("cheap", 1.0, range(4), noise=0.002, rng=2)
    acc = transfer.decision_accuracy(cheap, ref, RECIPES, draws=400)
    assert 160 < acc["all_pairs_weighted"]["draws_with_value"] < 240
    # Holm over 6 pairs at df 1 calls nothing: no estimate, and no interval from the draws that call
    assert acc["called"]["value"] is None
    assert acc["called"]["ci"] is None
    assert acc["called"]["pairs"] == 0
    # three seeds: the full data call nothing, but resamples that repeat a seed understate the spread and
    # call some pairs; those draws are counted, and still give no interval to an estimate that is not there
    ref3 = _point("top", 30.0, [8, 9, 10], noise=0.04, rng=1)
    called = transfer.decision_accuracy(cheap, ref3, RECIPES, draws=400)["called"]
    assert (called["value"], called["ci"], called["pairs"]) == (None, None, 0)
    assert called["draws_with_value"] > 0


def _choose(points):
    acc = {p.name: transfer.decision_accuracy(p, REF, RECIPES, draws=300) for p in points}
    return transfer.point_choice(points, REF, RECIPES, acc, draws=300), acc


def test_the_point_to_use_is_the_cheapest_shown_above_chance_that_no_costlier_one_beats():
    same = _point("p1", 1.0, range(4), {k: v + 0.5 for k, v in LEVELS.items()}, noise=0.0)
    same4 = _point("p4", 4.0, range(4, 8), {k: v + 0.3 for k, v in LEVELS.items()}, noise=0.0)
    flipped = _point("p1", 1.0, range(4), {k: 6.0 - v for k, v in LEVELS.items()}, noise=0.0)
    flipped4 = _point("p4", 4.0, range(4, 8), {k: 6.0 - v for k, v in LEVELS.items()}, noise=0.0)
    # both rank as the reference does: the cheaper is used, and the difference is exactly 0 in every draw
    c, _ = _choose([same4, same])  # given in any order: sorted by compute
    assert c["point"] == "p1"
    # (draws holding one recipe only, about 1 in 64, have no pair and no value)
    assert c["differences"] == {"p4 - p1": {"value": 0.0, "ci": [0.0, 0.0], "draws_with_value": 295}}
    assert c["passed_over"] == {}
    assert c["reason"].startswith("the cheapest point shown above chance (100% [100%, 100%], chance 50%)")
    # the cheaper one reverses every pair: it is not above chance, so the costlier one is used
    c, _ = _choose([flipped, same4])
    assert c["point"] == "p4"
    assert c["differences"]["p4 - p1"]["value"] == 1.0
    assert c["passed_over"] == {"p1": "not shown above chance (0% [0%, 0%], chance 50%)"}
    # neither is above chance: none is recommended, and it says why
    c, _ = _choose([flipped, flipped4])
    assert c["point"] is None
    assert c["reason"] == "no cheap point's weighted decision accuracy is shown above chance"


def test_a_cheap_point_above_chance_that_a_costlier_one_beats_is_passed_over():
    # twenty recipes 0.05 bpb apart; the cheap point reverses the order of the last eight (28 of the 190
    # pairs), every seed alike; the costlier point orders every pair as the reference does
    names = [f"r{i:02d}" for i in range(20)]
    levels = {n: 3.0 + 0.05 * i for i, n in enumerate(names)}
    ref = _point("top", 30.0, range(8, 14), levels, noise=0.002, rng=1)
    cheap_levels = {n: levels[n] if i < 12 else 3.0 + 0.05 * (31 - i) for i, n in enumerate(names)}
    cheap = _point("p1", 1.0, range(4), cheap_levels, noise=0.0)
    costly = _point("p4", 4.0, range(4, 8), {k: v + 0.3 for k, v in levels.items()}, noise=0.0)
    acc = {p.name: transfer.decision_accuracy(p, ref, names, draws=300) for p in (cheap, costly)}
    w = acc["p1"]["all_pairs_weighted"]
    assert w["value"] == pytest.approx(162 / 190, abs=1e-6)  # the weights are 1 - p, p ~ 1e-9 here
    assert w["ci"][0] > 0.5  # shown above chance on its own
    c = transfer.point_choice([cheap, costly], ref, names, acc, draws=300)
    d = c["differences"]["p4 - p1"]
    assert d["value"] == pytest.approx(28 / 190, abs=1e-6)
    assert d["ci"][0] > 0  # ... but the costlier point, in the same draws, is shown better
    assert c["point"] == "p4"
    lo, hi = d["ci"]
    assert c["passed_over"] == {"p1": f"p4 is shown better (+15% [{lo:+.0%}, {hi:+.0%}])"}
    # alone, the cheap point is used: nothing costlier beats it
    alone = transfer.point_choice([cheap], ref, names, acc, draws=300)
    assert (alone["point"], alone["differences"], alone["passed_over"]) == ("p1", {}, {})
