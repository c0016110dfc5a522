"""The decision's family (each non-control recipe against the baseline) is called after Holm's step-down.

Three seeds, so df = 2, where Student's t has a closed form: ``P(|T| >= t) = 1 - t / sqrt(t^2 + 2)``. Each
recipe's differences are ``m + s·(-1, 0, 1)``: mean ``m``, sd ``s``, ``t = m·√3 / s``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy import stats
from curate.proxy.assembly.assemble import _support
from curate.proxy.statistics import analysis


def _p_df2(t: float) -> float:
    return 1 - abs(t) / math.sqrt(t * t + 2)


DIFFS = {
    "a": np.array([-0.010, -0.011, -0.012]),  # m/s = 11: t = 19.053, p = 0.002743
    "b": np.array([0.0194, 0.0294, 0.0394]),  # m/s = 2.94: t = 5.092, p = 0.03647
    "c": np.array([-0.0180, -0.0280, -0.0380]),  # m/s = 2.8: t = 4.850, p = 0.03998
}


def test_p_values_are_the_paired_t_by_hand():
    assert stats.paired_p(DIFFS["a"]) == pytest.approx(_p_df2(11 * math.sqrt(3)), abs=1e-12)
    assert stats.paired_p(DIFFS["b"]) == pytest.approx(_p_df2(2.94 * math.sqrt(3)), abs=1e-12)
    assert stats.paired_p(DIFFS["c"]) == pytest.approx(_p_df2(2.8 * math.sqrt(3)), abs=1e-12)
    assert round(stats.paired_p(DIFFS["a"]), 6) == 0.002743
    assert round(stats.paired_p(DIFFS["b"]), 5) == 0.03647
    assert round(stats.paired_p(DIFFS["c"]), 5) == 0.03998
    # at other df, differences whose t is the table's t_.975: 2.776 at df 4 (5 seeds), 2.262 at df 9 (10 seeds)
    for t, n in ((2.7764451, 5), (2.2621572, 10)):
        z = np.arange(n) - (n - 1) / 2
        z /= z.std(ddof=1)  # mean 0, sd 1: t = mean * sqrt(n)
        assert stats.paired_p(t / math.sqrt(n) + z) == pytest.approx(0.05, abs=1e-7)
    assert stats.paired_p([0.5]) is None
    assert stats.paired_p([0.1, 0.1, 0.1]) == 0.0


def test_holm_calls_only_what_survives_the_step_down():
    mc = stats.holm_calls(DIFFS, "raw")
    pa, pb, pc = (stats.paired_p(DIFFS[r]) for r in "abc")
    # sorted a < b < c: a x 3 = 0.0082 <= 0.05 rejected; b x 2 = 0.0729 > 0.05, so b and c are kept
    assert mc["pairs"]["a"] == {
        "p": pa,
        "p_holm": pytest.approx(3 * pa),
        "call": "better",
        "call_unadjusted": "better",
    }
    assert mc["pairs"]["b"] == {
        "p": pb,
        "p_holm": pytest.approx(2 * pb),
        "call": "not_called",
        "call_unadjusted": "worse",
    }
    assert mc["pairs"]["c"]["p_holm"] == pytest.approx(2 * pb)  # max(2·p_b, 1·p_c): monotone
    assert (mc["pairs"]["c"]["call"], mc["pairs"]["c"]["call_unadjusted"]) == ("not_called", "better")
    assert (mc["method"], mc["alpha"], mc["family"]) == ("Holm", 0.05, ["a", "b", "c"])
    # without b, c survives: a x 2 = 0.0055, c x 1 = 0.0400
    two = stats.holm_calls({"a": DIFFS["a"], "c": DIFFS["c"]}, "raw")
    assert two["pairs"]["c"]["p_holm"] == pytest.approx(pc)
    assert two["pairs"]["c"]["call"] == "better"
    assert stats.holm({"x": 0.01, "y": 0.04, "z": 0.03}) == pytest.approx({"x": 0.03, "z": 0.06, "y": 0.06})


def test_holm_adjusts_as_the_step_down_by_hand():
    # four tests, sorted 0.005 < 0.01 < 0.03 < 0.04: times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04, then kept
    # monotone (0.04 -> 0.06): at 0.05 the first two are rejected, and the step-down stops at the third
    adj = stats.holm({"h1": 0.01, "h2": 0.04, "h3": 0.03, "h4": 0.005})
    assert adj == pytest.approx({"h4": 0.02, "h1": 0.03, "h3": 0.06, "h2": 0.06}, abs=1e-15)
    assert list(adj) == ["h1", "h2", "h3", "h4"]  # in the family's order, not sorted
    # capped at 1: 0.3 x 3 = 0.9, 0.5 x 2 = 1.0, 0.6 x 1 -> 1.0
    assert stats.holm({"a": 0.3, "b": 0.5, "c": 0.6}) == pytest.approx({"a": 0.9, "b": 1.0, "c": 1.0})
    # tied p-values get one adjusted value whichever is sorted first: 0.02 x 3 = 0.06 for both
    assert stats.holm({"a": 0.02, "b": 0.02, "c": 0.5}) == pytest.approx({"a": 0.06, "b": 0.06, "c": 0.5})
    assert stats.holm({"only": 0.04}) == {"only": 0.04}
    assert stats.holm({}) == {}


def test_the_verdict_sentence_reads_the_holm_call():
    tokens = np.geomspace(1_000, 64_000, 7)
    base = analysis.Baseline(tokens, (5 - 0.1 * np.log(tokens))[None, :], tokens[3])
    raw = np.array([[3.0], [3.1], [3.2]])
    heads = {"raw": raw} | {r: raw + d[:, None] for r, d in DIFFS.items()}
    pairs = analysis.Pairs(heads, list(heads), "raw")
    mc = stats.holm_calls({r: pairs.diffs(r, "raw") for r in DIFFS}, "raw")
    iv = pairs.interval("c", "raw")
    assert analysis.call(iv) == "better"
    pw = analysis.power(base, pairs, 3, ("c", "raw"))
    mult = analysis.multiplier_block(base, iv)
    s = analysis.verdict_sentence("c", "raw", iv, mult, pw, ["wiki"], mc)
    assert s.startswith("no effect of c vs raw is detected on the targets (wiki)")
    assert (
        "; its own interval excludes 0 (p = 0.040), but not after Holm's adjustment over the 3 recipes "
        "compared with raw (p = 0.073)" in s
    )
    assert analysis.verdict_sentence("c", "raw", iv, mult, pw, ["wiki"]).startswith(
        "c beats raw on the targets"
    )
    a = analysis.verdict_sentence("a", "raw", pairs.interval("a", "raw"), mult, pw, ["wiki"], mc)
    assert a.startswith("a beats raw on the targets (wiki)")


def test_a_run_whose_controls_fail_cannot_support_a_decision():
    verdict = {"call": "better", "sentence": "curated beats raw on the targets (wiki): 1.20x"}
    controls = {
        "decision": {
            "supported": False,
            "reasons": [
                "the planted control is not called worse (+0.004 bpb [-0.003, +0.011])",
                "the null control separates from raw (+0.021 bpb [+0.008, +0.034])",
            ],
        }
    }
    _support(verdict, controls)
    assert verdict["supported"] is False
    assert verdict["unsupported_reasons"] == controls["decision"]["reasons"]
    assert verdict["call"] == "better"  # kept as a number; the report must not present it as a decision
    assert verdict["sentence"] == (
        "this run cannot support a decision: the planted control is not called worse (+0.004 bpb [-0.003, "
        "+0.011]); the null control separates from raw (+0.021 bpb [+0.008, +0.034]). curated beats raw on "
        "the targets (wiki): 1.20x"
    )
    ok = {"call": "better", "sentence": "s"}
    _support(ok, {"decision": {"supported": True, "reasons": []}})
    assert (ok["supported"], ok["unsupported_reasons"], ok["sentence"]) == (True, [], "s")
    old = {"call": "better", "sentence": "s"}
    _support(old, {})  # controls without a decision (an older run): supported
    assert (old["supported"], old["sentence"]) == (True, "s")


def test_holm_collects_only_what_its_own_call_made_and_restores_the_collector():
    """statsmodels' Holm ends with a full gc.collect() (half a second in a process that holds torch): the
    heap alive before the call is frozen out of its sight, and left as it was found."""
    import gc

    import statsmodels.stats.multitest  # noqa: F401  imported first: its import's own collections are not the call's

    seen: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(gc.get_freeze_count())

    assert gc.get_freeze_count() == 0
    held = [[i] for i in range(10_000)]  # objects alive before the call
    gc.callbacks.append(watch)
    try:
        got = stats.holm({"a": 0.01, "b": 0.04, "c": 0.03})
    finally:
        gc.callbacks.remove(watch)
    assert got == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert seen  # the full collection ran
    assert min(seen) >= len(held)  # with the earlier heap frozen
    assert gc.get_freeze_count() == 0  # and the heap is collectable again afterwards
    # a caller that froze objects itself keeps them frozen: an object it froze is still in no generation the
    # collector walks (an unfreeze would have moved it to the oldest); the count itself can drop when a frozen
    # object is freed by its reference count, so the object is looked for, not the count compared
    marker = [[]]
    gc.freeze()
    try:
        stats.holm({"a": 0.01})
        assert gc.get_freeze_count() > 0
        assert not any(o is marker for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
    assert any(o is marker for o in gc.get_objects(generation=2))  # the check can fail: unfrozen, it is there
