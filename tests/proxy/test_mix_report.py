"""The report's mixture section: rows, the summary sentence and the chart, from a mix.json-shaped dict."""

from __future__ import annotations

from curate.report.mixture import html_section, markdown_section, mixture_rows, summary


def _row(w: dict[str, float], ep: float, bpb: float | None, loo: float | None, ok: bool = True) -> dict:
    r = {"weights": w, "max_epochs": ep, "within_epoch_limit": ok, "measured_bpb": {}}
    if bpb is not None:
        r["measured_bpb"]["rung0"] = bpb
    if loo is not None:
        r["heldout_predicted_bpb"] = loo
    return r


MIX = {
    "by": "source",
    "sources": [{"name": "a"}, {"name": "b"}],
    "horizon": 10_000,
    "max_epochs": 4.0,
    "mixtures": {
        "natural": _row({"a": 0.5, "b": 0.5}, 1.0, 3.2, 3.25),
        "d00": _row({"a": 0.2, "b": 0.8}, 1.6, 3.1, 3.12),
        "d01": _row({"a": 0.9, "b": 0.1}, 1.8, 3.4, 3.38),
        "only-b": _row({"a": 0.0, "b": 1.0}, 5.0, 3.3, 3.0, ok=False),
        "predicted": _row({"a": 0.1, "b": 0.9}, 1.8, None, None),
    },
    "regression": {
        "model": "loglinear",
        "requested": "auto",
        "held_out": 4,
        "heldout_spearman": {"value": 0.8, "ci": [0.2, 1.0]},
        "permutation_p": 0.04,
        "n_perm": 200,
        "noise_ceiling": {"mixtures": 3, "seeds": [0, 3], "split_spearman": 0.81, "ceiling": 0.9},
    },
    "chosen": {
        "name": "predicted",
        "weights": {"a": 0.1, "b": 0.9},
        "predicted_bpb": 3.05,
        "predicted_interval": [3.0, 3.1],
        "region": {
            "inside": False,
            "outside_range": {"a": {"weight": 0.1, "sampled": [0.2, 0.9]}},
            "nearest_tv": 0.1,
            "spacing_tv_p95": 0.2,
        },
    },
    "confirmation": {
        "seeds": [1, 2],
        "chosen": {
            "multiplier": {"value": 1.2, "ci_low": 1.05, "ci_high": 1.4, "bounds": {}},
            "muennighoff_factor": 0.92,
            "call": "better",
            "p_value": 0.012,
        },
        "controls": {
            "null": {"multiplier": {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1}, "contains_1": True}
        },
        "power": {"mde_multiplier": {"worse": 0.8, "better": 1.25}},
    },
    "decision": {"export": True, "sentence": "The chosen mixture trains better than the natural mixture."},
}


def test_rows_put_the_chosen_then_the_natural_mixture_first():
    rows = mixture_rows(MIX)
    assert [r[0] for r in rows] == ["predicted", "natural", "d00", "only-b", "d01"]
    assert rows[0] == ["predicted", "a 0.10, b 0.90", "1.80", "—", "—", "chosen"]
    assert rows[1] == ["natural", "a 0.50, b 0.50", "1.00", "3.2", "3.25", "the data's own shares"]
    assert rows[3] == ["only-b", "b 1.00", "5.00", "3.3", "3", "over 4 epochs"]


def test_summary_names_the_rank_correlation_choice_and_confirmation():
    assert summary(MIX) == (
        "The chosen mixture trains better than the natural mixture. "
        "5 mixtures of 2 sources by source (horizon 10,000 tokens, at most 4 epochs per source preferred). "
        "The loglinear regression (chosen by held-out error) from weights to target bpb ranks held-out "
        "mixtures with Spearman 0.8 (95% CI 0.2 to 1, 4 mixtures, each predicted by a fit without it; "
        "permutation p = 0.04 over 200 refitted permutations). Noise ceiling: the same 3 mixtures on two "
        "seeds rank alike at Spearman 0.81, so no predictor could reach much above 0.9. Chosen (predicted): "
        "a 0.10, b 0.90, predicted 3.05 bpb [3, 3.1]. Outside the region the search sampled: a 0.1 (sampled "
        "0.2 to 0.9). The chosen mixture on fresh seeds [1, 2] against the natural mixture: multiplier "
        "1.20x [1.05, 1.40] (better, paired p = 0.012), each source repeated in the runs as at the horizon "
        "(Muennighoff's fit would value those epochs at 0.920; not applied). Null "
        "control (the natural mixture on another document draw per seed): 1.00x [0.90, 1.10]. Detectable at "
        "80% power: below 0.80x or above 1.25x."
    )


def test_html_and_markdown_sections():
    assert html_section(None) == ""
    assert markdown_section(None) == []
    html = html_section(MIX)
    assert html.startswith('<h2 id="mixture">Mixture search</h2>')
    assert "<svg" in html  # predicted vs measured, 4 held-out points
    md = markdown_section(MIX)
    assert md[:3] == ["## Mixture search", "", summary(MIX)]
    assert md[6] == "| predicted | a 0.10, b 0.90 | 1.80 | — | — | chosen |"
    assert len([x for x in md if x.startswith("| ")]) == 2 + 5  # header, alignment, a row per mixture


def test_a_mix_json_from_before_k_fold_and_the_decision_still_renders():
    old = {
        **MIX,
        "regression": {"model": "linear", "held_out": 4, "spearman": {"value": 0.8, "ci": [0.2, 1.0]}},
    }
    old["mixtures"] = {n: dict(r) for n, r in MIX["mixtures"].items()}
    old["mixtures"]["natural"]["loo_predicted_bpb"] = old["mixtures"]["natural"].pop("heldout_predicted_bpb")
    del old["decision"]
    assert mixture_rows(old)[1][4] == "3.25"
    assert summary(old).startswith(
        "5 mixtures of 2 sources by source (horizon 10,000 tokens, at most 4 epochs per source preferred). "
        "The linear regression from weights to target bpb ranks held-out mixtures with Spearman 0.8 (95% CI "
        "0.2 to 1, 4 mixtures, each predicted by a fit without it)."
    )
