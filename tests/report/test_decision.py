"""The headline's decision sentence among recipes (besides the baseline and the controls)."""

from __future__ import annotations

from curate.report.verdict import decision_sentence


def _rec(v, lo, hi):
    return {"multiplier": {"value": v, "ci_low": lo, "ci_high": hi}}


def _goodput(separated: bool):
    return {
        "baseline": "raw",
        "controls": {"for": "curated", "skipped": {}, "null": {}, "rejected": {}},
        "recipes": {
            "raw": _rec(1.0, 1.0, 1.0),
            "curated": _rec(1.5, 0.9, 2.5),
            "toward": _rec(2.0, 1.2, 3.0),
            "null": _rec(3.0, 0.5, 9.0),  # a control, never a candidate even when it measures highest
            "rejected": _rec(0.7, 0.3, 1.4),
        },
        "ranking": {
            "pairs": [
                {
                    "a": "curated",
                    "b": "toward",
                    "separated": separated,
                    "better": "toward" if separated else None,
                    "diff_bpb": {"value": 0.02, "ci_low": -0.01, "ci_high": 0.05},
                }
            ]
        },
        "power": {"mde_bpb": 0.0712},
    }


def test_not_called_names_the_interval_and_the_detectable_difference():
    assert decision_sentence(_goodput(False)) == (
        "Recipes by multiplier: toward 2.00x (CI 1.20–3.00), curated 1.50x (CI 0.90–2.50); "
        "toward vs curated not called (paired bpb difference toward - curated -0.0200 [-0.0500, +0.0100]); "
        "this run separates two recipes only when their bpb differs by more than 0.0712"
    )


def test_called_and_a_single_recipe():
    assert decision_sentence(_goodput(True)).endswith("; toward beats curated (called)")
    g = _goodput(True)
    g["recipes"]["toward"] |= {"yield": 0.25, "goodput": {"value": 0.5, "ci": [0.3, 0.75]}}
    g["ranking"]["pairs"].append(
        {"a": "raw", "b": "toward", "separated": True, "better": "toward", "diff_bpb": {"value": 0.05}}
    )
    assert decision_sentence(g) == (
        "Recipes by multiplier: toward 2.00x (CI 1.20–3.00) at yield 25.0%, goodput 0.50 (CI 0.30–0.75), "
        "curated 1.50x (CI 0.90–2.50); toward beats curated (called); toward beats raw (called)"
    )
    one = _goodput(False)
    del one["recipes"]["toward"]
    assert decision_sentence(one) is None
