"""``curate proxy``'s terminal table, including a one-seed run (no interval: it used to crash)."""

from __future__ import annotations

from curate.proxy.cli import format_recipes


def test_table_with_and_without_an_interval():
    g = {
        "recipes": {
            "raw": {
                "multiplier": {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "extrapolated": False},
                "yield": 1.0,
                "goodput": {"value": 1.0},
            },
            "curated": {
                "multiplier": {"value": 1.25, "ci_low": None, "ci_high": None, "extrapolated": True},
                "yield": 0.5,
                "goodput": {"value": 0.625},
            },
            "empty": {
                "multiplier": {"value": None, "ci_low": None, "ci_high": None, "extrapolated": False},
                "yield": 0.0,
                "goodput": {"value": None},
            },
        },
        "ranking": {"tiers": [["curated", "raw"]]},
        "decision_agreement": 1.0,
    }
    lines = format_recipes(g).splitlines()
    assert lines[1].split() == ["raw", "1.000", "[1.000,", "1.000]", "1.000", "1.0"]
    assert lines[2].split() == ["curated", "1.250", "[no", "CI]*", "0.500", "0.625"]
    assert lines[3].split() == ["empty", "n/a", "0.000", "None"]
    assert (
        lines[4]
        == "ranking (called only where CIs separate): [['curated', 'raw']]; decision agreement T/4 vs T: 1.0"
    )
