"""The mixture search's decision: read from the confirmation on fresh seeds alone, a sentence that names
the better mixture when the search cannot beat the natural one or the best single source, the export
allowed only when the chosen mixture was called better in a run that supports a decision."""

from __future__ import annotations

from curate.proxy.design.mixassess import decision, split_subset


def _m(value: float, lo: float, hi: float, hi_bound: str | None = None) -> dict:
    return {"value": value, "ci_low": lo, "ci_high": hi, "bounds": {"ci_high": hi_bound}}


def _conf(call: str, single_call: str, vs_call: str, supported: bool = True) -> dict:
    return {
        "seeds": [1, 2, 3, 4, 5],
        "supported": supported,
        "unsupported_reasons": []
        if supported
        else ["the null control is not shown within +-0.04 bpb of raw."],
        "chosen": {"call": call, "multiplier": _m(1.09, 0.59, 2.0, ">"), "p_value": 0.26},
        "best-single": {
            "source": "askhistorians",
            "call": single_call,
            "multiplier": _m(1.43, 1.05, 2.0, ">"),
        },
        "chosen_vs_best_single": {"call": vs_call, "diff_bpb": {"value": 0.0208}},
    }


INSIDE = {"inside": True}


def test_not_called_names_the_natural_mixture_and_a_better_single_source():
    d = decision(_conf("not_called", "better", "not_called"), INSIDE)
    assert d == {
        "chosen_called_better": False,
        "export": False,
        "better": "only-askhistorians",
        "sentence": "The search cannot beat the natural mixture: the chosen mixture was not called better than it "
        "on 5 fresh seeds (multiplier 1.09x [0.59, >2.00], paired p = 0.26); keep the natural mixture. "
        "askhistorians alone was called better than the natural mixture (multiplier 1.43x [1.05, >2.00]): "
        "it is the better mixture here.",
    }
    plain = decision(_conf("worse", "not_called", "worse"), INSIDE)
    assert plain["better"] == "natural"
    assert plain["sentence"].startswith(
        "The search cannot beat the natural mixture: the chosen mixture was called worse"
    )
    assert plain["sentence"].endswith(
        "keep the natural mixture. askhistorians alone beat the chosen mixture, though not the natural mixture."
    )


def test_called_better_allows_the_export_unless_a_single_source_is_better_still():
    d = decision(_conf("better", "not_called", "not_called"), INSIDE)
    assert (d["export"], d["better"]) == (True, "chosen")
    assert d["sentence"] == (
        "The chosen mixture trains better than the natural mixture on 5 fresh seeds: multiplier "
        "1.09x [0.59, >2.00], paired p = 0.26."
    )
    still = decision(_conf("better", "better", "worse"), INSIDE)
    assert (still["export"], still["better"]) == (True, "only-askhistorians")
    assert still["sentence"].endswith(
        " askhistorians alone was better still (paired bpb difference +0.0208): use it."
    )


def test_a_run_that_cannot_support_a_decision_exports_nothing():
    d = decision(_conf("better", "better", "not_called", supported=False), INSIDE)
    assert (d["export"], d["chosen_called_better"], d["better"]) == (False, False, "natural")
    assert d["sentence"] == (
        "The search cannot beat the natural mixture: the chosen mixture was called better than it on 5 fresh "
        "seeds (multiplier 1.09x [0.59, >2.00], paired p = 0.26), but the run cannot support a decision (the "
        "null control is not shown within +-0.04 bpb of raw); keep the natural mixture."
    )


def test_a_choice_outside_the_sampled_region_is_said():
    d = decision(_conf("not_called", "not_called", "not_called"), {"inside": False})
    assert d["sentence"].endswith(
        " The chosen weights lie outside the region the search sampled: the regression extrapolated."
    )


def test_the_split_subset_is_the_natural_mixture_and_a_seeded_third():
    names = ["natural", *(f"s{i:02d}" for i in range(30))]
    sub = split_subset(names, None, 0)
    assert sub[0] == "natural"
    assert len(sub) == 11  # a third of 31, rounded up
    assert len(set(sub)) == 11
    assert sub == split_subset(names, None, 0)
    assert len(split_subset(names[:6], None, 0)) == 6  # at least 8, at most all
    assert split_subset(names, 0, 0) == []
    assert len(split_subset(names, 5, 0)) == 5
