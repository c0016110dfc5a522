"""The controls' decision: a run supports a decision only when its planted control is called worse and its
null does not separate from raw; the planted control's record of what it was matched to."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy.assembly.controls import controls_block
from curate.proxy.kinds.base import Evidence
from curate.proxy.kinds.null import Null
from curate.proxy.kinds.planted import Planted
from curate.proxy.kinds.rejected import Rejected
from curate.proxy.spec.config import parse
from curate.proxy.statistics import analysis

BASE = analysis.Baseline([500, 1000, 2000], [[4.2, 4.0, 3.8]], 1000)
RAW = np.array([[4.0], [4.01], [3.99]])  # three seeds, bpb at T
WORSE = RAW + np.array([[0.10], [0.11], [0.12]])  # +0.11 bpb, CI +0.0852 to +0.1348: called worse
FLAT = RAW + np.array([[0.01], [-0.01], [0.03]])  # +0.01 bpb, CI -0.0397 to +0.0597: not called
SAME = RAW + np.array([[0.001], [-0.002], [0.001]])  # 0 bpb: the null contains 0
APART = RAW + np.array([[-0.05], [-0.06], [-0.04]])  # -0.05 bpb, CI -0.0748 to -0.0252: separates

PLANTED_BLIND = (
    "the planted control (20% of the null's documents word-shuffled) is not called worse than the null: "
    "+0.0100 bpb (CI -0.0360 to +0.0560); this run cannot see a known effect"
)
PLANTED_BLIND_RAW = (  # no null trained: the planted control is judged against raw
    "the planted control (20% of the null's documents word-shuffled) is not called worse than raw: "
    "+0.0100 bpb (CI -0.0397 to +0.0597); this run cannot see a known effect"
)
BLIND_OF_APART = APART + np.array([[0.01], [-0.01], [0.03]])  # the biased null's documents, as FLAT is raw's
NULL_APART = (
    "the null control separates from raw: -0.0500 bpb (CI -0.0748 to -0.0252), though it is raw's own "
    "distribution; the instrument is biased at this budget"
)


CONTROLS = [Null("null"), Rejected("rejected"), Planted("planted")]
SETTINGS = parse({"planted": 0.2})


def _block(heads: dict, shares: dict | None = None, epochs: dict | None = None) -> dict:
    ev = Evidence(BASE, heads, "raw", "curated", epochs or {}, shares or {}, SETTINGS)
    return controls_block(ev, CONTROLS, {})


def _controls(shares: dict | None = None, **heads: np.ndarray) -> dict:
    return _block({"raw": RAW, "curated": RAW - 0.02, **heads}, shares, {"null": 1.0, "raw": 0.5})


def test_both_controls_pass_the_decision_is_supported():
    c = _controls(planted=WORSE, null=SAME)
    assert c["planted"]["called_worse"] is True
    assert c["null"]["contains_1"] is True
    assert c["decision"] == {"supported": True, "reasons": []}


def test_a_planted_control_not_called_worse_leaves_the_run_unsupported():
    c = _controls(planted=FLAT, null=SAME)
    assert c["decision"] == {"supported": False, "reasons": [PLANTED_BLIND]}
    assert "cannot support a decision" in c["planted"]["message"]


def test_a_separated_null_leaves_the_run_unsupported():
    c = _controls(planted=WORSE, null=APART)
    assert c["decision"] == {"supported": False, "reasons": [NULL_APART]}
    assert "This run cannot support a decision" in c["null"]["message"]


def test_both_failures_are_both_reasons_planted_first():
    c = _controls(planted=BLIND_OF_APART, null=APART)
    blind = PLANTED_BLIND.replace("(CI -0.0360 to +0.0560)", "(CI -0.0397 to +0.0597)")
    assert c["decision"] == {"supported": False, "reasons": [blind, NULL_APART]}


def test_a_control_not_trained_is_not_a_failure_and_no_control_is_said():
    # planted only (controls: [planted]): the null is not trained, so only the planted counts
    assert _controls(planted=WORSE)["decision"] == {"supported": True, "reasons": []}
    assert _controls(planted=FLAT)["decision"] == {"supported": False, "reasons": [PLANTED_BLIND_RAW]}
    # controls off: supported (nothing failed), with a note that nothing checked the instrument
    assert _controls()["decision"] == {
        "supported": True,
        "reasons": [],
        "note": "no null or planted control was trained: nothing checked the instrument at this budget",
    }


def test_one_seed_cannot_call_the_planted_worse():
    c = _block({"raw": RAW[:1], "planted": WORSE[:1]})
    assert c["decision"]["supported"] is False
    assert c["decision"]["reasons"] == [
        "the planted control (20% of the null's documents word-shuffled) is not called worse than raw: "
        "+0.1000 bpb (no CI: one seed); this run cannot see a known effect"  # no null: against raw
    ]


def test_the_planted_control_says_how_it_was_built_and_what_it_was_matched_to():
    shares = {
        "raw": {"mean": 1.0},
        "curated": {"mean": 0.45},
        "planted": {"mean": 0.47},
        "null": {"mean": 0.46},
    }
    c = _controls(shares, planted=WORSE, null=SAME)
    assert c["planted"]["message"].startswith(
        "the planted control (the null's subsample of raw at curated's token count, 20% of its documents "
        "word-shuffled: worse by construction) is called worse than the null ("
    )
    assert c["planted"]["matched"] == {
        "of": "curated",
        "shares_with_baseline": 0.47,
        "recipe_shares_with_baseline": 0.45,
    }
    assert _controls()["for"] == "curated"
    assert "planted" not in _controls(shares)  # no planted control trained: no block


def test_a_run_without_rejected_rows_skips_the_rejected_control_with_its_reason(tmp_path):
    """kept/ and no rejected/ folder: the default controls train, the rejected one is skipped and says why
    (its shard folder was never made, and writing its empty shard failed)."""
    import json

    import numpy as np

    from curate.core.engine import InlineEngine
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import parse
    from curate.runtime.context import RunContext
    from tests.proxy.toy import tiny_section, write_kept

    write_kept(tmp_path, np.random.default_rng(0))
    ctx = RunContext(
        run_dir=tmp_path,
        config={},
        engine=InlineEngine(progress=False),
        manifest={},
        section=parse(tiny_section()),
    )
    run_phase(ctx)
    g = json.loads((tmp_path / "goodput.json").read_text())
    assert g["controls"]["skipped"]["rejected"] == "only 0 tokens of rejected (non-quarantine) data"
    assert "rejected" not in g["recipes"]


def test_the_null_must_be_shown_within_its_margin_on_the_calibrated_noise():
    """TOST: with the calibrated noise (proxy.noise) and a margin (proxy.null_margin), a null whose 90%
    interval lies inside +-margin passes; one too noisy to be shown inside it fails without separating
    from raw, and says so; the margin defaults to what the noise supports at these seeds."""
    calibrated = parse(
        {"planted": 0.2, "noise": {"sd": 0.01, "dof": 40, "source": "seeds 1000-1059"}, "null_margin": 0.03}
    )
    ev = Evidence(
        BASE, {"raw": RAW, "curated": RAW - 0.02, "null": SAME}, "raw", "curated", {}, {}, calibrated
    )
    null = controls_block(ev, CONTROLS, {})["null"]
    assert null["passed"] is True
    eq = null["equivalence"]
    assert (eq["margin"], eq["level"], eq["noise"]["dof"]) == (0.03, 0.9, 42)
    assert eq["margin_source"] == "proxy.null_margin"
    assert null["message"].startswith(
        "the null control (a random subsample of raw at the controlled recipe's token count) is within +-0.0300 bpb of raw (90% CI"
    )
    noisy = Evidence(
        BASE,
        {"raw": RAW, "curated": RAW - 0.02, "null": FLAT},
        "raw",
        "curated",
        {},
        {},
        parse({"planted": 0.2, "noise": {"sd": 0.05, "dof": 40}, "null_margin": 0.03}),
    )
    c = controls_block(noisy, CONTROLS, {})
    assert c["null"]["contains_1"] is True  # it does not separate from raw ...
    assert c["null"]["passed"] is False  # ... but it is not shown within the margin either
    (why,) = c["decision"]["reasons"]
    assert why.startswith("the null control is not shown within +-0.0300 bpb of raw (90% CI ")
    assert why.endswith("): this run cannot rule out an instrument bias of that size")
    default = controls_block(
        Evidence(
            BASE, {"raw": RAW, "null": SAME}, "raw", None, {}, {}, parse({"noise": {"sd": 0.01, "dof": 40}})
        ),
        CONTROLS,
        {},
    )["null"]["equivalence"]
    assert default["margin"] == pytest.approx(
        (1.6820 + 2.2414) * 0.01 / 3**0.5, rel=1e-3
    )  # t_.95,42 + z_.9875
    assert default["margin_source"] == "what the noise supports at 97.5%"


def test_with_its_calibrated_spread_the_planted_control_is_called_by_the_z_test():
    """planted_noise: planted - null's calibrated spread, pooled with the run's own; the planted control is
    then called worse when z = mean sqrt(n) / sd reaches 1.96, the rule the sequential calls use."""
    cfg = parse({"planted": 0.2, "planted_noise": {"sd": 0.02, "dof": 40, "source": "draws"}})
    heads = {"raw": RAW, "curated": RAW - 0.02, "null": SAME, "planted": FLAT + 0.02}  # +0.03 over the null
    c = controls_block(Evidence(BASE, heads, "raw", "curated", {}, {}, cfg), CONTROLS, {})["planted"]
    test = c["test"]
    assert test["noise"]["dof"] == 42
    assert test["z"] == pytest.approx(0.03 * 3**0.5 / test["noise"]["sd"], rel=1e-9)
    assert c["called_worse"] is (test["z"] >= 1.959963984540054)
    assert c["called_worse"] is True  # the paired t alone (df 2) would not call it:
    assert c["diff_bpb"]["ci_low"] < 0


def _missed(effect: float) -> dict:
    """A planted control missed (+0.001 bpb over the null) with the calibrated dose ``effect``, spread 0.02."""
    cfg = parse(
        {"planted": 0.2, "planted_noise": {"sd": 0.02, "dof": 40, "effect": effect, "source": "draws"}}
    )
    heads = {"raw": RAW, "curated": RAW - 0.02, "null": SAME, "planted": SAME + 0.001}
    return controls_block(Evidence(BASE, heads, "raw", "curated", {}, {}, cfg), CONTROLS, {})


def test_with_its_calibrated_dose_the_planted_control_states_its_power_and_a_firm_miss_says_blind():
    """planted_noise.effect: the dose measured on the calibration draws; the run states the z test's power at
    its own seeds, Phi(effect sqrt(n) / sd - 1.96), and a miss at a power of at least 0.95 says the run
    cannot see a known effect."""
    block = _missed(0.06)
    test = block["planted"]["test"]
    z = 0.06 * 3**0.5 / test["noise"]["sd"] - 1.959963984540054
    assert test["effect"] == 0.06
    assert test["power"] == pytest.approx(0.5 * (1 + math.erf(z / 2**0.5)), rel=1e-9)
    assert test["power"] >= 0.95
    assert block["planted"]["called_worse"] is False
    assert block["decision"]["supported"] is False
    assert "inconclusive" not in block["decision"]
    (why,) = block["decision"]["reasons"]
    assert why.startswith(
        "the planted control (20% of the null's documents word-shuffled) is not called worse "
    )
    assert why.endswith(
        f" (its power at 3 seeds, for the +0.0600 bpb measured on fresh seeds: {test['power']:.2f}); this run "
        "cannot see a known effect"
    )
    assert block["planted"]["message"].endswith(
        f"x) (its power at 3 seeds, for the +0.0600 bpb measured on fresh seeds: "
        f"{test['power']:.2f}): this run could not see a known effect, so it cannot support a decision; raise "
        "the budget or the seeds"
    )


def test_a_miss_at_a_stated_power_below_095_is_inconclusive_with_the_seeds_that_make_it_firm():
    """A dose of +0.03 bpb on a spread of about 0.02 is called at 3 seeds with power 0.74: a working instrument
    misses it about one run in four, so the miss leaves no decision but does not say the instrument is blind,
    and it names the seeds at which the control's power reaches 0.95."""
    from curate.proxy.kinds.planted import seeds_for_power
    from curate.proxy.statistics.gate import power_z

    block = _missed(0.03)
    test = block["planted"]["test"]
    sd = test["noise"]["sd"]
    assert 0.5 < test["power"] < 0.95
    assert block["decision"]["supported"] is False
    assert block["decision"]["inconclusive"] is True
    firm = seeds_for_power(0.03, sd)
    assert power_z(0.03, sd, firm) >= 0.95 > power_z(0.03, sd, firm - 1)
    (why,) = block["decision"]["reasons"]
    assert why.endswith(
        f" (its power at 3 seeds, for the +0.0300 bpb measured on fresh seeds: {test['power']:.2f}); a working "
        f"instrument misses it about {1 - test['power']:.0%} of the time at this power, so the run is "
        f"inconclusive, not shown blind; about {firm} seeds give it 95% power"
    )
    assert block["planted"]["message"].endswith(
        "a miss a working instrument makes at this power, so the run is inconclusive; add seeds"
    )


def test_a_null_failure_beside_an_underpowered_planted_miss_is_not_inconclusive():
    """Inconclusive only when every failure is an underpowered miss: a separated null still says biased."""
    cfg = parse({"planted": 0.2, "planted_noise": {"sd": 0.02, "dof": 40, "effect": 0.03, "source": "draws"}})
    heads = {"raw": RAW, "curated": RAW - 0.02, "null": APART, "planted": APART + 0.001}
    block = controls_block(Evidence(BASE, heads, "raw", "curated", {}, {}, cfg), CONTROLS, {})
    assert block["planted"]["test"]["power"] < 0.95
    assert block["decision"]["supported"] is False
    assert "inconclusive" not in block["decision"]
    assert len(block["decision"]["reasons"]) == 2
