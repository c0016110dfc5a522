"""Seeds until decided: the group-sequential design's boundaries, its decisions, and its error, power and
seeds against the fixed design in a small simulation (the full one: benchmarks/sequential_design.py)."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from curate.proxy.statistics.sequential import design, fixed_power, fixed_seeds, looks_for, simulate


def test_the_fixed_design_and_the_looks_beside_it():
    assert fixed_seeds(alpha=0.025, power=0.8, effect=1.0) == 10  # (z_.9875 + z_.8)^2 = 9.7
    assert fixed_power(10, alpha=0.025, effect=1.0) == pytest.approx(
        0.8214, abs=1e-4
    )  # Phi(sqrt(10) - 2.2414)
    assert looks_for(10) == (3, 5, 7, 8, 10, 12)
    assert looks_for(5) == (2, 3, 4, 5, 6)
    with pytest.raises(ValueError, match="looks: expected increasing seed counts from 2 up"):
        design([4, 3], alpha=0.025, power=0.8, effect=1.0)


def test_the_boundaries_spend_little_early_and_end_near_the_fixed_test():
    d = design((3, 5, 7, 8, 10, 12), alpha=0.025, power=0.8, effect=1.0)
    assert list(d.efficacy) == sorted(d.efficacy, reverse=True)  # O'Brien-Fleming: wide first, then narrower
    assert d.efficacy[0] > 4.0
    assert sps.norm.ppf(1 - 0.025 / 2) < d.efficacy[-1] < 2.6  # a little above the fixed test's 2.24
    assert d.futility[-1] == d.efficacy[-1]  # the last look decides
    assert all(f <= c for f, c in zip(d.futility, d.efficacy, strict=True))
    assert d.decide(0, -5.0) == "better"
    assert d.decide(0, 5.0) == "worse"
    assert d.decide(0, 0.01) == "futile"
    assert d.decide(1, 1.6) is None  # between the boundaries: take the next look's seeds
    assert d.decide(5, 1.6) == "futile"


def test_family_error_power_and_seeds_against_the_fixed_design():
    d = design(looks_for(10), alpha=0.025, power=fixed_power(10, alpha=0.025, effect=1.0), effect=1.0)
    null = simulate(d, [0.0, 0.0], draws=4000, seed=5)
    assert null["family_error"] <= 0.05
    assert null["family_error"] < null["family_error_fixed"] + 0.01
    at = simulate(d, [1.0, -1.0], draws=4000, seed=6)
    assert abs(at["power"][0] - at["power_fixed"][0]) < 0.04
    mix = simulate(d, [0.0, 1.0, 2.0], draws=4000, seed=7)
    assert mix["cpu_ratio"] < 0.75
    assert mix["expected_seeds"][2] < mix["expected_seeds"][1]  # a larger effect is decided sooner
