"""Goodput's descriptive math on synthetic curves with known answers; nothing extrapolated."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy.statistics.descriptive import (
    CURVES_NOTE,
    RecipeCurves,
    goodput_report,
    learning_signal,
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
    assert tokens_to_reach(T, B, 2.125) == (6400.0, False)
    t, ext = tokens_to_reach(T, B, 2.375)  # halfway between 2.5 and 2.25: geometric midpoint of 400, 1600
    assert not ext
    assert t == pytest.approx(800.0, rel=1e-12)


def test_noisy_baseline_uses_the_first_crossing_of_its_running_minimum():
    # The bump at 1600 (2.6) is ignored: 2.5 was already reached at 400.
    assert tokens_to_reach(T, [3.0, 2.5, 2.6, 2.125], 2.5) == (400.0, False)
    t, _ = tokens_to_reach(T, [3.0, 2.5, 2.6, 2.0], 2.25)  # envelope 2.5 -> 2.0 between 1600 and 6400
    assert t == pytest.approx(math.exp((math.log(1600) + math.log(6400)) / 2), rel=1e-12)


def test_outside_the_measured_curve_there_is_no_value_only_a_bound():
    # Better than the curve's best or worse than its first point: no law is fitted to reach it.
    with pytest.raises(ValueError, match=r"bpb 2.0625 is outside the measured curve's range \[2.125, 3.0\]"):
        tokens_to_reach(T, B, 2.0625)
    with pytest.raises(ValueError, match=r"bpb 4.0 is outside the measured curve's range"):
        tokens_to_reach(T, B, 4.0)


def test_learning_signal_slope_and_value_at():
    assert learning_signal(2.125, 2.0625, 6400) == 0.0625 / 6400
    mids, slope = slope_curve(T, B)
    assert mids == [200.0, 800.0, 3200.0]
    assert slope == pytest.approx([0.5 / math.log(4), 0.25 / math.log(4), 0.125 / math.log(4)], rel=1e-12)
    assert value_at(T, B, 800.0) == pytest.approx(2.375, rel=1e-12)
    assert value_at(T, B, 1600) == 2.25


def test_ranking_calls_only_separated_pairs():
    r = ranking({"a": 1.0, "b": 1.1, "c": 2.0}, {"a": (0.9, 1.05), "b": (1.0, 1.2), "c": (1.9, 2.1)})
    assert r["order"] == ["a", "b", "c"]
    assert r["tiers"] == [["a", "b"], ["c"]]
    assert [(p["a"], p["b"], p["better"]) for p in r["pairs"]] == [
        ("a", "b", None),
        ("a", "c", "a"),
        ("b", "c", "b"),
    ]
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
    # Descriptive only: the multiplier, goodput and effective tokens are the paired statistic's
    # (assemble), never a curve's; nothing is read from a checkpoint before T or from a fitted law.
    assert set(c) == {
        "learning_signal_per_token",
        "bpb_at_T",
        "yield",
        "tokens_in",
        "tokens_kept",
        "costs",
        "curves",
    }
    assert set(rep) == {"recipes", "baseline", "ranking", "curves_note", "bootstrap"}
    assert rep["curves_note"] == CURVES_NOTE
    assert "no number in this file" in CURVES_NOTE
    assert raw["yield"] == 1.0
    assert c["yield"] == 0.6
    assert c["bpb_at_T"]["value"] == 2.25
    assert c["bpb_at_T"]["ci_low"] < 2.25 < c["bpb_at_T"]["ci_high"]
    assert c["learning_signal_per_token"] == (2.125 - 2.25) / 6400
    assert c["tokens_in"] == 1000
    assert c["tokens_kept"] == 600
    assert c["costs"] == {"proxy_device_s": 1800.0, "proxy_tokens_trained": 19200}
    assert c["curves"]["x"]["bpb_mean"] == pytest.approx([3.0, 2.5, 2.3, 2.25], rel=1e-12)
    assert c["curves"]["x"]["tokens"] == T
    assert rep["ranking"]["order"] == ["raw", "curated"]
    assert rep["ranking"]["pairs"][0]["better"] == "raw"
