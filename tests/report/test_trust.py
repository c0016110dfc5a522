"""Schema-2 goodput.json in the report: the verdict is goodput.json's sentence, the trust sections show
the same numbers in HTML and Markdown."""

from __future__ import annotations

from curate.report import trust
from curate.report.verdict import verdict

SENTENCE = (
    "no effect of curated vs raw is detected on the targets (wiki): the multiplier is within 0.80–1.20x"
)
G = {
    "baseline": "raw",
    "recipes": {
        "raw": {
            "yield": 1.0,
            "goodput": {"value": 1.0, "ci": [1.0, 1.0]},
            "accuracy": {"arc": {"at_T": 0.25}},
        },
        "curated": {"yield": 0.5, "goodput": {"value": 0.49, "ci": [0.4, 0.6]}},
        "null": {"yield": 0.5},
    },
    "verdict": {"recipe": "curated", "call": "not_called", "sentence": SENTENCE},
    "eval_set_info": {
        "wiki": {
            "kind": "text",
            "headline": True,
            "docs": 3,
            "path": "w.jsonl",
            "decontaminated": {"raw": 2},
        },
        "arc": {"kind": "choice", "headline": True, "items": 200, "path": "a.jsonl", "decontaminated": {}},
        "heldout": {"kind": "heldout", "headline": False, "docs": 9, "decontaminated": {}},
    },
    "controls": {
        "for": "curated",
        "skipped": {"rejected": "only 10 tokens of rejected (non-quarantine) data"},
        "null": {
            "diff_bpb": {"value": 0.001, "ci_low": -0.002, "ci_high": 0.004},
            "multiplier": {"value": 0.98, "ci_low": 0.9, "ci_high": 1.05},
            "contains_1": True,
            "message": "null fine",
        },
    },
    "power": {
        "n_seeds": 3,
        "sd_diff_bpb": 0.01,
        "mde_bpb": 0.031,
        "mde_multiplier": {"worse": 0.85, "better": 1.18},
        "seeds_needed": [
            {"multiplier": 1.2, "diff_bpb": -0.02, "seeds": 9},
            {"multiplier": 1.1, "diff_bpb": -0.01, "seeds": None},
        ],
    },
    "ladder": {
        "main": "proxy_1m@1000",
        "reference": "proxy_5m@2000",
        "warning": "the main point disagrees",
        "points": [
            {
                "name": "proxy_1m@1000",
                "params": 1e6,
                "tokens_per_param": 0.001,
                "compute_flops_per_run": 1e12,
                "seeds": [0, 1, 2],
                "recipes": {
                    "curated": {"multiplier": {"value": 0.9, "ci_low": 0.8, "ci_high": 1.1}},
                    "null": {"multiplier": {"value": 1.0}},
                },
                "ranking": ["raw", "curated", "null"],
                "decision_accuracy": {
                    "all_pairs_weighted": {
                        "value": 2 / 3,
                        "ci": [1 / 3, 1.0],
                        "pairs": 3,
                        "weight": 2.5,
                        "draws_with_value": 2000,
                    },
                    "called": {"value": 1.0, "ci": [0.5, 1.0], "pairs": 2, "draws_with_value": 1990},
                },
            },
            {
                "name": "proxy_5m@2000",
                "params": 4e6,
                "tokens_per_param": 0.0005,
                "compute_flops_per_run": 8e12,
                "seeds": [0, 1],
                "recipes": {
                    "curated": {"multiplier": {"value": 1.1, "ci_low": 1.0, "ci_high": 1.2}},
                    "null": {"multiplier": {"value": 1.0}},
                },
                "ranking": ["curated", "raw", "null"],
            },
        ],
        "noise_ceiling": {
            "all_pairs_weighted": {"value": 0.9, "ci": [0.8, 1.0], "draws_with_value": 2000},
            "called": {"value": None, "ci": None, "draws_with_value": 0},
            "splits": 6,
            "seeds_per_half": [2],
        },
        "chance": 0.5,
        "seeds_disjoint": True,
        "shared_seeds": {},
    },
}
MANIFEST = {"accounting": {"input": 10, "kept": 5}}


def test_the_report_verdict_is_goodput_jsons_sentence_with_goodput_and_controls():
    v = verdict(MANIFEST, G)
    assert v == (
        f"{SENTENCE}. Yield 50.0% of tokens, data goodput 0.49 (CI 0.40–0.60), below 1 per raw token trained "
        "once. Null control: inside its interval (no instrument bias seen). Curation kept 5 of 10 "
        "documents (50.0% of documents). It rests on a target of 3 documents (wiki), 200 items (arc) and a "
        "proxy trained at 0.001 tokens/param: a target that small gives wide intervals; far below the ~20 "
        "tokens/param of compute-optimal training, a ranking may not transfer. Decision: if your limit is "
        "compute, no recipe is established better than raw (not called); if it is data, this run does not "
        "decide: data goodput (yield x multiplier) values each raw token trained once, and a team short of "
        "data repeats it instead."
    )


def test_trust_sections_rows():
    secs = {sid: (title, header, rows, notes) for sid, title, header, rows, notes in trust.sections(G)}
    assert list(secs) == ["targets", "controls", "power", "ladder"]
    assert secs["targets"][2][0] == ["wiki", "text", "yes", "3 docs", "w.jsonl", "raw 2", "—"]
    assert secs["targets"][2][1][-1] == "25.0%"
    assert secs["targets"][2][2][2:4] == ["no", "9 docs"]
    assert secs["controls"][2] == [
        ["null (random raw subsample)", "+0.0010 [-0.0020, +0.0040]", "0.98x (0.90–1.05)", "yes"]
    ]
    assert "rejected control skipped: only 10 tokens" in secs["controls"][3][-1]
    assert secs["power"][2] == [["1.20x", "-0.0200", "9"], ["1.10x", "-0.0100", "> 1000"]]
    assert "multipliers below 0.85x or above 1.18x" in secs["power"][3][0]
    lad = secs["ladder"][2]
    assert lad[0][0] == "proxy_1m@1000 (main)"
    assert lad[1][0] == "proxy_5m@2000 (reference)"
    assert lad[0][5:] == [
        "0.90x (0.80–1.10)",
        "1.00x",
        "raw > curated > null (control)",
        "—",
        "66.7% [33.3%, 100.0%] of 3; 100.0% [50.0%, 100.0%] of 2",
    ]
    notes = secs["ladder"][3]
    assert notes[1] == (
        "Read it against the noise ceiling, the reference point against itself with half its seeds against the "
        "other half (6 splits): 90.0% [80.0%, 100.0%] over every pair, none (no pair called at half the seeds) "
        "on the calls; a point at the ceiling ranks as well as seed noise allows (each half has half the "
        "reference's seeds, so the ceiling is conservative); chance is 50.0%."
    )
    # the transfer study's answer, quoted from its committed JSON (tests/test_figures.py holds the figures)
    assert notes[2].startswith(
        "Whether the web reference point's rankings transfer to more compute was measured by the transfer "
        "study (docs/goodput.md; benchmarks/results/transfer_ladder-web-2026-12-08.json): 25 recipes, 300 pairs"
    )
    assert "against a noise ceiling of 90% [82%, 95%] and chance 50%" in notes[2]
    assert notes[-1] == "Warning: the main point disagrees"
    # not the withdrawn figure (five pairs, a collapsed interval); the seeds here are disjoint
    assert not any("[80%, 80%]" in n or "30x its compute calls" in n or "share seeds" in n for n in notes)
    assert all(len(row) == len(header) for _, _, header, rows, _ in trust.sections(G) for row in rows)
    assert secs["ladder"][1][-2:] == [
        "detectable",
        "decision accuracy: every pair, weighted; on the reference's calls",
    ]
    md = "\n".join(trust.markdown(G))
    html = trust.html(G)
    assert "| wiki | text | yes | 3 docs | w.jsonl | raw 2 | — |" in md
    assert '<h3 id="ladder">Scale ladder</h3>' in html
    assert '<figure id="ladder-chart"><svg' in html
    # the chart's second panel: decision accuracy with its interval, the noise ceiling and chance
    chart = html.split('<figure id="ladder-chart">')[1]
    assert ">decision accuracy</text>" in chart
    assert ">noise ceiling</text>" in chart
    assert ">chance</text>" in chart
    no_acc = {
        **G["ladder"],
        "points": [{k: v for k, v in p.items() if k != "decision_accuracy"} for p in G["ladder"]["points"]],
    }
    assert ">decision accuracy</text>" not in trust.html({**G, "ladder": no_acc}).split("ladder-chart")[1]


def test_schema_one_goodput_has_no_trust_sections():
    assert trust.sections({"recipes": {}}) == []


def test_warnings_join_the_verdict_once():
    g = {**G, "warnings": ["loss spikes were skipped during training (null: 4 steps)"]}
    v = verdict(MANIFEST, g)
    assert (
        "Warning: loss spikes were skipped during training (null: 4 steps). Curation kept 5 of 10 documents "
        "(50.0% of documents). It rests on"
    ) in v
    assert v.count("loss spikes") == 1


def test_a_one_point_ladder_claims_no_decision_accuracy():
    one = {**G, "ladder": {**G["ladder"], "points": G["ladder"]["points"][:1], "reference": "proxy_1m@1000"}}
    secs = {sid: rows for sid, _, _, rows, _ in trust.sections(one)}
    assert secs["ladder"][0][-1] == "— (reference)"  # never "100.0%": a point agrees with itself
    assert {sid: rows for sid, _, _, rows, _ in trust.sections(G)}["ladder"][1][-1] == "— (reference)"


def test_shared_seeds_a_ceiling_without_seeds_and_an_older_run_are_said_as_they_are():
    main = {k: v for k, v in G["ladder"]["points"][0].items() if k != "decision_accuracy"}
    old = {
        **main,
        "decision_accuracy_vs_reference": 0.8,
        "decision_accuracy_ci": [0.8, 1.0],
        "decision_pairs": 5,
    }
    lad = {
        **G["ladder"],
        "points": [old, G["ladder"]["points"][1]],
        "noise_ceiling": {
            "all_pairs_weighted": {"value": None, "ci": None, "draws_with_value": 0},
            "called": {"value": None, "ci": None, "draws_with_value": 0},
            "splits": 0,
            "seeds_per_half": [],
        },
        "seeds_disjoint": False,
        "shared_seeds": {"0": ["proxy_1m@1000", "proxy_5m@2000"], "1": ["proxy_1m@1000", "proxy_5m@2000"]},
    }
    secs = {sid: (rows, notes) for sid, _, _, rows, notes in trust.sections({**G, "ladder": lad})}
    rows, notes = secs["ladder"]
    assert rows[0][-1] == "80.0% [80.0%, 100.0%] (its calls, unadjusted)"  # an older run's share of the calls
    assert notes[1] == (
        "Read it against chance (50.0%); the noise ceiling (the reference's seeds split in halves) needs 4 "
        "seeds at the reference point."
    )
    assert notes[2] == (
        "The points share seeds (seed 0 at proxy_1m@1000, proxy_5m@2000; seed 1 at proxy_1m@1000, "
        "proxy_5m@2000): they share initialisation and data order, which inflates their agreement and narrows "
        "its interval; proxy.disjoint_seeds gives every point seeds of its own."
    )


def test_the_ladder_notes_name_the_points_where_a_control_failed():
    lad = {**G["ladder"], "null_separated_at": ["proxy_5m@2000"], "planted_not_called_at": ["proxy_5m@2000"]}
    notes = {sid: n for sid, _, _, _, n in trust.sections({**G, "ladder": lad})}["ladder"]
    assert notes[-2:] == [
        "Warning: the null control separates from raw at proxy_5m@2000: rankings there are doubtful.",
        "Warning: the planted control is not called worse at proxy_5m@2000: that point could not see a known "
        "effect; rankings there are doubtful.",
    ]


def test_the_scope_sentence_names_a_small_target_and_regime():
    from curate.report.verdict import scope_sentence

    big = {
        "eval_set_info": {"wiki": {"headline": True, "docs": 5000}},
        "regime": {"tokens_per_param": 25.0},
    }
    assert (
        scope_sentence(big)
        == "It rests on a target of 5,000 documents (wiki) and a proxy trained at 25 tokens/param"
    )
    small = {
        "eval_set_info": {"wiki": {"headline": True, "docs": 13}},
        "regime": {"tokens_per_param": 0.04},
    }
    assert scope_sentence(small) == (
        "It rests on a target of 13 documents (wiki) and a proxy trained at 0.04 tokens/param: a target that "
        "small gives wide intervals; far below the ~20 tokens/param of compute-optimal training, a ranking "
        "may not transfer"
    )
    assert scope_sentence({"recipes": {}}) is None


def test_a_control_kind_is_rowed_by_the_fields_its_block_carries():
    shuffled = {
        "diff_bpb": {"value": 0.002, "ci_low": -0.001, "ci_high": 0.005},
        "multiplier": {"value": 0.95, "ci_low": 0.9, "ci_high": 1.01},
        "called_worse": False,
        "message": "shuffled not called",
    }
    g = {**G, "controls": {**G["controls"], "shuffled": shuffled}}
    secs = {sid: (rows, notes) for sid, _, _, rows, notes in trust.sections(g)}
    assert secs["controls"][0][1] == [
        "shuffled",
        "+0.0020 [-0.0010, +0.0050]",
        "0.95x (0.90–1.01)",
        "NOT called worse",
    ]
    assert secs["controls"][1][:2] == ["null fine", "shuffled not called"]
