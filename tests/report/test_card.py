"""The verdict card, the forest plot, the glossary and bounds respected in every "above/below 1" sentence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from curate.report import front, trust
from curate.report.card import card_lines, decision_line
from curate.report.charts import thin_ticks
from curate.report.forest import forest_rows, forest_svg
from curate.report.verdict import _side, verdict
from curate.report.verdict import decision_line as verdict_decision
from curate.verbs.summary import format_run_summary
from tests.report.report_run import DATA

MANIFEST = {"accounting": {"input": 46, "kept": 30}}


@pytest.fixture
def g2() -> dict[str, Any]:
    return json.loads((DATA / "goodput_v2.json").read_text())


def bounded(lo: float, hi: float, y: float) -> dict[str, Any]:
    """A recipe whose multiplier interval [lo, >hi] ends in a bound, at yield y."""
    return {
        "yield": y,
        "multiplier": {
            "value": (lo + hi) / 2,
            "ci_low": lo,
            "ci_high": hi,
            "bounds": {"value": None, "ci_low": None, "ci_high": ">"},
        },
        "goodput": {
            "value": y * (lo + hi) / 2,
            "ci": [y * lo, y * hi],
        },  # no bounds of its own: the multiplier's
    }


def test_an_interval_is_below_or_above_1_only_when_all_of_it_is_bounds_included() -> None:
    assert _side(0.435, 0.6, 0.5) == "below"
    assert _side(0.435, 0.6, 0.5, (None, ">")) == "overlaps"  # >0.60: the true end may pass 1
    assert _side(0.3, 0.9, 0.5, ("<", None)) == "below"  # <0.30 low end: still all below 1
    assert _side(1.2, 1.5, 1.3, ("<", None)) == "overlaps"  # <1.20 low end: may reach below 1
    assert _side(2.0, 2.0, 2.0, (">", ">")) == "above"
    assert _side(1.1, None, 1.2) == "above"


def test_a_bounded_multiplier_at_low_yield_is_not_called_below_1() -> None:
    # m in [1.45, >2.00] at yield 0.3: goodput [0.435, >0.60] passes 1 at m > 3.3, so it is not "below 1"
    g = {"baseline": "raw", "recipes": {"raw": {"yield": 1.0}, "strict": bounded(1.45, 2.0, 0.3)}}
    assert verdict_decision(g) == (
        "Decision: if your limit is compute, take strict (called better than raw); if it is data, this run "
        "does not decide: data goodput (yield x multiplier) values each raw token trained once, and a team "
        "short of data repeats it instead"
    )
    lines = card_lines(MANIFEST, g)
    assert lines[-1] == (
        "Data goodput of strict (yield x multiplier, each raw token trained once): 0.52 (CI 0.43–>0.60) at "
        "yield 30.0%."
    )
    # never "train on all of raw" from yield x multiplier alone, whatever side of 1 it is on
    del g["recipes"]["strict"]["multiplier"]["bounds"]
    assert "train on" not in str(verdict_decision(g))
    assert not any("train on" in x for x in card_lines(MANIFEST, g))
    assert "train on" not in verdict(MANIFEST, g)


def test_two_recipes_called_better_are_each_named_not_offered_as_a_choice(g2: dict[str, Any]) -> None:
    g2["multiple_comparisons"]["pairs"]["strict"]["call"] = "better"
    assert decision_line(g2) == (
        "Decision: curated and strict each called better than raw per training token (calls Holm-adjusted "
        "across 2 recipes)."
    )


def test_the_card_of_a_run_with_every_new_field(g2: dict[str, Any]) -> None:
    assert card_lines(MANIFEST, g2) == [
        "Decision: curated called better than raw per training token (calls Holm-adjusted across 2 recipes).",
        "Best recipe: curated, multiplier 1.38x (CI 1.34–1.42) against raw.",
        "Not detectable: effects between 0.87x and 1.11x with 3 seeds.",
        "Controls: null passed (no bias seen); planted passed (20% corruption called worse).",
        "Data goodput of curated (yield x multiplier, each raw token trained once): 0.85 (CI 0.83–0.88) at "
        "yield 62.0%.",
    ]


def test_the_decision_follows_the_holm_calls_not_each_interval(g2: dict[str, Any]) -> None:
    g2["recipes"]["strict"]["multiplier"].update(ci_low=1.05)  # its own interval excludes 1 ...
    g2["multiple_comparisons"]["pairs"]["curated"]["call"] = "not_called"  # ... but Holm calls neither
    assert decision_line(g2) == (
        "Inconclusive: no recipe is called better than raw per training token (calls Holm-adjusted across 2 "
        "recipes)."
    )
    assert str(verdict_decision(g2)).startswith(
        "Decision: if your limit is compute, no recipe is established better than raw (not called)"
    )
    g2["multiple_comparisons"]["pairs"]["strict"]["call"] = "worse"
    assert decision_line(g2).startswith(
        "Inconclusive: no recipe is called better than raw per training token (strict called worse)"
    )


@pytest.mark.parametrize("where", ["verdict", "controls"])
def test_a_run_that_cannot_support_a_decision_says_so_first(g2: dict[str, Any], where: str) -> None:
    reason = "the planted control (20% word-shuffled) is not called worse: diff +0.0010 [-0.0040, +0.0060]"
    if where == "verdict":
        g2["verdict"].update(supported=False, unsupported_reasons=[reason])
    else:
        g2["controls"]["decision"] = {"supported": False, "reasons": [reason]}
    g2["controls"]["planted"]["called_worse"] = False
    lines = card_lines(MANIFEST, g2)
    assert lines[0] == f"This run cannot support a decision: {reason}."
    assert not any(x.startswith(("Decision", "Best recipe", "Data goodput")) for x in lines)
    assert not any("pays" in x for x in lines)
    assert (
        lines[1] == "Controls: null passed (no bias seen); planted FAILED (20% corruption not called worse)."
    )
    assert lines[2].startswith("Next step: ")
    assert "Decision:" not in verdict(MANIFEST, g2)  # the verdict in full presents no decision either


def test_a_gate_failed_only_by_an_underpowered_miss_reads_inconclusive(g2: dict[str, Any]) -> None:
    """A planted control missed where the run states its power below 0.95: no decision either, but the first
    line says inconclusive, not that the run cannot support one."""
    reason = "the planted control (60% word-shuffled) is not called worse (its power at 3 seeds: 0.66)"
    g2["controls"]["decision"] = {"supported": False, "reasons": [reason], "inconclusive": True}
    g2["controls"]["planted"]["called_worse"] = False
    lines = card_lines(MANIFEST, g2)
    assert lines[0] == f"Inconclusive, no decision at these seeds: {reason}."
    assert not any(x.startswith(("Decision", "Best recipe", "Data goodput")) for x in lines)
    assert lines[2].startswith("Next step: ")


def test_the_card_of_an_old_or_empty_goodput_json_says_less() -> None:
    old = json.loads((DATA / "goodput.json").read_text())  # schema 1: no controls, power, Holm or verdict
    lines = card_lines(MANIFEST, old)
    assert len(lines) == 3
    assert "not adjusted for multiple comparisons" in lines[0]
    assert not any(x.startswith(("Controls", "Not detectable")) for x in lines)
    assert card_lines(MANIFEST, {"baseline": "raw", "recipes": {"raw": {}}}) == [
        "No recipe besides the baseline raw and the controls: nothing to decide."
    ]
    assert card_lines(MANIFEST, None) == [
        "kept 30 of 46 documents (65.2% of documents). No proxy runs (no goodput.json): whether the curation "
        "helps training is not measured."
    ]


def test_the_undetectable_range_carries_its_bounds(g2: dict[str, Any]) -> None:
    g2["power"]["by_pair"]["curated"]["mde_multiplier"] = {
        "worse": 0.5,
        "better": 2.0,
        "bounds": {"worse": None, "better": ">"},
    }
    g2["power"]["n_seeds"] = 1
    assert card_lines(MANIFEST, g2)[2] == "Not detectable: effects between 0.50x and >2.00x with 1 seeds."


def test_forest_rows_put_recipes_first_and_mark_controls(g2: dict[str, Any]) -> None:
    rows = forest_rows(g2)
    assert [(r["name"], r["control"]) for r in rows] == [
        ("strict", False),
        ("curated", False),
        ("null", True),
        ("planted", True),
    ]
    svg = forest_svg(g2)
    assert svg is not None
    assert "null (control)" in svg
    assert "planted (control)" in svg
    assert "not detectable (MDE band)" in svg
    assert svg.count("<text") >= 4 + 5  # row labels and the thinned x ticks
    empty = copy.deepcopy(g2)
    for r in empty["recipes"].values():
        r["multiplier"] = {"value": None}
    empty["controls"] = {}
    assert forest_svg(empty) is None


def test_thin_ticks_drops_labels_that_would_collide_and_keeps_1x() -> None:
    ticks = [0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0]
    labels = [f"{t:g}x" for t in ticks]
    assert thin_ticks(ticks, labels, (0.7, 2.2), axis_in=2.0, log=True, must=1.0) == [0, 2, 5, 6]
    assert thin_ticks(ticks, labels, (0.7, 2.2), axis_in=50.0, log=True, must=1.0) == list(range(7))
    # the eval points of a loss curve: 36.9k and 61.4k would touch on a narrow axis
    toks = [4096.0, 36864.0, 61440.0, 524288.0]
    assert thin_ticks(toks, ["4.1k", "36.9k", "61.4k", "524k"], (3000, 700000), axis_in=1.5, log=True) == [
        0,
        1,
        3,
    ]


def test_signal_and_noise_per_eval_set_are_shown_with_the_noisy_ones_flagged(g2: dict[str, Any]) -> None:
    secs = {sid: (header, rows, notes) for sid, _, header, rows, notes in trust.sections(g2)}
    header, rows, notes = secs["signal-noise"]
    assert header == ["eval set", "signal", "noise", "snr", ""]
    assert rows == [
        ["held_out_docs", "0.011", "0.003", "3.67", "ok"],
        ["held_out_web", "0.002", "0.005", "0.4", "TOO NOISY"],
    ]
    assert "no set is chosen, weighted or dropped by it" in notes[0]
    assert "signal-noise" not in {s[0] for s in trust.sections({**g2, "eval_set_info": {}})}


def test_calls_lines_mark_controls_name_holm_and_skip_removed_fields(g2: dict[str, Any]) -> None:
    md = front.calls_markdown(g2)
    assert md[0] == (
        "Ranking (a pair is called only where its interval excludes no difference): curated > strict = raw = "
        "null (control) > planted (control)."
    )
    assert md[1].startswith("Calls of the 2 recipes against raw are Holm-adjusted (family-wise 5.0%)")
    assert (
        md[2]
        == "Decision agreement across the finished ladder points: 100.0% of 1 recipe pairs (controls excluded)."
    )
    old = json.loads((DATA / "goodput.json").read_text())
    assert old["decision_agreement"] == 1.0  # the removed T/4-vs-T figure: not shown
    assert front.calls_markdown(old) == [
        "Ranking (a pair is called only where its interval excludes no difference): curated = strict = raw."
    ]


def test_the_report_opens_with_the_card_forest_and_glossary(built_run_v2: Path) -> None:
    html = (built_run_v2 / "report.html").read_text()
    md = (built_run_v2 / "report.md").read_text()
    assert html.index('id="card"') < html.index('id="forest"') < html.index('id="goodput"')
    assert '<a href="#glossary">Glossary</a>' in html
    for term in (
        "called",
        "multiplier",
        "data goodput",
        "tokens/param",
        "detectable effect (MDE)",
        "control",
        "Holm",
    ):
        assert f"{term}</dt>" in html
        assert f"- **{term}**:" in md
    card = card_lines(
        json.loads((built_run_v2 / "manifest.json").read_text()),
        json.loads((DATA / "goodput_v2.json").read_text()),
    )
    assert md.splitlines()[2:7] == [f"> {x}  " for x in card[:4]] + [f"> {card[4]}"]
    assert "| null (control) | 0.98 (0.90–1.06) | 62.0% |" in md
    assert "Signal and noise per eval set" in html
    assert "TOO NOISY" in md
    assert 'id="holm-note"' in html
    assert "Decision agreement between T/4 and T" not in html
    assert "device-h" not in html
    assert 'null</b><span class="flag"> control</span>' in html


def test_the_terminal_summary_opens_with_the_card() -> None:
    manifest = {
        "name": "demo",
        "stages": [],
        "accounting": {"input": 2, "kept": 1, "rejected": 1, "quarantined": 0, "balanced": True},
        "wall_s": 1.0,
        "phases": {
            "proxy": {"headline": "3 recipes", "wall_s": 9.0},
            "report": {"headline": "Decision: keep raw.\nControls: null passed.", "wall_s": 0.5},
        },
    }
    lines = format_run_summary(manifest, "/nowhere").splitlines()
    assert lines[:3] == ["Decision: keep raw.", "Controls: null passed.", ""]
    assert lines[3].startswith("run demo -> /nowhere")
    assert "report: built (0.5 s)" in lines
    del manifest["phases"]["proxy"]  # no proxy runs: no verdict to open with, the line stays in its place
    assert format_run_summary(manifest, "/nowhere").splitlines()[0].startswith("run demo")


def test_the_verdict_in_full_still_reads_goodput_jsons_sentence(g2: dict[str, Any]) -> None:
    v = verdict(MANIFEST, g2)
    assert v.startswith("curated is better than raw on the targets (held_out_docs)")
    # a ranking pair without its recorded difference says "not called", never a made-up +0.0000
    assert "strict vs raw not called;" in v
    assert "+0.0000" not in v


def test_the_best_recipe_is_the_best_called_one_not_the_controlled_one() -> None:
    from curate.report.card import best_recipe

    def m(v: float) -> dict:
        return {"multiplier": {"value": v, "ci_low": v - 0.1, "ci_high": v + 0.1}}

    g = {
        "baseline": "raw",
        "recipes": {"raw": m(1.0), "curated": m(1.05), "toward_target": m(1.31), "wide": m(1.6)},
        "verdict": {"recipe": "curated"},
        "multiple_comparisons": {
            "method": "Holm",
            "family": ["curated", "toward_target", "wide"],
            "pairs": {
                "curated": {"call": "not_called"},
                "toward_target": {"call": "better"},
                "wide": {"call": "not_called"},
            },
        },
    }
    assert best_recipe(g) == "toward_target"  # the highest called better; "wide" is higher but not called
    g["multiple_comparisons"]["pairs"]["toward_target"]["call"] = "not_called"
    assert best_recipe(g) == "wide"  # nothing called: the highest multiplier


def test_the_goodput_notes_never_speak_of_a_fitted_tail(run_dir) -> None:
    from curate.report.build import build_report

    html = build_report(run_dir)[0].read_text()
    assert "fitted tail" not in html
    assert "never extrapolated" in html


def test_an_inconclusive_run_says_so_with_its_next_step_and_a_futile_one_keeps_the_baseline(g2):
    for r in ("curated", "strict"):
        g2["multiple_comparisons"]["pairs"][r]["call"] = "not_called"
    lines = card_lines(MANIFEST, g2)
    assert lines[0].startswith("Inconclusive: no recipe is called better than raw")
    assert not any(x.startswith(("Best recipe", "Data goodput")) for x in lines)
    assert lines[-1] == (  # the fixture's table has no 1.2x row: its middle one, and the cost at its own rate
        "Next step: 9 seeds would call a 1.05x effect 80% of the time (30 more runs, about 15 CPU-minutes "
        "more at this run's rate)."
    )
    # a sequential design that stopped both as futile: below the effect worth deciding, keep the baseline
    g2["multiple_comparisons"]["design"] = {"looks": [3, 4, 5]}
    for r in ("curated", "strict"):
        g2["multiple_comparisons"]["pairs"][r].update(look=0, seeds=3, z=0.4)
    assert decision_line(g2).startswith(
        "Decision: keep raw; curated, strict stopped below the effect worth deciding"
    )


def test_the_best_of_several_recipes_shows_the_interval_it_keeps_as_the_best(g2):
    m = dict(g2["recipes"]["curated"]["multiplier"], ci_low=1.28, ci_high=1.49)
    g2["recipes"]["curated"]["multiplier_adjusted"] = m
    assert card_lines(MANIFEST, g2)[1] == (
        "Best recipe: curated, multiplier 1.38x (CI 1.34–1.42) against raw; picked as the best of 2, its "
        "interval is 1.28–1.49."
    )


def _limited(k: float, call: str, *, supported: bool = True, d: float = -0.02) -> dict[str, Any]:
    """A data-limited entry of strict at ratio k (as goodput.json writes it)."""
    return {
        "k": k,
        "recipe": "strict",
        "role": "recipe",
        "arm": f"strict~k{k:g}",
        "baseline_arm": f"raw~k{k:g}",
        "tokens": {"per_seed": [100, 100], "mean": 100.0},
        "epochs_at_T": {"recipe": 3.3 * k, "baseline": k},
        "diff_bpb": {"value": d, "ci_low": d - 0.01, "ci_high": d + 0.01, "n": 4, "sd": 0.005},
        "per_seed_diff": [d, d, d, d],
        "call": call,
        "goodput": {
            "value": 1.3,
            "ci_low": 1.1,
            "ci_high": 1.6,
            "bounds": {"value": None, "ci_low": None, "ci_high": None},
            "method": "m",
        },
        "supported": supported,
        "unsupported_reason": None if supported else "the null at k = 4 separates from raw's pool",
    }


def test_the_data_limited_decision_comes_from_the_data_limited_calls_and_only_they_say_train_on_raw() -> None:
    g = {"baseline": "raw", "recipes": {"raw": {"yield": 1.0}, "strict": bounded(1.45, 2.0, 0.3)}}
    g["data_limited"] = [_limited(1, "better"), _limited(4, "worse", d=0.03)]
    assert verdict_decision(g) == (
        "Decision: if your limit is compute, take strict (called better than raw); if it is data (compute = k "
        "x the raw data, measured): strict repeated beats raw repeated at k = 1; raw repeated beats strict "
        "repeated at k = 4 (train on all of raw there)"
    )
    last = card_lines(MANIFEST, g)[-1]
    assert last.startswith("Data goodput of strict (yield x multiplier, each raw token trained once): 0.52")
    assert last.endswith(
        "When data is the limit (compute = k x the raw data, measured): k = 1: strict repeated 3.3 times beats "
        "raw repeated 1.0 times, -0.0200 bpb [-0.0300, -0.0100], worth 1.30x (1.10–1.60) the fresh tokens raw "
        "repeated is worth; k = 4: raw repeated beats strict repeated, +0.0300 bpb [+0.0200, +0.0400]: train "
        "on all of raw at that ratio; it stops paying between k = 1 and 4."
    )
    # a data-limited call the arm's null does not support is no decision, and says no "train on"
    g["data_limited"] = [_limited(4, "worse", supported=False, d=0.03)]
    assert verdict_decision(g).endswith(
        "if it is data, the data-limited measurement cannot decide: the null at k = 4 separates from raw's pool"
    )
    assert not any("train on" in x for x in card_lines(MANIFEST, g))
    assert "k = 4: no decision (the null at k = 4 separates from raw's pool)" in card_lines(MANIFEST, g)[-1]
