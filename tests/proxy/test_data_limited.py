"""The data-limited arm's analysis: each recipe's repeated share against raw's repeated pool, read off raw's
measured curve of fresh data; the arm's null deciding whether a call stands; the repetition curve beside
Muennighoff et al.'s fit."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from curate.proxy import stats
from curate.proxy.assembly.limited import limited_blocks
from curate.proxy.kinds.limited import Limited, arm_name
from curate.proxy.spec.limited import DataLimitedSpec
from curate.proxy.statistics.analysis import Baseline
from curate.proxy.statistics.repetition import muennighoff_value, ratio_on_curve

T = 1000
BUDGETS = [250, 500, 1000, 2000]


def bpb_at(t):
    """raw's finished curve of fresh data: 1.0 + 2 (t / T)^-0.5."""
    return 1.0 + 2.0 * (np.asarray(t, dtype=float) / T) ** -0.5


JITTER = np.array([0.004, -0.003, 0.001, -0.002])  # per-seed noise shared by the arms of a seed


def heads(level, spread=0.0):
    """seeds x 1 heads at T: ``level`` plus a seed's common noise and a pair-specific spread."""
    return (level + JITTER + spread * np.array([1.0, -1.0, 0.5, -0.5]))[:, None]


def _data(name, tokens, budget=T):
    return {
        "draws": {
            str(s): {"docs": 10, "tokens": tokens, "epochs_at_T": round(budget / tokens, 4)} for s in range(4)
        }
    }


def _setup(null_bias, margin=None, wild=None):
    base = Baseline(BUDGETS, np.array([bpb_at(BUDGETS) + j for j in JITTER]), T)
    fresh = float(bpb_at(T))
    spec = DataLimitedSpec(k=[1.0, 4.0], repetition=[1.0, 4.0, 16.0])
    cfg = SimpleNamespace(
        data_limited=spec,
        baseline="raw",
        null_margin=None,
        points=lambda: [SimpleNamespace(name="main", budget=T, seeds=(0, 1, 2, 3))],
    )
    lvl = {1.0: fresh + 0.001, 4.0: fresh + 0.1, 16.0: fresh + 2.5}  # raw's pool repeated e times
    arm_heads, data, arms = {}, {}, []
    for e in spec.raw_ratios():
        n = arm_name("raw", e)
        arms.append(Limited(n, of="raw", k=e))
        arm_heads[n], data[n] = heads(lvl[e], 0.003), _data(n, round(T / e))
    # curated: better than raw's pool at k = 1 (0.08 bpb), worse at k = 4 (repeated twice as often)
    for k, d in ((1.0, -0.08), (4.0, 0.03)):
        n = arm_name("curated", k)
        arms.append(Limited(n, of="curated", k=k, source="curated"))
        arm_heads[n], data[n] = heads(lvl[k] + d, 0.002), _data(n, round(T / k / 2))
        nn = f"null~k{k:g}"
        arms.append(Limited(nn, of="raw", k=k, null_of=n))
        arm_heads[nn], data[nn] = heads(lvl[k] + null_bias.get(k, 0.0), 0.002), _data(nn, round(T / k / 2))
    if wild is not None:  # a recipe repeated many times more: a far wider spread at every k
        for k in (1.0, 4.0):
            n = arm_name("wild", k)
            arms.append(Limited(n, of="wild", k=k, source="wild"))
            arm_heads[n], data[n] = heads(lvl[k] + 0.2, wild), _data(n, round(T / k / 40))
    recipes = {"curated": {"yield": 0.5, "multiplier": {"value": 1.4}}}
    if wild is not None:
        recipes["wild"] = {"yield": 0.0125, "multiplier": {"value": 1.0}}
    out = limited_blocks(
        cfg,
        arms=arms,
        arm_heads=arm_heads,
        data=data,
        base=base,
        heads={"raw": heads(fresh)},
        recipes=recipes,
        family=["curated"] + (["wild"] if wild is not None else []),
        margin=margin,
    )
    return out, base, lvl


def test_a_recipe_repeated_against_raw_repeated_is_called_at_each_k_and_read_off_raws_fresh_curve():
    out, _base, lvl = _setup({})
    rows = {(e["k"], e["recipe"]): e for e in out["data_limited"]}
    assert sorted(rows) == [(1.0, "curated"), (1.0, "null"), (4.0, "curated"), (4.0, "null")]
    one, four = rows[(1.0, "curated")], rows[(4.0, "curated")]
    assert (one["call"], four["call"]) == ("better", "worse")
    assert one["supported"]
    assert four["supported"]
    assert one["diff_bpb"]["value"] == pytest.approx(-0.08)
    assert one["per_seed_diff"] == pytest.approx([-0.081, -0.079, -0.0805, -0.0795])

    # the data-limited goodput: t_raw(R + d) / t_raw(R), R raw's pool's bpb at T, on the mean curve
    def t(b):
        return T * ((b - 1.0) / 2.0) ** -2  # the curve's inverse

    r = float(np.mean(heads(lvl[1.0])))
    assert one["goodput"]["value"] == pytest.approx(t(r - 0.08) / t(r), rel=2e-2)
    assert one["goodput"]["value"] > 1 > four["goodput"]["value"]
    assert one["epochs_at_T"] == {"recipe": 2.0, "baseline": 1.0}
    assert four["epochs_at_T"] == {"recipe": 8.0, "baseline": 4.0}
    assert one["goodput_trained_once"] == pytest.approx(0.7)  # yield x multiplier, kept beside it
    assert "raw repeated beats curated repeated" in four["sentence"]
    assert "curated repeated beats raw repeated" in one["sentence"]
    assert rows[(1.0, "null")]["passed"]
    assert rows[(1.0, "null")]["role"] == "control"


def test_a_null_that_separates_from_raws_pool_takes_the_calls_at_its_k_away():
    out, _, _ = _setup({4.0: 0.05})
    rows = {(e["k"], e["recipe"]): e for e in out["data_limited"]}
    assert not rows[(4.0, "null")]["passed"]
    assert rows[(4.0, "null")]["call"] == "worse"
    four = rows[(4.0, "curated")]
    assert four["supported"] is False
    assert "biased in the data-limited regime" in four["unsupported_reason"]
    assert "not a decision" in four["sentence"]
    assert "beats" not in four["sentence"]
    assert rows[(1.0, "curated")]["supported"]  # the other k keeps its call


def test_the_repetition_curve_prices_epochs_as_fresh_tokens_beside_muennighoff():
    out, _, _ = _setup({})
    curve = out["repetition_curve"]
    pts = {p["epochs"]: p for p in curve["points"]}
    assert sorted(pts) == [1.0, 4.0, 16.0]
    assert pts[1.0]["call"] == "not_called"
    assert pts[1.0]["muennighoff"] == 1.0
    assert pts[4.0]["muennighoff"] == pytest.approx(0.9315, abs=1e-4)
    assert pts[16.0]["muennighoff"] == pytest.approx(
        muennighoff_value(T / round(T / 16)), abs=1e-4
    )  # 16.1 epochs
    assert muennighoff_value(16) == pytest.approx(0.6616, abs=1e-4)
    # 0.1 bpb worse at 4 epochs: worth t_raw(B + 0.1) / T of fresh data (0.91), below the fit's 0.93
    worth = pts[4.0]["fresh_equivalent"]
    assert worth["value"] == pytest.approx(((float(bpb_at(T)) + 0.1 - 1) / 2) ** -2, rel=2e-2)
    assert worth["ci_high"] < 0.9315
    assert pts[4.0]["against_muennighoff"] == "more"
    # 2.5 bpb worse at 16 epochs lies beyond the curve's smallest budget: a bound, never a number
    assert pts[16.0]["fresh_equivalent"]["bounds"]["value"] == "<"
    assert pts[16.0]["fresh_equivalent"]["value"] == 0.25
    assert "loses more to repetition than large models do at 4, 16 epochs" in curve["sentence"]


def test_muennighoffs_value_and_a_ratio_off_the_measured_curve_are_bounds_not_numbers():
    assert muennighoff_value(0.5) == muennighoff_value(1.0) == 1.0
    assert muennighoff_value(8) == pytest.approx((1 + 15.4 * (1 - math.exp(-7 / 15.4))) / 8)
    base = Baseline(BUDGETS, np.array([bpb_at(BUDGETS)]), T)
    level = float(bpb_at(T))
    far = ratio_on_curve(base, level, stats.paired_interval([-0.8, -0.9, -0.85]))
    assert far["bounds"] == {"value": ">", "ci_low": ">", "ci_high": ">"}
    assert far["value"] == 2.0
    off = ratio_on_curve(base, 9.0, stats.paired_interval([-0.01, -0.02]))
    assert off["value"] is None
    assert "no ratio is read" in off["off_curve"]


def test_the_sections_ratios_are_at_least_one_and_distinct():
    from curate.core.params import RegistryError, build_params

    spec = build_params(DataLimitedSpec, {"k": [2, 8]}, where="proxy.data_limited", noun="key")
    assert spec.k == [2.0, 8.0]
    assert spec.raw_ratios() == [1.0, 2.0, 4.0, 8.0, 16.0]
    with pytest.raises(RegistryError, match=r"k\[0\]: expected a ratio >= 1 \(compute / data\), got 0.5"):
        build_params(DataLimitedSpec, {"k": [0.5]}, where="proxy.data_limited", noun="key")
    with pytest.raises(RegistryError, match=r"repeated values"):
        build_params(DataLimitedSpec, {"repetition": [2, 2]}, where="proxy.data_limited", noun="key")


def test_the_blocks_read_strictly_as_goodput_jsons_schema_and_write_back_unchanged():
    import json

    from curate.goodput.limited import LimitedEntry, RepetitionCurve

    out, _, _ = _setup({4.0: 0.05})
    d = json.loads(json.dumps(out))  # as written to the file
    for e in d["data_limited"]:
        assert LimitedEntry.from_json(e).to_json() == e
    assert RepetitionCurve.from_json(d["repetition_curve"]).to_json() == d["repetition_curve"]


def test_the_arms_null_is_held_to_the_main_nulls_margin_when_there_is_one():
    loose, _, _ = _setup({})
    tight, _, _ = _setup({}, margin=0.0005)
    (nl,) = (e for e in loose["data_limited"] if e["recipe"] == "null" and e["k"] == 1.0)
    (nt,) = (e for e in tight["data_limited"] if e["recipe"] == "null" and e["k"] == 1.0)
    assert nl["equivalence"]["margin_source"] == "what the arm's spread supports at 97.5%"
    assert nt["equivalence"]["margin_source"] == "the main null's margin"
    assert nt["equivalence"]["margin"] == 0.0005
    assert nl["passed"]
    assert not nt["passed"]
    (cur,) = (e for e in tight["data_limited"] if e["recipe"] == "curated" and e["k"] == 1.0)
    assert cur["supported"] is False
    assert "a bias of that size is not ruled out" in cur["unsupported_reason"]


def test_the_arms_null_pools_its_spread_with_its_twin_only_not_with_a_recipe_repeated_far_more():
    calm, _, _ = _setup({})
    stormy, _, _ = _setup({}, margin=0.01, wild=0.5)
    (nc,) = (e for e in calm["data_limited"] if e["recipe"] == "null" and e["k"] == 4.0)
    (ns,) = (e for e in stormy["data_limited"] if e["recipe"] == "null" and e["k"] == 4.0)
    assert ns["equivalence"]["noise"]["source"] == (
        "this run's pair (df 3) pooled with its twin curated~k4 (the same share, repeated as often) (df 3)"
    )
    # the wild recipe's spread (0.5 bpb per seed) changes nothing: the same spread as without it
    assert ns["equivalence"]["noise"]["sd"] == pytest.approx(nc["equivalence"]["noise"]["sd"], rel=1e-12)
    assert ns["equivalence"]["noise"]["dof"] == 6
    assert ns["passed"]  # within 0.01 bpb: the twin's spread is 0.002 per seed
