"""benchmarks/transfer_design.py: a point's per-seed headline bpb read from its run folders (the baseline at
its branch, the controls left out), the recipe + seed + noise fit, and simulated studies whose answer is
known (no noise: every pair ordered alike, an interval of no width; more recipes: a narrower interval)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import transfer_design as td

SETS = {"wiki": 3.0, "arc": 2.5, "heldout": 9.0}  # heldout is not a headline set


def _run(folder: Path, tokens: int, budget: int | None, final: dict, branches: dict | None = None) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"tokens": tokens, "eval_budget": budget}))
    res = {"tokens": tokens, "final_bpb": final, "branches": branches or {}}
    (folder / "result.json").write_text(json.dumps(res))


def test_a_points_runs_are_read_at_its_budget_without_the_controls_or_unfinished_runs(tmp_path: Path) -> None:
    p = tmp_path / "proxy"
    # raw ran on to 4T: its value is its branch at the budget, not its final evaluation
    _run(
        p / "raw" / "seed0",
        400,
        100,
        {"wiki": 1.0, "arc": 1.0},
        {"100": {"wiki": 3.5, "arc": 2.5, "heldout": 7}},
    )
    _run(p / "curated" / "seed0", 100, None, {"wiki": 3.0, "arc": 2.0, "heldout": 5.0})
    _run(p / "null" / "seed0", 100, None, SETS)
    (p / "curated" / "seed1").mkdir()  # unfinished: no result.json
    (p / "data" / "curated").mkdir(parents=True)
    got = td.read_point(p)
    assert got == {"raw": {0: 3.0}, "curated": {0: 2.5}}
    assert td.point_folder(tmp_path, "proxy_1m@100", "proxy_1m@100") == p
    assert td.point_folder(tmp_path, "proxy_5m@50", "proxy_1m@100") == p / "ladder" / "proxy_5m@50"


def test_only_recipes_with_every_seed_enter_the_matrix() -> None:
    recipes, seeds, m = td.complete({"raw": {0: 3.0, 1: 3.5}, "a": {0: 2.0, 1: 2.5}, "b": {0: 1.0}})
    assert (recipes, seeds) == (["a", "raw"], [0, 1])
    assert m.tolist() == [[2.0, 2.5], [3.0, 3.5]]
    # a run with more seeds for some recipes, read at the seeds every recipe has
    assert td.complete({"raw": {0: 3.0, 7: 1.0}, "b": {0: 1.0}}, [0])[:2] == (["b", "raw"], [0])


def test_the_fit_separates_recipes_seeds_and_noise() -> None:
    mu, seed = np.array([3.0, 2.5, 2.0]), np.array([-0.25, 0.0, 0.25, 0.0])
    f = td.fit(mu[:, None] + seed[None, :])
    assert f.means.tolist() == [3.0, 2.5, 2.0]
    assert f.seed_sd == pytest.approx(np.std(seed, ddof=1), abs=1e-12)
    assert f.noise_sd == pytest.approx(0.0, abs=1e-12)
    noisy = mu[:, None] + seed[None, :] + np.array([[1, -1, 1, -1], [-1, 1, -1, 1], [0, 0, 0, 0]]) * 0.01
    # residuals of the additive fit: the pattern less its row and column means; 6 degrees of freedom
    res = np.array([[1, -1, 1, -1], [-1, 1, -1, 1], [0, 0, 0, 0]]) * 0.01
    assert td.fit(noisy).noise_sd == pytest.approx(np.sqrt((res**2).sum() / 6), abs=1e-12)


def test_without_noise_every_simulated_study_orders_every_pair_alike_with_no_width() -> None:
    f = td.Fit(np.array([3.0, 2.9, 2.7, 2.4, 2.0]), 0.0, 0.0)
    row = td.simulate(f, f, 5, 4, 6, reps=3, draws=50, seed=0)
    assert row["accuracy_mean"] == 1.0
    assert row["width_mean"] == 0.0
    assert row["width_at_most_floor"] == 1.0
    assert row["pairs"] == 10
    assert row["called_pairs_mean"] == 10.0  # no spread: every pair's sign is certain


def test_more_recipes_give_a_narrower_interval_and_the_fewest_within_the_floor_is_read_off() -> None:
    rng = np.random.default_rng(0)
    means = rng.normal(3.0, 0.05, 11)
    cheap, ref = td.Fit(means, 0.035, 0.03), td.Fit(means + rng.normal(0, 0.02, 11), 0.04, 0.035)
    rows = td.design(cheap, ref, counts=(8, 40), seeds=((4, 6),), reps=4, draws=100)
    few, many = rows
    assert (few["recipes"], many["recipes"]) == (8, 40)
    assert many["width_mean"] < few["width_mean"]
    assert td.smallest_meeting(rows, 4, 6) == (40 if many["width_mean"] <= td.FLOOR else None)
    assert td.smallest_meeting(rows, 8, 6) is None


def test_a_point_the_fit_cannot_read_is_refused_saying_why(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no point big@8: .* does not exist"):
        td.check_point("big@8", [], [], tmp_path / "missing")
    with pytest.raises(SystemExit, match=r"point p@1 has 1 recipe\(s\) finished on every one of its 3 seed"):
        td.check_point("p@1", ["raw"], [0, 1, 2], tmp_path)
    with pytest.raises(SystemExit, match=r"has 2 recipe\(s\) finished on every one of its 1 seed\(s\) \[4\]"):
        td.check_point("p@1", ["raw", "curated"], [4], tmp_path)
    td.check_point("p@1", ["raw", "curated"], [0, 1], tmp_path)  # enough: no refusal
