"""The one rule from an interval to a call, at its boundaries: an interval that touches "no difference" (0
for a bpb difference, 1 for a ratio) is not called, nor is one without an interval (one seed); a bound end
counts only on its own side. The proxy's own calls agree with it."""

from __future__ import annotations

import pytest

from curate.goodput.calls import (
    diff_call,
    fmt_bounded,
    fmt_multiplier,
    multiplier_call,
    multiplier_ci,
    ratio_call,
    side,
)
from curate.goodput.schema import Multiplier


@pytest.mark.parametrize(
    ("lo", "hi", "call"),
    [
        (-0.02, -0.001, "better"),  # all below 0: lower bpb
        (-0.02, 0.0, "not_called"),  # touches 0
        (-0.02, 0.01, "not_called"),
        (0.0, 0.02, "not_called"),  # touches 0
        (0.001, 0.02, "worse"),
        (None, None, "not_called"),  # one seed: no interval
        (None, -0.01, "not_called"),
        (0.01, None, "not_called"),
    ],
)
def test_a_bpb_difference_is_called_only_when_all_of_its_interval_is_past_0(lo, hi, call) -> None:
    assert diff_call(lo, hi) == call


@pytest.mark.parametrize(
    ("lo", "hi", "marks", "effect"),
    [
        (1.001, 1.5, (None, None), "pays"),
        (1.0, 1.5, (None, None), "not_called"),  # touches 1
        (0.5, 1.0, (None, None), "not_called"),  # touches 1
        (0.5, 0.999, (None, None), "costs"),
        (0.9, 1.1, (None, None), "not_called"),
        (None, None, (None, None), "not_called"),  # one seed
        (1.2, 1.5, ("<", None), "not_called"),  # <1.20: the true low end may be below 1
        (0.3, 0.9, ("<", None), "costs"),  # <0.30 low end: still all below 1
        (0.435, 0.6, (None, ">"), "not_called"),  # >0.60: the true high end may pass 1
        (2.0, 2.0, (">", ">"), "pays"),
        (1.1, None, (None, None), "pays"),  # a low end above 1 is enough
    ],
)
def test_a_ratio_is_called_only_when_all_of_its_interval_bounds_included_is_past_1(lo, hi, marks, effect):
    assert ratio_call(lo, hi, marks) == effect
    assert multiplier_call(lo, hi, marks) == {"pays": "better", "costs": "worse"}.get(effect, "not_called")


def test_where_an_interval_lies_against_1() -> None:
    assert side(None, None, None) == "unknown"
    assert side(None, None, 1.2) == "unknown"  # a value without an interval is not placed
    assert side(1.0, 1.0, 1.0) == "overlaps"
    assert side(0.8, 1.3, 1.0) == "overlaps"
    assert side(1.2, 1.5, 1.3, ("<", None)) == "overlaps"


def test_the_proxy_calls_its_differences_by_the_same_rule() -> None:
    """``curate.proxy.statistics.analysis.call`` (what goodput.json records) and :func:`diff_call` agree
    on every interval, touching 0 and one seed included."""
    from curate.proxy import stats
    from curate.proxy.statistics.analysis import call

    for lo, hi, v in [(-0.02, -0.001, -0.01), (-0.02, 0.0, -0.01), (0.0, 0.02, 0.01), (0.001, 0.02, 0.01)]:
        assert call(stats.Interval(v, lo, hi, 3, 0.01)) == diff_call(lo, hi)
    assert call(stats.Interval(-0.5, None, None, 1, None)) == diff_call(None, None) == "not_called"


def test_a_bounded_number_is_written_with_its_side() -> None:
    assert fmt_bounded(2.0, ">") == ">2.00"
    assert fmt_bounded(0.25, "<") == "<0.25"
    assert fmt_bounded(1.3125) == "1.31"
    assert fmt_bounded(1.3125, None, 3) == "1.312"
    assert fmt_bounded(None, ">") == "—"
    assert fmt_bounded(float("nan")) == "—"
    block = {"value": 1.2, "ci_low": 1.1, "ci_high": 2.0, "bounds": {"value": None, "ci_high": ">"}}
    assert [fmt_multiplier(block, k, 3) for k in ("value", "ci_low", "ci_high")] == [
        "1.200",
        "1.100",
        ">2.000",
    ]
    typed = Multiplier.from_json(block, strict=False)
    assert [fmt_multiplier(typed, k) for k in ("value", "ci_low", "ci_high")] == ["1.20", "1.10", ">2.00"]
    assert fmt_multiplier({"worse": 0.5, "bounds": {"worse": "<"}}, "worse") == "<0.50"
    assert fmt_multiplier({}, "value") == "—"


def test_a_multiplier_with_its_interval() -> None:
    assert multiplier_ci({"value": 1.375, "ci_low": 1.34, "ci_high": 1.42}) == "1.38x (1.34–1.42)"
    bounded = {
        "value": 2.0,
        "ci_low": 1.2,
        "ci_high": 2.0,
        "bounds": {"value": ">", "ci_low": None, "ci_high": ">"},
    }
    assert multiplier_ci(bounded) == ">2.00x (1.20–>2.00)"
    assert multiplier_ci({"value": 1.25, "ci_low": None, "ci_high": None}) == "1.25x"  # one seed
    assert multiplier_ci({"value": None}) == "—"
    assert multiplier_ci(None) == "—"
    assert multiplier_ci(Multiplier.absent()) == "—"
