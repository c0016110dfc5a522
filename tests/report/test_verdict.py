"""The plain-language verdict: derived from the numbers, calling a difference only where a CI excludes it."""

from __future__ import annotations

from typing import Any

from curate.report.verdict import count, num, pct, pick_recipe, ratio, recipe_sentence, verdict

MANIFEST = {"accounting": {"input": 1000, "kept": 620, "rejected": 380, "quarantined": 0, "balanced": True}}


def rec(
    m: float | None, m_lo: float | None, m_hi: float | None, y: float, *, extrapolated: bool = False
) -> dict[str, Any]:
    g = None if m is None else y * m
    return {
        "multiplier": {"value": m, "ci_low": m_lo, "ci_high": m_hi, "extrapolated": extrapolated},
        "yield": y,
        "goodput": {
            "value": g,
            "ci": [None if m_lo is None else y * m_lo, None if m_hi is None else y * m_hi],
        },
    }


def goodput(curated: dict[str, Any], *, separated: bool = True) -> dict[str, Any]:
    return {
        "baseline": "raw",
        "recipes": {"raw": rec(1.0, 1.0, 1.0, 1.0), "curated": curated},
        "ranking": {
            "pairs": [
                {
                    "a": "curated",
                    "b": "raw",
                    "separated": separated,
                    "better": "curated" if separated else None,
                }
            ]
        },
    }


def test_curated_beats_raw_but_does_not_pay_per_raw_token() -> None:
    v = verdict(MANIFEST, goodput(rec(1.3, 1.1, 1.5, 0.62)))
    assert v == (
        "curated beats raw: 1.30x tokens-to-target (CI 1.10–1.50); yield 62.0% of tokens; data goodput 0.81 "
        "(CI 0.68–0.93), below 1 per raw token trained once. At T its eval bpb CI is separated from raw's "
        "(curated is lower). Curation kept 620 of 1,000 documents (62.0% of documents). Decision: if your "
        "limit is compute, take curated (called better than raw); if it is data, this run does not decide: "
        "data goodput (yield x multiplier) values each raw token trained once, and a team short of data "
        "repeats it instead."
    )


def test_overlapping_intervals_are_called_unsettled() -> None:
    v = verdict(MANIFEST, goodput(rec(1.6, 0.9, 2.4, 0.62, extrapolated=True), separated=False))
    assert v.startswith(
        "curated vs raw: 1.60x tokens-to-target (CI 0.90–2.40) (extrapolated beyond the baseline's "
        "curve), an interval that includes 1x, so no difference per training token is established; "
        "yield 62.0% of tokens; data goodput 0.99 (CI 0.56–1.49) (its interval includes 1)"
    )
    assert "At T its eval bpb CI overlaps raw's: the ranking of the two is not called." in v
    assert v.endswith(
        "Decision: if your limit is compute, no recipe is established better than raw (not called); "
        + "if it is data, this run does not decide: data goodput (yield x multiplier) values each raw token trained once, and a team short of data repeats it instead."
    )


def test_curation_that_pays() -> None:
    v = verdict(MANIFEST, goodput(rec(2.0, 1.8, 2.2, 0.8)))
    assert "data goodput 1.60 (CI 1.44–1.76), above 1 per raw token trained once" in v
    assert v.endswith(
        "Decision: if your limit is compute, take curated (called better than raw); "
        + "if it is data, this run does not decide: data goodput (yield x multiplier) values each raw token trained once, and a team short of data repeats it instead (curated above 1 even so)."
    )


def test_worse_than_baseline() -> None:
    v = verdict(MANIFEST, goodput(rec(0.7, 0.6, 0.8, 0.9)))
    assert v.startswith("curated is worse than raw: 0.70x tokens-to-target (CI 0.60–0.80)")
    assert v.endswith(
        "Decision: if your limit is compute, keep raw (every recipe is called worse per training token); "
        + "if it is data, this run does not decide: data goodput (yield x multiplier) values each raw token trained once, and a team short of data repeats it instead."
    )


def test_unbounded_multiplier() -> None:
    v = verdict(MANIFEST, goodput(rec(None, 1.2, None, 0.5)))
    assert v.startswith(
        "curated reaches a loss the raw baseline never reaches on its fitted curve "
        "(multiplier unbounded); yield 50.0% of tokens; data goodput unknown"
    )


def test_no_goodput_and_baseline_only() -> None:
    assert verdict(MANIFEST, None) == (
        "kept 620 of 1,000 documents (62.0% of documents). No proxy runs (no goodput.json): whether "
        "the curation helps training is not measured."
    )
    only = {"baseline": "raw", "recipes": {"raw": rec(1.0, 1.0, 1.0, 1.0)}}
    assert verdict(MANIFEST, only).startswith(
        "kept 620 of 1,000 documents (62.0% of documents). goodput.json has no recipe besides"
    )


def test_the_verdict_is_about_the_best_goodput() -> None:
    g = goodput(rec(1.3, 1.1, 1.5, 0.62))
    g["recipes"]["strict"] = rec(1.5, 1.2, 1.8, 0.3)  # higher multiplier, lower goodput (0.45 < 0.81)
    assert pick_recipe(g) == "curated"
    assert recipe_sentence("strict", g["recipes"]["strict"], "raw").startswith("strict beats raw: 1.50x")


def test_formatters() -> None:
    assert (ratio(1.375), ratio(None), pct(0.6204), count(1705525.92), count(None)) == (
        "1.38",
        "—",
        "62.0%",
        "1,705,526",
        "—",
    )
    assert (num(2.61e-08), num(87.5), num(62914560.0), num(float("inf")), num(0)) == (
        "2.61e-08",
        "87.5",
        "62,914,560",
        "∞",
        "0",
    )


def test_only_the_extrapolated_numbers_carry_the_star() -> None:
    from curate.report.tables import GOODPUT_COLUMNS, extrapolated_parts

    g = goodput(rec(0.95, 0.8, 1.3, 0.6, extrapolated=True))
    g["budget"] = 1000
    g["recipes"]["raw"]["curves"] = {"wiki": {"tokens": [250, 500, 1000]}}
    # the value (0.95 x T) and the low bound sit on the measured curve; only the high bound is beyond it
    assert extrapolated_parts(g, "curated") == {"value": False, "ci_low": False, "ci_high": True}
    assert extrapolated_parts(g, "raw") == {"value": False, "ci_low": False, "ci_high": False}
    del g["recipes"]["raw"]["curves"]  # no curve to tell: the flag is the value's
    assert extrapolated_parts(g, "curated") == {"value": True, "ci_low": False, "ci_high": False}
    headers = [h for h, _ in GOODPUT_COLUMNS]
    assert "yield (tokens)" in headers
    assert "learning signal (bpb / token)" in headers
