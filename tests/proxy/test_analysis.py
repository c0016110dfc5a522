"""The verdict, the ranking and the controls come from one paired statistic (synthetic curves)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from curate.proxy.assembly import controls
from curate.proxy.kinds.base import Evidence
from curate.proxy.kinds.null import Null
from curate.proxy.kinds.planted import Planted
from curate.proxy.kinds.rejected import Rejected
from curate.proxy.spec.config import parse
from curate.proxy.statistics import analysis

TOKENS = np.geomspace(1_000, 64_000, 7)
CURVE = 5 - 0.1 * np.log(TOKENS)
SEED_EFFECT = np.array([0.30, -0.20, 0.05, -0.15])  # shared by every recipe with the same seed


BUDGETS = TOKENS[-1] * np.array([0.25, 0.5, 1, 2])


def _heads(shift: float, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return CURVE[None, :] + SEED_EFFECT[:, None] + shift + rng.normal(0, noise, (4, len(TOKENS)))


def _base(raw: np.ndarray) -> analysis.Baseline:
    """raw's measured curve: finished runs at T/4, T/2, T (its own heads' end) and 2T, per seed."""
    curves = 5 - 0.1 * np.log(BUDGETS)[None, :] + SEED_EFFECT[: len(raw), None]
    curves[:, 2] = raw[:, -1]
    return analysis.Baseline(BUDGETS, curves, TOKENS[-1])


def _power(base: analysis.Baseline, heads: dict[str, np.ndarray]) -> dict:
    pairs = analysis.Pairs(heads, list(heads), "raw")
    other = next(r for r in heads if r != "raw")
    return analysis.power(base, pairs, len(heads["raw"]), (other, "raw"))


def test_paired_call_separates_what_unpaired_intervals_cannot():
    raw, cur = _heads(0.0, 0.001, 1), _heads(-0.01, 0.001, 2)
    # Unpaired, the seed effects (sd ~0.2) swamp the 0.01 gain; paired they cancel.
    rank = analysis.ranking({"raw": raw, "curated": cur})
    pair = rank["pairs"][0]
    assert rank["order"] == ["curated", "raw"]
    assert pair["separated"] is True
    assert pair["better"] == "curated"
    base = _base(raw)
    iv = analysis.paired(cur, raw)
    m = analysis.multiplier_block(base, iv)
    assert analysis.call(iv) == "better"
    assert m["ci_low"] > 1
    assert m["bounds"] == {"value": None, "ci_low": None, "ci_high": None}
    assert m["value"] == pytest.approx(math.exp(-iv.value / 0.1), rel=1e-3)  # inside the measured range
    pw = _power(base, {"raw": raw, "curated": cur})
    sentence = analysis.verdict_sentence("curated", "raw", iv, m, pw, ["wiki"])
    assert sentence.startswith("curated beats raw on the targets (wiki): ")
    assert f"{m['value']:.2f}x tokens-to-target (CI {m['ci_low']:.2f}–{m['ci_high']:.2f}x" in sentence


def test_verdict_and_ranking_agree_when_nothing_is_called():
    raw, cur = _heads(0.0, 0.02, 3), _heads(0.002, 0.02, 4)
    rank = analysis.ranking({"raw": raw, "curated": cur})
    assert rank["pairs"][0]["separated"] is False
    assert rank["tiers"] == [
        sorted(["raw", "curated"], key=lambda r: (float({"raw": raw, "curated": cur}[r][:, -1].mean()), r))
    ]
    base = _base(raw)
    iv = analysis.paired(cur, raw)
    m = analysis.multiplier_block(base, iv)
    assert analysis.call(iv) == "not_called"
    assert m["ci_low"] <= 1 <= m["ci_high"]
    s = analysis.verdict_sentence(
        "curated", "raw", iv, m, _power(base, {"raw": raw, "curated": cur}), ["wiki"]
    )
    assert s.startswith(
        "no effect of curated vs raw is detected on the targets (wiki): the multiplier is within "
    )
    assert "only effects beyond" in s


def test_one_seed_calls_nothing():
    raw, cur = _heads(0.0, 0.0, 5)[:1], _heads(-0.5, 0.0, 6)[:1]
    iv = analysis.paired(cur, raw)
    assert analysis.call(iv) == "not_called"
    assert analysis.ranking({"raw": raw, "c": cur})["pairs"][0]["separated"] is False
    base = analysis.Baseline(BUDGETS, np.array([[5.0, 4.9, raw[0, -1], 4.7]]), TOKENS[-1])
    s = analysis.verdict_sentence(
        "c", "raw", iv, analysis.multiplier_block(base, iv), _power(base, {"raw": raw, "c": cur}), ["w"]
    )
    assert "with one seed no difference can be called" in s


def _controls(base: analysis.Baseline, heads: dict, controlled: str, epochs: dict) -> dict:
    ev = Evidence(base, heads, "raw", controlled, epochs, {}, parse({}))
    return controls.controls_block(ev, [Null("null"), Rejected("rejected"), Planted("planted")], {})


def test_a_null_control_from_the_same_data_lands_inside_its_interval():
    hits = 0
    for k in range(40):  # same distribution, fresh noise on both: a 95% interval contains 0 ~38 times in 40
        raw, null = _heads(0.0, 0.003, 300 + k), _heads(0.0, 0.003, 100 + k)
        base = _base(raw)
        block = _controls(base, {"raw": raw, "null": null, "cur": raw}, "cur", {"null": 0.5, "raw": 0.2})
        hits += block["null"]["contains_1"]
        assert block["null"]["multiplier"]["ci_low"] is not None
    assert hits == 37  # 92.5% with these fixed seeds: within binomial noise of the nominal 95%
    biased = _heads(0.05, 0.003, 200)
    block = _controls(base, {"raw": raw, "null": biased, "cur": raw}, "cur", {"null": 3.0, "raw": 0.2})
    assert block["null"]["contains_1"] is False
    assert "the instrument is biased at this budget" in block["null"]["message"]
    assert "null is seen 3.00 epochs within T, raw 0.20" in block["null"]["message"]


def test_kept_vs_rejected_separation():
    raw, kept, rej = _heads(0.0, 0.002, 8), _heads(-0.01, 0.002, 9), _heads(0.05, 0.002, 10)
    base = _base(raw)
    block = _controls(base, {"raw": raw, "curated": kept, "rejected": rej}, "curated", {})
    r = block["rejected"]
    assert r["call"] == "better"
    assert r["m_kept_over_m_rejected"]["ci_low"] > 1
    assert r["m_kept_over_m_rejected"]["value"] == pytest.approx(
        math.exp(0.6), rel=0.05
    )  # 0.06 bpb, 0.1 per e-fold


def _point(name: str, null_call: str, value: float) -> dict:
    return {
        "name": name,
        "recipes": {
            "raw": {"call": "not_called"},
            "null": {"call": null_call, "multiplier": {"value": value}},
        },
    }


def test_a_null_control_separated_at_a_ladder_point_is_a_warning_naming_it():
    cfg, null = parse({}), Null("null")
    assert null.ladder_failure([_point("proxy_tiny@512", "not_called", 1.1)], cfg) is None
    assert null.ladder_failure([{"name": "p", "recipes": {"raw": {"call": "not_called"}}}], cfg) is None
    key, names, msg = null.ladder_failure(
        [_point("proxy_tiny@512", "not_called", 0.9), _point("proxy_5m@491520", "worse", 1.2)], cfg
    )
    assert key == "null_separated_at"
    assert names == ["proxy_5m@491520"]
    assert msg.startswith(
        "the null control (a random subsample of raw) separates from raw at proxy_5m@491520 (1.20x):"
    )


def _planted_point(name: str, call: str, value: float, bound: str | None = None) -> dict:
    mult = {"value": value, **({"bounds": {"value": bound}} if bound else {})}
    return {
        "name": name,
        "recipes": {"raw": {"call": "not_called"}, "planted": {"call": call, "multiplier": mult}},
    }


def test_a_planted_control_not_called_worse_at_a_ladder_point_is_a_warning_naming_it():
    cfg, planted = parse({"planted": 0.4}), Planted("planted")
    assert planted.ladder_failure([_planted_point("proxy_tiny@512", "worse", 0.7)], cfg) is None
    # a point without the planted control (controls off) is not blind, only unchecked
    assert planted.ladder_failure([{"name": "p", "recipes": {"raw": {"call": "not_called"}}}], cfg) is None
    key, names, msg = planted.ladder_failure(
        [
            _planted_point("proxy_tiny@294912", "worse", 0.72),
            _planted_point("proxy_5m@147456", "not_called", 0.81),
            _planted_point("proxy_1m@512", "better", 2.0, ">"),
        ],
        cfg,
    )
    assert key == "planted_not_called_at"
    assert names == ["proxy_5m@147456", "proxy_1m@512"]
    assert msg.startswith(
        "the planted control (40% of the null's documents word-shuffled, worse by construction) is not called worse "
        "at proxy_5m@147456 (0.81x), proxy_1m@512 (>2.00x): that point could not see a known effect"
    )


def test_power_reads_a_spread_with_degrees_of_freedom_and_says_its_interval():
    """With the calibrated noise the verdict pair's spread is pooled with it (df 40 + n - 1); without,
    with the run's other recipes' pairs; the MDE uses that df, and its interval comes from the spread's
    chi-square interval."""
    from curate.proxy.statistics.gate import Noise

    raw, cur, hi = _heads(0.0, 0.01, 1), _heads(-0.02, 0.01, 2), _heads(-0.03, 0.01, 3)
    base = _base(raw)
    pairs = analysis.Pairs({"raw": raw, "cur": cur, "hi": hi}, ["raw", "cur", "hi"], "raw")
    n = raw.shape[0]
    calibrated = analysis.power(base, pairs, n, ("cur", "raw"), Noise(0.02, 40, "seeds 1000-1059"))
    assert calibrated["sd_dof"] == 40 + n - 1
    assert calibrated["sd_source"].endswith("pooled with seeds 1000-1059 (df 40)")
    lo, hi_sd = calibrated["sd_interval"]
    assert lo < calibrated["sd_diff_bpb"] < hi_sd
    t = sps.t.ppf(0.975, 40 + n - 1) + sps.t.ppf(0.8, 40 + n - 1)
    assert calibrated["mde_bpb"] == pytest.approx(t * calibrated["sd_diff_bpb"] / math.sqrt(n), rel=1e-12)
    assert calibrated["mde_bpb_interval"][0] < calibrated["mde_bpb"] < calibrated["mde_bpb_interval"][1]
    own = analysis.power(base, pairs, n, ("cur", "raw"))
    assert own["sd_dof"] == 2 * (n - 1)  # cur's pair pooled with hi's
    assert own["sd_source"] == "pooled over 2 pairs with the baseline"
