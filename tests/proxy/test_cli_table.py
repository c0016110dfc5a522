"""``curate proxy``'s and ``curate ablate``'s terminal tables: a one-seed run (no interval: it used to crash),
controls marked, Holm calls, and an ablation whose per-token and per-raw-token calls differ."""

from __future__ import annotations

from curate.proxy.cli import format_ablation, format_recipes


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
        "decision_agreement": 1.0,  # an older file's T/4-vs-T figure: not printed
    }
    lines = format_recipes(g).splitlines()
    assert lines[1].split() == ["raw", "1.000", "[1.000,", "1.000]", "1.000", "1.0"]
    assert lines[2].split() == ["curated", "1.250", "[no", "CI]*", "0.500", "0.625"]
    assert lines[3].split() == ["empty", "n/a", "0.000", "None"]
    assert lines[4] == "ranking (a pair called only where its own paired interval excludes 0): curated = raw"
    assert len(lines) == 5


def test_table_marks_controls_and_prints_holm_calls_and_the_ladder_agreement():
    row = {"yield": 0.5, "goodput": {"value": 0.6, "bounds": {"value": ">"}}}
    g = {
        "baseline": "raw",
        "recipes": {
            "raw": {
                "multiplier": {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0},
                "yield": 1.0,
                "goodput": {"value": 1.0},
            },
            "curated": {
                "multiplier": {
                    "value": 1.2,
                    "ci_low": 1.1,
                    "ci_high": 2.0,
                    "bounds": {"value": ">", "ci_high": ">"},
                },
                **row,
            },
            "null": {"role": "control", "multiplier": {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1}, **row},
        },
        "controls": {"null": {}},
        "ranking": {"tiers": [["curated"], ["raw", "null"]]},
        "multiple_comparisons": {
            "method": "Holm",
            "pairs": {"curated": {"call": "better", "p_holm": 0.0123}},
        },
        "ladder": {"decision_agreement": {"value": 1.0, "pairs": 1, "points": ["a", "b"]}},
    }
    lines = format_recipes(g).splitlines()
    assert lines[2].split() == ["curated", ">1.200", "[1.100,", ">2.000]", "0.500", ">0.6"]
    assert lines[3].split()[:2] == ["null", "(control)"]
    assert lines[4].endswith(": curated > raw = null (control)")
    assert lines[5] == "vs raw, Holm-adjusted: curated better (p_holm 0.0123)"
    assert lines[6] == "decision agreement across finished ladder points (controls out): 1.00"


def test_ablation_table_labels_each_interval_with_its_own_call():
    # The bpb difference (per training token) is not called, but the yield ratio puts the whole goodput
    # effect below 1 (per raw token): it used to print "0.912 [0.700, 0.951] not_called".
    ab = {
        "subject": "curated",
        "baseline": "raw",
        "point": {"model": "proxy_tiny", "budget": 1024, "seeds": [0, 1, 2]},
        "stages": {
            "gopher_quality_v1": {
                "removed_docs": 1200,
                "diff_bpb_with_minus_without": {"value": -0.002, "ci_low": -0.009, "ci_high": 0.005},
                "call": "not_called",
                "multiplier_effect": {"value": 1.04, "ci_low": 0.97, "ci_high": 1.08},
                "goodput_effect": {"value": 0.912, "ci_low": 0.7, "ci_high": 0.951},
            },
            "pii_v1": {
                "removed_docs": 3,
                "diff_bpb_with_minus_without": {"value": -0.02, "ci_low": -0.03, "ci_high": -0.01},
                "call": "pays",
                "multiplier_effect": {"value": 1.3, "ci_low": 1.2, "ci_high": None},
                "goodput_effect": {"value": 1.29, "ci_low": 1.19, "ci_high": None},
            },
        },
        "skipped": {"normalize_v1": "removed no documents"},
    }
    lines = format_ablation(ab).splitlines()
    assert lines[2].split()[-6:] == ["goodput", "effect", "[CI]", "per", "raw", "token"]
    assert lines[3].split() == [
        "gopher_quality_v1",
        "1,200",
        "-0.0020",
        "[-0.0090,",
        "+0.0050]",
        "1.040",
        "[0.970,",
        "1.080]",
        "not",
        "called",
        "0.912",
        "[0.700,",
        "0.951]",
        "costs",
    ]
    # an effect whose high end leaves the measured range: its low end alone, above 1, calls it
    assert lines[4].split() == [
        "pii_v1",
        "3",
        "-0.0200",
        "[-0.0300,",
        "-0.0100]",
        "1.300",
        "[1.200,",
        "—]",
        "pays",
        "1.290",
        "[1.190,",
        "—]",
        "pays",
    ]
    assert lines[5].split() == ["normalize_v1", "0", "skipped:", "removed", "no", "documents"]
