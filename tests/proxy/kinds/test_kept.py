"""``from: kept``: a selection's quantile bounds over the rows it draws from, its select applied to the
rows ``without_stages`` takes back, sweeps, and its token-shard jobs."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.proxy.kinds import RunFiles
from curate.proxy.kinds.kept import Kept
from curate.proxy.kinds.rejected import Rejected
from curate.proxy.spec.config import parse


def _files(tmp_path) -> RunFiles:
    (tmp_path / "kept").mkdir()
    pq.write_table(
        pa.table({"id": ["k0", "k1", "k2", "k3"], "s": [1.0, 2.0, 3.0, 4.0]}),
        tmp_path / "kept" / "part-00000.parquet",
    )
    (tmp_path / "rejected").mkdir()
    pq.write_table(
        pa.table(
            {
                "id": [f"r{i}" for i in range(7)],
                "s": [5.0, 6.0, 7.0, 8.0, 100.0, 200.0, float("nan")],
                "stage": ["x_v1"] * 4 + ["y_v1", "quarantine", "x_v1"],
                "reason": ["x_v1:low"] * 4 + ["y_v1:low", "quarantine:bad_utf8", "x_v1:low"],
            }
        ),
        tmp_path / "rejected" / "part-00000.parquet",
    )
    return RunFiles(
        sorted((tmp_path / "kept").glob("*.parquet")), sorted((tmp_path / "rejected").glob("*.parquet"))
    )


def test_quantiles_resolve_over_the_rows_a_recipe_draws_from(tmp_path):
    """A ``without_stages`` recipe's quantile band is taken over kept/ plus the rows those stages
    rejected (quarantine and other stages' rejections excluded); a plain kept recipe's over kept/."""
    files = _files(tmp_path)
    rule = {"column": "s", "min_quantile": 0.5}
    ablated = Kept("no_x", [rule], ["x_v1"])
    assert sorted(ablated.scores(files, "s").tolist()) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert ablated.resolved(files) == Kept("no_x", [{"column": "s", "min": 4.5}], ["x_v1"])
    assert Kept("k", [rule]).resolved(files).select == [{"column": "s", "min": 2.5}]
    assert sorted(Rejected("rejected").scores(files, "s").tolist()) == [5, 6, 7, 8, 100]
    with pytest.raises(PhaseError, match="nope: no scores"):
        Kept("k", [{"column": "nope", "max_quantile": 0.5}]).resolved(files)


def test_a_recipes_select_applies_to_the_rows_without_stages_adds(tmp_path):
    """Regression: the rows a ``without_stages`` recipe takes from rejected/ went in unselected (a
    classifier recipe at ``min_quantile: 0.5`` trained on 93% of the input)."""
    from curate.instrument.shards import select_rows

    (tmp_path / "kept").mkdir()
    (tmp_path / "rejected").mkdir()
    pq.write_table(
        pa.table({"id": ["k"], "text": ["a"], "s": [1.0]}), tmp_path / "kept" / "part-00000.parquet"
    )
    rejected = pa.table(
        {
            "id": ["r0", "r1", "r2"],
            "text": ["b", "c", "d"],
            "s": [0.0, 5.0, 5.0],
            "stage": ["x_v1", "x_v1", "y_v1"],
            "reason": ["x_v1:low", "x_v1:low", "y_v1:low"],
        }
    )
    pq.write_table(rejected, tmp_path / "rejected" / "part-00000.parquet")
    rule = {"column": "s", "min": 0.5}
    files = RunFiles(
        [tmp_path / "kept" / "part-00000.parquet"], [tmp_path / "rejected" / "part-00000.parquet"]
    )
    jobs = Kept("no_x", [rule], ["x_v1"]).file_jobs(
        parse({}), files, tmp_path / "out", {"tokenizer": "tok.json"}
    )
    assert [(j.rejected, j.rules, j.only_stages) for j in jobs] == [
        (False, [rule], None),
        (True, [rule], ["x_v1"]),
    ]
    assert [j.out for j in jobs] == [
        str(tmp_path / "out" / "kept-00000"),
        str(tmp_path / "out" / "rejected-00000"),
    ]
    rows, _, _ = select_rows(rejected, jobs[1])
    assert rows.column("id").to_pylist() == ["r1"]
    unscored = rejected.drop_columns(["s"])  # rows rejected before the scorer ran: they cannot pass
    assert select_rows(unscored, jobs[1])[0].num_rows == 0
    assert len(Kept("plain").file_jobs(parse({}), files, tmp_path / "out", {"tokenizer": "t"})) == 1


def test_a_sweep_is_one_recipe_per_value_and_plain_means_no_rule_and_no_stage():
    cfg = parse(
        {
            "recipes": {
                "raw": {"from": "raw"},
                "curated": {},
                "q": {"from": "kept", "sweep": {"column": "c.x", "min": [50, 100]}, "without_stages": ["a"]},
            }
        }
    )
    assert [r.name for r in cfg.recipes] == ["raw", "curated", "q@min=50", "q@min=100"]
    assert cfg.recipes[3] == Kept("q@min=100", [{"column": "c.x", "min": 100}], ["a"])
    assert [getattr(r, "plain", None) for r in cfg.recipes] == [None, True, False, False]
    assert cfg.recipes[2].record() == {
        "name": "q@min=50",
        "kind": "kept",
        "select": [{"column": "c.x", "min": 50}],
        "without_stages": ["a"],
    }


def test_select_rule_keys_are_checked():
    with pytest.raises(
        PhaseError,
        match=r"^proxy.recipes.hq.select\[0\].minimum: unknown key; valid keys: column, equals, exclusive, max, ",
    ):
        parse({"recipes": {"raw": {"from": "raw"}, "hq": {"select": [{"column": "x", "minimum": 1}]}}})
    with pytest.raises(PhaseError, match=r"^proxy.recipes.hq.select\[0\].min: expected float, got str 'a'$"):
        parse({"recipes": {"raw": {"from": "raw"}, "hq": {"select": [{"column": "x", "min": "a"}]}}})
    with pytest.raises(PhaseError, match=r"^proxy.recipes.q.sweep.column: required \(it has no default\)$"):
        parse({"recipes": {"raw": {"from": "raw"}, "q": {"sweep": {"min": [1, 2]}}}})
