"""benchmarks/gate_draws.py: the gate's error rates are decided afterwards from every recorded draw, by the
run's own gate; the first healthy draws calibrate the planted control's spread and stay out of the rates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import gate_draws

SECTION = {"budget": 300_000, "noise": {"sd": 0.02, "dof": 40, "source": "test"}, "planted": 0.6}


def _draw(rng, seeds, broken="", planted_shift=0.05, null_shift=0.0):
    raw = 3.0 + rng.normal(0, 0.05, len(seeds))
    null = raw + null_shift + rng.normal(0, 0.01, len(seeds))
    return {
        "broken": broken,
        "controlled": "curated",
        "seeds": list(seeds),
        "per_seed_bpb": {
            "raw": raw.tolist(),
            "curated": (raw - 0.02 + rng.normal(0, 0.01, len(seeds))).tolist(),
            "null": null.tolist(),
            "planted": (null + planted_shift + rng.normal(0, 0.01, len(seeds))).tolist(),
        },
    }


def test_rates_from_recorded_draws_calibration_left_out_and_a_first_look():
    rng = np.random.default_rng(0)
    healthy = [_draw(rng, range(10 * k, 10 * k + 4)) for k in range(8)]
    broken = [
        _draw(rng, range(500 + 10 * k, 504 + 10 * k), "shuffle_tokens", planted_shift=0.0) for k in range(3)
    ]
    point = {"draws": healthy + broken}
    out = gate_draws.summary(point, SECTION, calibration=3)
    assert (out["draws"], out["calibration_draws"], out["seeds_judged"]) == (5, 3, 4)
    assert out["planted_noise"]["dof"] == 9  # 3 draws x (4 - 1)
    assert out["planted_noise"]["source"] == "planted - null on 3 fresh draws (seeds 0-23)"
    # healthy: the null within its margin and planted (+0.05 bpb, spread 0.014) called worse every time
    assert out["false_alarm_rate"]["k"] == 0
    assert (out["planted_power"]["k"], out["planted_power"]["n"]) == (5, 5)
    # a broken instrument (planted indistinguishable from the null) is caught every time
    assert out["broken_catch_rate"]["k"] == 3
    assert out["broken_by_mode"]["shuffle_tokens"]["n"] == 3
    assert out["false_alarm_rate"]["ci95"][1] == pytest.approx(
        1 - 0.025 ** (1 / 5)
    )  # Clopper-Pearson, 0 of 5
    first = gate_draws.summary(point, SECTION, calibration=3, at_seeds=3)
    assert first["seeds_judged"] == 3
    assert first["planted_noise"]["dof"] == 6
    assert [len(d["seeds"]) for d in point["draws"]] == [4] * 11  # the recorded draws are left whole
    pooled = out["null_minus_raw_pooled"]  # the judged healthy draws' seeds, pooled
    diffs = np.concatenate(
        [np.subtract(d["per_seed_bpb"]["null"], d["per_seed_bpb"]["raw"]) for d in healthy[3:]]
    )
    assert pooled["n"] == 20
    assert pooled["value"] == pytest.approx(diffs.mean(), rel=1e-12)
    half = 2.093024054408263 * diffs.std(ddof=1) / 20**0.5  # t_.975,19
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((diffs.mean() - half, diffs.mean() + half))


def test_leave_one_out_calibration_judges_every_healthy_draw_on_the_others_spread(monkeypatch):
    rng = np.random.default_rng(1)
    healthy = [_draw(rng, range(10 * k, 10 * k + 4)) for k in range(6)]
    broken = [_draw(rng, range(500, 504), "unpaired", planted_shift=0.0)]
    seen = []
    real = gate_draws.gate_of

    def spy(per_seed, section, controlled):
        seen.append((per_seed["raw"][0], section["planted_noise"]["dof"], section["planted_noise"]["sd"]))
        return real(per_seed, section, controlled)

    monkeypatch.setattr(gate_draws, "gate_of", spy)
    out = gate_draws.summary({"draws": healthy + broken}, SECTION, calibration="loo")
    assert (out["draws"], out["calibration_draws"]) == (6, 6)
    assert out["calibration"] == "leave one out over the 6 healthy draws"
    assert out["planted_noise"]["dof"] == 18  # the pipeline's value: every healthy draw
    # each healthy draw on the other five's spread (df 15, its own left out), the broken one on all six
    assert [dof for _, dof, _ in seen] == [15] * 6 + [18]
    for i, d in enumerate(healthy):
        others = gate_draws._planted_noise(healthy[:i] + healthy[i + 1 :])
        assert seen[i] == (d["per_seed_bpb"]["raw"][0], 15, others["sd"])
    assert out["broken_catch_rate"]["k"] == 1
    assert out["planted_power"]["n"] == 6
    # the dose (every healthy seed's planted - null) and the power the z test has at 4 seeds from it
    diffs = np.concatenate(
        [np.subtract(d["per_seed_bpb"]["planted"], d["per_seed_bpb"]["null"]) for d in healthy]
    )
    assert out["planted_noise"]["effect"] == pytest.approx(diffs.mean(), rel=1e-12)
    z = out["planted_noise"]["effect"] * 2 / out["planted_noise"]["sd"] - 1.959963984540054
    assert out["planted_power_by_design"] == pytest.approx(0.5 * (1 + math.erf(z / 2**0.5)), rel=1e-9)


def test_refusals_are_split_into_inconclusive_and_shown_blind_by_the_stated_power():
    """A planted dose the calibrated spread calls with power below 0.95 at the judged seeds: a broken draw is
    still refused, but as inconclusive (its miss is what a working instrument does that often), never as
    shown blind; at a dose the spread calls firmly, the same broken draws are shown blind."""
    rng = np.random.default_rng(1)
    weak = [_draw(rng, range(10 * k, 10 * k + 4), planted_shift=0.012) for k in range(6)]
    broken = [
        _draw(rng, range(500 + 10 * k, 504 + 10 * k), "shuffle_tokens", planted_shift=0.0) for k in range(4)
    ]
    out = gate_draws.summary({"draws": weak + broken}, SECTION, calibration="loo")
    assert out["planted_power_by_design"] < 0.95
    assert out["broken_catch_rate"]["k"] == 4
    assert out["broken_shown_blind"]["k"] == 0
    refused = out["false_alarm_rate"]["k"]
    assert out["false_alarm_inconclusive"]["k"] + out["false_alarm_shown_blind"]["k"] == refused
    assert out["false_alarm_shown_blind"]["k"] == 0
    rng = np.random.default_rng(1)
    firm = [_draw(rng, range(10 * k, 10 * k + 4), planted_shift=0.05) for k in range(6)]
    out = gate_draws.summary({"draws": firm + broken}, SECTION, calibration="loo")
    assert out["planted_power_by_design"] >= 0.95
    assert (out["broken_shown_blind"]["k"], out["broken_catch_rate"]["k"]) == (4, 4)


def test_judged_as_the_run_applies_it_each_draw_is_cut_where_the_sequential_design_stops():
    """--sequential: each draw judged at the seeds the pipeline's design stops at on it. The demo's design
    (sd 0.027, an effect of 0.05, two recipes) looks at 3 and 4 seeds: at 3 it calls |z| >= 2.661 and stops
    |z| < 2.122 as futile; between them it goes on to 4."""
    section = {
        **SECTION,
        "noise": {"sd": 0.027, "dof": 40, "source": "test"},
        "sequential": {"effect": 0.05},
        "seeds": 4,
        "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}, "other": {"from": "kept"}},
    }
    rng = np.random.default_rng(2)

    def shifted(seeds: range, diffs: list[float]) -> dict:
        d = _draw(rng, seeds)
        d["per_seed_bpb"]["curated"] = [x + e for x, e in zip(d["per_seed_bpb"]["raw"], diffs, strict=True)]
        return d

    clear = shifted(range(4), [-0.2, -0.21, -0.19, -0.2])  # z far beyond 2.661 at 3 seeds
    nothing = shifted(range(10, 14), [0.001, -0.001, 0.0, 0.001])  # futile at 3 seeds
    between = shifted(range(20, 24), [-0.037, -0.038, -0.0372, -0.037])  # z about -2.47 at 3 seeds
    assert [gate_draws.stop_seeds(d, section) for d in (clear, nothing, between)] == [3, 3, 4]
    # decided at 3 seeds, but its planted control missed at a stated power below 0.95: the run goes on to 4
    weak = {"sd": 0.02, "dof": 40, "effect": 0.03, "source": "test"}
    missed = shifted(range(40, 44), [-0.2, -0.21, -0.19, -0.2])
    missed["per_seed_bpb"]["planted"] = [x + 0.001 for x in missed["per_seed_bpb"]["null"]]
    assert gate_draws.stop_seeds(missed, {**section, "planted_noise": weak}) == 4
    assert gate_draws.stop_seeds(clear, {**section, "planted_noise": weak}) == 3  # its planted called at 3
    more = [_draw(rng, range(30 + 10 * k, 34 + 10 * k)) for k in range(2)]
    out = gate_draws.summary({"draws": [clear, nothing, between, *more]}, section, "loo", sequential=True)
    assert out["stopped_at"]["4"] >= 1
    assert sum(out["stopped_at"].values()) == 5
    assert out["seeds_judged"] is None
