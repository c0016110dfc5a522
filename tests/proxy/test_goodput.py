"""Goodput math on synthetic curves with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy.goodput import (
    RecipeCurves,
    decision_agreement,
    fit_power_law,
    fit_tail,
    goodput_report,
    learning_signal,
    multiplier,
    percentile_ci,
    ranking,
    slope_curve,
    tokens_to_reach,
    value_at,
)

# Baseline b(t) = 2 + 10 t^-0.5 at t = 100, 400, 1600, 6400: 3.0, 2.5, 2.25, 2.125 (exact in binary).
T = [100, 400, 1600, 6400]
B = [3.0, 2.5, 2.25, 2.125]


def test_interpolation_on_a_node_and_between_nodes_is_exact():
    assert tokens_to_reach(T, B, 2.25) == (1600.0, False)
    assert tokens_to_reach(T, B, 3.0) == (100.0, False)
    t, ext = tokens_to_reach(T, B, 2.375)  # halfway between 2.5 and 2.25: geometric midpoint of 400, 1600
    assert not ext
    assert t == pytest.approx(800.0, rel=1e-12)
    assert multiplier(np.array(T), np.array(B), 2.25, 6400) == (0.25, False)
    assert multiplier(np.array(T), np.array(B), 2.125, 6400) == (1.0, False)


def test_noisy_baseline_uses_the_first_crossing_of_its_running_minimum():
    # The bump at 1600 (2.6) is ignored: 2.5 was already reached at 400.
    assert tokens_to_reach(T, [3.0, 2.5, 2.6, 2.125], 2.5) == (400.0, False)
    t, _ = tokens_to_reach(T, [3.0, 2.5, 2.6, 2.0], 2.25)  # envelope 2.5 -> 2.0 between 1600 and 6400
    assert t == pytest.approx(math.exp((math.log(1600) + math.log(6400)) / 2), rel=1e-12)


def test_power_law_fit_recovers_the_generating_law_and_extrapolates_flagged():
    law = fit_power_law(T, B)
    assert law.a == pytest.approx(2.0, abs=1e-6)
    assert law.c == pytest.approx(10.0, rel=1e-5)
    assert law.alpha == pytest.approx(0.5, rel=1e-6)
    # 2.0625 = 2 + 10 t^-0.5  <=>  t = 160^2 = 25600 tokens: m = 4, extrapolated.
    m, ext = multiplier(np.array(T), np.array(B), 2.0625, 6400)
    assert ext
    assert m == pytest.approx(4.0, rel=1e-5)
    # Worse than the first point: extrapolated backwards; 4.0 = 2 + 10 t^-0.5 <=> t = 25.
    t, ext = tokens_to_reach(T, B, 4.0)
    assert ext
    assert t == pytest.approx(25.0, rel=1e-5)
    # At or below the asymptote: unreachable.
    assert tokens_to_reach(T, B, 1.9, law) == (math.inf, True)


def test_extrapolation_is_anchored_at_the_curve_end_so_better_never_means_m_below_one():
    # Flat start, then a drop: no power law fits all of it. Just below the last point must give m >= 1.
    t, b = [1000, 2000, 5000, 10000, 20000, 50000], [3.81, 3.79, 3.63, 3.45, 3.28, 3.25]
    m, ext = multiplier(np.array(t), np.array(b), 3.25 - 1e-9, 50000)
    assert ext
    assert m == pytest.approx(1.0, abs=1e-6)
    assert m >= 1.0
    m2, _ = multiplier(np.array(t), np.array(b), 3.20, 50000)
    assert m2 > m
    # Tail fit: only points at >= 1/16 of the last token count enter the fit.
    assert fit_tail(t, b) == fit_power_law(t[2:], b[2:])  # 50000/16 = 3125: from 5000 on


def test_learning_signal_slope_and_value_at():
    assert learning_signal(2.125, 2.0625, 6400) == 0.0625 / 6400
    mids, slope = slope_curve(T, B)
    assert mids == [200.0, 800.0, 3200.0]
    assert slope == pytest.approx([0.5 / math.log(4), 0.25 / math.log(4), 0.125 / math.log(4)], rel=1e-12)
    assert value_at(T, B, 800.0) == pytest.approx(2.375, rel=1e-12)
    assert value_at(T, B, 1600) == 2.25


def test_ranking_calls_only_separated_pairs_and_decision_agreement():
    r = ranking({"a": 1.0, "b": 1.1, "c": 2.0}, {"a": (0.9, 1.05), "b": (1.0, 1.2), "c": (1.9, 2.1)})
    assert r["order"] == ["a", "b", "c"]
    assert r["tiers"] == [["a", "b"], ["c"]]
    assert [(p["a"], p["b"], p["better"]) for p in r["pairs"]] == [
        ("a", "b", None),
        ("a", "c", "a"),
        ("b", "c", "b"),
    ]
    assert decision_agreement({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}) == 2 / 3
    assert decision_agreement({"a": 1}, {"a": 1}) is None
    assert percentile_ci([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == (2.0, 4.0)


def test_goodput_report_end_to_end_on_exact_curves():
    base = np.array([B, B, B])
    d = 2.0**-6
    cur = np.array([[3.0, 2.5, 2.3, 2.25 + d], [3.0, 2.5, 2.3, 2.25], [3.0, 2.5, 2.3, 2.25 - d]])
    recipes = {
        "raw": RecipeCurves(
            bpb={"x": base, "y": base}, tokens_kept=1000, device_s=3600.0, tokens_trained=19200
        ),
        "curated": RecipeCurves(
            bpb={"x": cur, "y": cur}, tokens_kept=600, device_s=1800.0, tokens_trained=19200
        ),
    }
    rep = goodput_report(recipes, baseline="raw", tokens=T, budget=6400, n_boot=500)
    raw, c = rep["recipes"]["raw"], rep["recipes"]["curated"]
    assert raw["multiplier"] == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "extrapolated": False}
    assert raw["yield"] == 1.0
    assert raw["goodput"]["value"] == 1.0
    assert raw["effective_tokens"] == 1000
    # Curated ends at 2.25 = baseline at 1600 tokens: m = 0.25; yield 0.6; goodput 0.15.
    assert c["multiplier"]["value"] == 0.25
    assert not c["multiplier"]["extrapolated"]
    assert c["multiplier"]["ci_low"] < 0.25 < c["multiplier"]["ci_high"]
    assert c["yield"] == 0.6
    assert c["goodput"]["value"] == pytest.approx(0.15, rel=1e-12)
    assert c["effective_tokens"] == pytest.approx(150.0, rel=1e-12)
    assert c["learning_signal_per_token"] == (2.125 - 2.25) / 6400
    assert c["tokens_in"] == 1000
    assert c["tokens_kept"] == 600
    # 19200 tokens in 0.5 device-hours = 38400 tokens/h, times m = 0.25.
    assert c["costs"]["effective_tokens_per_device_hour"] == pytest.approx(9600.0, rel=1e-12)
    assert c["curves"]["x"]["bpb_mean"] == pytest.approx([3.0, 2.5, 2.3, 2.25], rel=1e-12)
    assert c["curves"]["x"]["tokens"] == T
    assert rep["ranking"]["order"] == ["raw", "curated"]
    assert rep["ranking"]["pairs"][0]["better"] == "raw"
    # At T/4 = 1600 raw (2.25) beats curated (2.3), as at T: full agreement.
    assert rep["decision_agreement"] == 1.0


def test_a_recipe_that_beats_the_baseline_final_bpb_gets_m_above_one():
    # The baseline flattens early then drops at the end, so a global power-law fit misses its last point.
    # A target just below the observed final bpb must still need MORE tokens than the baseline trained.
    tokens = [100, 400, 1600, 6400]
    bpb = [3.0, 2.6, 2.5, 2.2]
    t, ext = tokens_to_reach(tokens, bpb, 2.19)
    assert ext
    assert t > 6400
    m, ext = multiplier(np.array(tokens), np.array(bpb), 2.19, 6400)
    assert ext
    assert m > 1
