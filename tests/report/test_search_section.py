"""The report's recipe-search section, from a hand-written search.json."""

from __future__ import annotations

from curate.report.search import html_section, markdown_section, search_rows, summary


def _m(v, lo, hi):
    return {"value": v, "ci_low": lo, "ci_high": hi}


SEARCH = {
    "objective": "multiplier",
    "baseline": "raw",
    "eta": 2,
    "rungs": [{"budget": 1000, "seeds": [0]}, {"budget": 4000, "seeds": [0, 1]}],
    "candidates": {
        "search:s@min=1": {},
        "search:s@min=2": {},
        "search:s@min=9": {"empty": "selects only 0 tokens"},
    },
    "empty": {"search:s@min=9": "selects only 0 tokens"},
    "history": [
        {
            "rung": 0,
            "numbers": {
                "search:s@min=1": {
                    "yield": 0.8,
                    "multiplier": _m(1.1, None, None),
                    "goodput": _m(0.88, None, None),
                },
                "search:s@min=2": {
                    "yield": 0.5,
                    "multiplier": _m(1.5, None, None),
                    "goodput": _m(0.75, None, None),
                },
            },
        },
        {
            "rung": 1,
            "numbers": {
                "search:s@min=2": {
                    "yield": 0.5,
                    "multiplier": _m(1.4, 1.1, 1.8),
                    "goodput": _m(0.7, 0.55, 0.9),
                }
            },
        },
    ],
    "pareto_last_rung": [{"recipe": "search:s@min=2", "yield": 0.5, "goodput": 0.7}],
    "winner": "search:s@min=2",
    "confirmation": {
        "seeds": [2, 3],
        "multiplier": _m(1.3, 0.9, 1.9),
        "goodput": {"value": 0.65, "ci": [0.45, 0.95]},
    },
}


def test_rows_winner_first_then_by_rung_reached():
    assert search_rows(SEARCH) == [
        ["s@min=2", "1", "50.0%", "1.40x [1.10, 1.80]", "0.70x [0.55, 0.90]", "winner; Pareto front"],
        ["s@min=1", "0", "80.0%", "1.10x", "0.88x", ""],
        ["s@min=9", "—", "—", "—", "—", "selects only 0 tokens"],
    ]


def test_summary_names_the_confirmation_on_fresh_seeds():
    s = summary(SEARCH)
    assert s.startswith(
        "3 candidates by multiplier vs raw, eta 2; rungs: 1,000 tokens x 1 seeds, 4,000 tokens x 2 seeds."
    )
    assert (
        "Winner s@min=2, confirmed on fresh seeds [2, 3]: multiplier 1.30x [0.90, 1.90], goodput 0.65x [0.45, 0.95]"
        in s
    )
    assert summary({**SEARCH, "winner": None}).endswith("No candidate could be ranked: there is no winner.")


def test_markdown_and_html_sections():
    md = markdown_section(SEARCH)
    assert md[0] == "## Recipe search"
    assert "| s@min=2 | 1 | 50.0% | 1.40x [1.10, 1.80] | 0.70x [0.55, 0.90] | winner; Pareto front |" in md
    html = html_section(SEARCH)
    assert html.startswith('<h2 id="search">Recipe search</h2>')
    assert html.count("<svg") == 1
    assert html.count("<tr>") == 4
    assert markdown_section(None) == []
    assert html_section(None) == ""
