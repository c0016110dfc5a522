"""Recipe search: successive halving on synthetic curves, the search spec, and a tiny end-to-end search
with an empty candidate."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from curate.proxy.design.halving import successive_halving
from curate.proxy.design.search import format_table, pareto, rank_key
from curate.proxy.phase import run_phase
from curate.proxy.spec.config import ProxyConfigError, parse
from curate.proxy.spec.entries import Rung
from curate.proxy.spec.search import parse_search
from curate.runtime.context import RunContext
from tests.proxy.toy import tiny_section, write_kept, write_rejected

# bpb(t) = a + c / sqrt(t): "fast" leads at short budgets, "best" has the lowest bpb at the full budget.
CURVES = {
    "best": (1.0, 30.0),
    "fast": (1.3, 5.0),
    "c": (1.5, 40.0),
    "d": (2.0, 30.0),
    "e": (1.4, 35.0),
    "g": (3.0, 20.0),
}


def _bpb(name: str, t: float) -> float:
    a, c = CURVES[name]
    return a + c / np.sqrt(t)


def test_successive_halving_on_synthetic_curves_picks_the_known_best():
    budgets = [100, 10_000]
    assert min(CURVES, key=lambda n: _bpb(n, budgets[-1])) == "best"  # the known best at the full budget
    assert min(CURVES, key=lambda n: _bpb(n, budgets[0])) == "fast"  # but not at the short one
    calls = []

    def evaluate(names, k):
        calls.append((k, sorted(names)))
        return {n: -_bpb(n, budgets[k]) for n in names}

    winner, history = successive_halving(sorted(CURVES), 2, 3, evaluate)
    assert winner == "best"
    # rung 0: all six on the short budget, the best ceil(6/3) = 2 advance; rung 1: those two at full budget
    assert calls == [(0, ["best", "c", "d", "e", "fast", "g"]), (1, ["best", "fast"])]
    assert history[0]["advanced"] == ["fast", "best"]
    assert history[1]["advanced"] == ["best"]
    assert history[1]["scores"] == {"best": -_bpb("best", 10_000), "fast": -_bpb("fast", 10_000)}


def test_successive_halving_drops_empty_candidates_and_may_find_none():
    winner, history = successive_halving(
        ["a", "b", "c"], 2, 2, lambda names, k: {"a": None, "b": 1.0, "c": 2.0}
    )
    assert winner == "c"
    assert history[0]["advanced"] == ["c"]
    winner, history = successive_halving(["a"], 3, 2, lambda names, k: {"a": None})
    assert winner is None
    assert len(history) == 1
    assert history[0]["advanced"] == []


def _rec(value: float, side: str | None, diff: float, y: float = 1.0) -> dict:
    """A goodput.json recipe entry as the search reads it: the multiplier (a bound at the measured
    range's end when ``side``), goodput = yield x multiplier with the same bound, the paired difference."""
    return {
        "multiplier": {"value": value, "bounds": {"value": side}},
        "goodput": {"value": y * value, "bounds": {"value": side}},
        "paired": {"diff_bpb": {"value": diff}},
    }


# the baseline's measured range is 0.5x to 2x T: '>' at 2.00 is "more than 2", not 2
BOUNDED = {
    "a": _rec(2.0, ">", -0.05),
    "b": _rec(2.0, ">", -0.08),  # the same bound, a larger measured gain
    "c": _rec(1.99, None, -0.04),
    "d": _rec(2.0, None, -0.045),  # measured exactly at the range's end
    "e": _rec(0.5, "<", 0.10),
    "f": _rec(0.6, None, 0.08),
}


def test_a_bound_ranks_above_values_below_it_and_bounds_at_one_end_tie_by_the_measured_difference():
    assert rank_key(BOUNDED["a"], "multiplier") == (-2.0, -1, -0.05)
    assert rank_key(BOUNDED["d"], "multiplier") == (-2.0, 0, -0.045)
    assert rank_key(BOUNDED["e"], "multiplier") == (-0.5, 1, 0.10)
    order = sorted(BOUNDED, key=lambda n: (*rank_key(BOUNDED[n], "multiplier"), n))
    # b before a (by the difference, not by name), both before the measured 2.00 and 1.99; '<0.50' last
    assert order == ["b", "a", "d", "c", "f", "e"]
    scores = {n: r["multiplier"]["value"] for n, r in BOUNDED.items()}
    winner, history = successive_halving(
        sorted(BOUNDED),
        2,
        2,
        lambda names, k: {n: scores[n] for n in names},
        lambda n, k: rank_key(BOUNDED[n], "multiplier"),
    )
    assert history[0]["advanced"] == ["b", "a", "d"]
    assert winner == "b"
    # without the bounds' rank the old order: 2.00 ties broken by name, a bound read as the value 2.00
    _, plain = successive_halving(sorted(BOUNDED), 1, 2, lambda names, k: {n: scores[n] for n in names})
    assert plain[0]["advanced"] == ["a"]
    # goodput carries the multiplier's bound: at the same yield the same order
    assert sorted(BOUNDED, key=lambda n: (*rank_key(BOUNDED[n], "goodput"), n)) == order


def test_pareto_front_in_yield_and_goodput():
    pts = {"a": (0.9, 0.8), "b": (0.5, 1.2), "c": (0.4, 1.0), "d": (0.9, 0.7)}
    assert pareto(pts) == ["a", "b"]


def test_parse_search_candidates_rungs_and_errors():
    spec = parse_search(
        {"columns": {"x.s": {"min": [1, 2]}, "y.t": {"max_quantile": [0.5]}}}, budget=4096, seeds=[0, 1, 2]
    )
    assert spec.candidates == {
        "search:x.s@min=1": [{"column": "x.s", "min": 1.0}],
        "search:x.s@min=2": [{"column": "x.s", "min": 2.0}],
        "search:y.t@max_quantile=0.5": [{"column": "y.t", "max_quantile": 0.5}],
    }
    assert spec.rungs == [Rung(1024, (0,)), Rung(4096, (0, 1, 2))]
    assert spec.confirm_seeds == (3, 4, 5)
    assert spec.eta == 3
    assert spec.objective == "multiplier"
    prod = parse_search(
        {"columns": {"x.s": {"min": [1, 2]}, "y.t": {"max": [5]}}, "product": True}, budget=4096, seeds=[0]
    )
    assert list(prod.candidates) == ["search:x.s@min=1+y.t@max=5", "search:x.s@min=2+y.t@max=5"]
    sampled = parse_search({"columns": {"x.s": {"min": [1, 2, 3, 4]}}, "sample": 2, "seed": 1}, 4096, [0])
    assert len(sampled.candidates) == 2
    for raw, msg in (
        ({"columns": {}}, r"proxy.search.columns: expected a mapping {column: "),
        ({"columns": {"x": {}}}, r"proxy.search.columns.x: expected a mapping of min, max"),
        (
            {"columns": {"x": {"top": [1]}}},
            r"proxy.search.columns.x.top: expected one of 'min', 'max', 'min_quantile', 'max_quantile', got 'top'$",
        ),
        (
            {"columns": {"x": {"min_quantile": [0.5, 2]}}},
            r"^proxy.search.columns.x.min_quantile\[1\]: expected a value in \[0, 1\] \(a quantile\), got 2.0$",
        ),
        ({"columns": {"x": {"min": [1]}}, "eta": 1}, r"^proxy.search.eta: expected a value >= 2, got 1$"),
        (
            {"columns": {"x": {"min": [1]}}, "objective": "loss"},
            r"^proxy.search.objective: expected one of 'multiplier', 'goodput', 'data_limited', got 'loss'$",
        ),
        (
            {"columns": {"x": {"min": [1]}}, "confirm_seeds": [0]},
            r"^proxy.search.confirm_seeds: confirmation seeds must be fresh",
        ),
        (
            {"columns": {"x": {"min": [1]}}, "grid": 1},
            r"^proxy.search.grid: unknown key; valid keys: columns, ",
        ),
        ({"columns": {"x": {"min": [1]}}, "rungs": []}, r"^proxy.search.rungs: expected a non-empty list"),
    ):
        with pytest.raises(ProxyConfigError, match=msg):
            parse_search(raw, budget=4096, seeds=[0, 1])
    with pytest.raises(
        ProxyConfigError, match=r"proxy.search.rungs\[0\].budget: budget 100 tokens < 4 steps"
    ):
        parse({"search": {"columns": {"x": {"min": [1]}}, "rungs": [{"budget": 100}]}})


SECTION = tiny_section(
    search={
        "columns": {"toy.score": {"min_quantile": [0.2, 0.6], "min": [5.0]}},
        "rungs": [{"budget": 32 * 4 * 4, "seeds": 1}, {"budget": 32 * 4 * 8, "seeds": 2}],
        "eta": 2,
        "confirm_seeds": 2,
    },
)


@pytest.fixture(scope="module")
def search_run(tmp_path_factory):
    from curate.core.engine import InlineEngine

    d = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(0)
    write_kept(d, rng)
    write_rejected(d, ["zz qq " * 30], ["s:x"])
    config = {"name": "toy", "input": {"path": "x.jsonl", "format": "jsonl"}, "stages": [], "proxy": SECTION}
    ctx = RunContext(
        run_dir=d, config=config, engine=InlineEngine(progress=False), manifest={}, section=parse(SECTION)
    )
    (d / "manifest.json").write_text(json.dumps({"config": config}))
    summary = run_phase(ctx)  # proxy.search runs after the phase's own recipes
    out = json.loads((d / "search.json").read_text())
    assert summary["search"] == {"winner": out["winner"], "search": "search.json"}
    return d, out


def test_search_end_to_end(search_run):
    d, out = search_run
    names = [
        "search:toy.score@min=5",
        "search:toy.score@min_quantile=0.2",
        "search:toy.score@min_quantile=0.6",
    ]
    assert list(out["candidates"]) == names
    # min=5 selects nothing (scores are in [0, 1]): reported as empty, not a crash
    assert list(out["empty"]) == ["search:toy.score@min=5"]
    assert out["candidates"]["search:toy.score@min=5"]["empty"].startswith("selects only 0 tokens")
    h0, h1 = out["history"]
    assert h0["scores"]["search:toy.score@min=5"] is None
    assert len(h0["advanced"]) == 1
    assert h1["advanced"] == [out["winner"]]
    assert set(h1["scores"]) == {out["winner"]}
    assert out["rungs"] == [{"budget": 512, "seeds": [0]}, {"budget": 1024, "seeds": [0, 1]}]
    c = out["confirmation"]
    assert c["seeds"] == [2, 3]
    assert c["multiplier"]["ci_low"] is not None
    assert (d / "proxy" / "search" / "confirm" / out["winner"] / "seed3" / "result.json").exists()
    assert (d / "proxy" / "search" / "rung0" / "raw" / "seed0" / "result.json").exists()
    assert set(json.loads((d / "goodput.json").read_text())["recipes"]) >= {"raw", "curated"}
    assert [p["recipe"] for p in out["pareto_last_rung"]] == [out["winner"]]
    win = yaml.safe_load((d / out["winner_pipeline"]).read_text())
    assert win["stages"][-1]["label"] == "search_winner"
    q = float(out["winner"].rsplit("=", 1)[1])
    assert win["stages"][-1]["select"] == [{"column": "toy.score", "min": pytest.approx(q)}]
    table = format_table(out)
    assert "empty: selects only 0 tokens" in table
    assert f"winner {out['winner']} on fresh seeds [2, 3]" in table


def test_cli_search_resumes_without_retraining(search_run, capsys):
    from curate.cli import main

    d, out = search_run
    stamps = {p: p.stat().st_mtime_ns for p in (d / "proxy" / "search").glob("*/*/seed*/result.json")}
    # rung 0: raw + 2 non-empty candidates x 1 seed; rung 1: raw + 1 x 2 seeds; confirm: raw + winner x 2
    assert len(stamps) == 3 + 4 + 4
    assert main(["search", str(d), "--engine", "inline"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == "search by multiplier vs raw (eta 2)"
    assert f"search: {d / 'search.json'}" in printed
    assert json.loads((d / "search.json").read_text()) == out  # the same result, from the finished runs
    assert {p: p.stat().st_mtime_ns for p in (d / "proxy" / "search").glob("*/*/seed*/result.json")} == stamps


def test_search_without_stages_draws_from_the_ablated_rows_and_the_winner_drops_them(tmp_path):
    """``without_stages``: candidates are kept/ plus the rows those stages rejected; the winner pipeline
    leaves the stages out and resolves its quantile over the same rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.proxy.design.search import _write_winner

    spec = parse_search(
        {"columns": {"s": {"min_quantile": [0.5]}}, "without_stages": ["f_v1"]}, budget=4096, seeds=[0]
    )
    assert spec.without_stages == ["f_v1"]
    with pytest.raises(
        ProxyConfigError, match=r"^proxy.search.without_stages: expected a list, got str 'f_v1'$"
    ):
        parse_search({"columns": {"s": {"min": [1]}}, "without_stages": "f_v1"}, 4096, [0])
    (tmp_path / "kept").mkdir()
    (tmp_path / "rejected").mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "s": [1.0, 2.0]}), tmp_path / "kept" / "part-00000.parquet")
    pq.write_table(
        pa.table({"id": ["c", "d"], "s": [3.0, 4.0], "stage": ["f_v1"] * 2, "reason": ["f_v1:low"] * 2}),
        tmp_path / "rejected" / "part-00000.parquet",
    )
    config = {"name": "toy", "stages": [{"score": "s_v1"}, {"filter": "f_v1"}, {"dedup": "d_v1"}]}
    ctx = RunContext(run_dir=tmp_path, config=config, engine=None, manifest={})
    rel = _write_winner(
        ctx, "search:s@min_quantile=0.5", spec.candidates["search:s@min_quantile=0.5"], ["f_v1"]
    )
    win = yaml.safe_load((tmp_path / rel).read_text())
    assert win["stages"] == [
        {"score": "s_v1"},
        {"dedup": "d_v1"},
        {"select": [{"column": "s", "min": 2.5}], "label": "search_winner"},
    ]


def test_a_search_by_data_limited_goodput_ranks_the_candidates_repeated_against_raw_repeated(tmp_path):
    from curate.core.engine import InlineEngine

    with pytest.raises(
        ProxyConfigError, match=r"^proxy.search.objective: data_limited needs proxy.data_limited"
    ):
        parse({**SECTION, "search": {**SECTION["search"], "objective": "data_limited"}})
    section = {
        **SECTION,
        "search": {
            "columns": {"toy.score": {"min_quantile": [0.2, 0.6]}},
            "rungs": [{"budget": 32 * 4 * 8, "seeds": 2}],
            "objective": "data_limited",
            "confirm_seeds": 2,
        },
        "data_limited": {"k": [2], "repetition": []},
    }
    rng = np.random.default_rng(0)
    write_kept(tmp_path, rng)
    write_rejected(tmp_path, ["zz qq " * 30], ["s:x"])
    config = {"name": "toy", "input": {"path": "x.jsonl", "format": "jsonl"}, "stages": [], "proxy": section}
    (tmp_path / "manifest.json").write_text(json.dumps({"config": config}))
    ctx = RunContext(
        run_dir=tmp_path,
        config=config,
        engine=InlineEngine(progress=False),
        manifest={},
        section=parse(section),
    )
    run_phase(ctx)
    out = json.loads((tmp_path / "search.json").read_text())
    assert out["objective"] == "data_limited"
    rung = json.loads((tmp_path / "search" / "rung0.json").read_text())
    limited = {e["recipe"]: e for e in rung["data_limited"] if e["role"] == "recipe"}
    names = sorted(out["candidates"])
    assert set(limited) == set(names)  # every candidate's share of raw's pool at k = 2, no null (no controls)
    assert [e["k"] for e in rung["data_limited"]] == [2.0, 2.0]
    # the rung's scores are the data-limited goodput, and the winner is the one ranked first by it
    scores = out["history"][0]["scores"]
    assert scores == {n: limited[n]["goodput"]["value"] for n in names}
    best = min(
        names,
        key=lambda n: (
            *rank_key({"data_limited": limited[n]["goodput"], "paired": limited[n]}, "data_limited"),
            n,
        ),
    )
    assert out["winner"] == best
    assert out["confirmation"]["data_limited"]["value"] is not None
