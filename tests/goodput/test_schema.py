"""``goodput.json`` as one typed object: every file on record reads and writes back as it was (schema 3) or
as :func:`upgrade` makes it (schemas 1 and 2), the keys in their order; a schema-3 file is read strictly,
with errors naming the key; the writer keeps the bytes the proxy phase always wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curate.goodput.schema import (
    SCHEMA_VERSION,
    ControlBlock,
    Goodput,
    GoodputError,
    Model,
    as_recipe,
    load,
    upgrade,
    write,
)
from curate.goodput.typed import slots_of
from tests.goodput.records import path_of, recorded

RECORDED = recorded()


@pytest.mark.parametrize(("name", "d"), RECORDED, ids=[n for n, _ in RECORDED])
def test_every_recorded_file_reads_and_writes_back_as_upgraded(name: str, d: dict[str, Any]) -> None:
    g = Goodput.from_json(d)
    assert d.get("schema_version", 1) < SCHEMA_VERSION  # on record: older schemas
    assert g.schema_version == SCHEMA_VERSION
    assert json.dumps(g.to_json()) == json.dumps(upgrade(d))  # equal, and the keys in their order


def test_every_written_file_reads_strictly_and_writes_back_exactly(
    written: dict[str, dict[str, Any]],
) -> None:
    assert written
    for d in written.values():
        assert d["schema_version"] == SCHEMA_VERSION
        assert json.dumps(Goodput.from_json(d).to_json()) == json.dumps(d)


def test_the_typed_object_holds_the_numbers(v3: dict[str, Any]) -> None:
    g = Goodput.from_json(v3)
    cur = g.recipes["curated"]
    assert cur.multiplier.value == v3["recipes"]["curated"]["multiplier"]["value"]
    assert (cur.goodput.ci_low, cur.goodput.ci_high) == (
        v3["recipes"]["curated"]["goodput"]["ci_low"],
        v3["recipes"]["curated"]["goodput"]["ci_high"],
    )
    assert cur.goodput.bounds.to_json() == cur.multiplier.bounds.to_json()  # yield x multiplier: its marks
    assert cur.goodput.bounds.to_json() == v3["recipes"]["curated"]["goodput"]["bounds"]
    assert cur.yield_ == v3["recipes"]["curated"]["yield"]
    assert g.controls.for_ == "curated"
    assert sorted(g.controls.checks) == ["null", "planted", "rejected"]
    assert g.controls.checks["null"].contains_1 is v3["controls"]["null"]["contains_1"]
    assert g.controls.decision.supported is v3["controls"]["decision"]["supported"]
    assert g.verdict.supported is v3["verdict"]["supported"]
    assert [p.name for p in g.ladder.points] == [p["name"] for p in v3["ladder"]["points"]]


def test_a_missing_required_key_is_an_error_naming_it(v3: dict[str, Any]) -> None:
    del v3["recipes"]["curated"]["multiplier"]["ci_low"]
    with pytest.raises(GoodputError) as e:
        Goodput.from_json(v3)
    assert str(e.value) == "goodput.json: recipes.curated.multiplier: missing 'ci_low'"
    assert (e.value.path, e.value.problem) == ("recipes.curated.multiplier", "missing 'ci_low'")


def test_an_unknown_key_and_a_wrong_type_are_errors_naming_them(v3: dict[str, Any]) -> None:
    bad = json.loads(json.dumps(v3))
    bad["recipes"]["raw"]["bounds"] = {}
    with pytest.raises(GoodputError) as e:
        Goodput.from_json(bad, source="runs/web/goodput.json")
    assert str(e.value).startswith(
        "runs/web/goodput.json: recipes.raw: unknown key 'bounds' (expected one of role, "
    )
    bad = json.loads(json.dumps(v3))
    bad["ladder"]["points"][1]["recipes"]["null"]["call"] = "maybe"
    with pytest.raises(GoodputError) as e:
        Goodput.from_json(bad)
    assert str(e.value) == (
        "goodput.json: ladder.points[1].recipes.null.call: expected one of 'better', 'worse', 'not_called' "
        "or null, got 'maybe'"
    )
    bad = json.loads(json.dumps(v3))
    bad["recipes"]["raw"]["yield"] = "1.0"
    with pytest.raises(
        GoodputError, match=r"^goodput.json: recipes.raw.yield: expected a number or null, got '1.0'$"
    ):
        Goodput.from_json(bad)
    bad = json.loads(json.dumps(v3))
    bad["budget"] = True  # a boolean is no integer
    with pytest.raises(GoodputError, match=r"^goodput.json: budget: expected an integer or null, got True$"):
        Goodput.from_json(bad)


def test_a_key_only_older_schemas_had_is_refused_in_schema_3(v3: dict[str, Any]) -> None:
    v3["decision_agreement"] = 1.0  # schema 1's T/4-vs-T agreement
    with pytest.raises(GoodputError, match=r"^goodput.json: unknown key 'decision_agreement'"):
        Goodput.from_json(v3)
    v3["schema_version"] = 1  # the same key in a schema-1 file is read (and never shown)
    assert Goodput.from_json(v3).decision_agreement == 1.0


def test_a_newer_schema_and_a_bad_version_are_refused(v3: dict[str, Any]) -> None:
    v3["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(GoodputError) as e:
        Goodput.from_json(v3)
    assert str(e.value) == (
        f"goodput.json: schema_version: {SCHEMA_VERSION + 1} is newer than this curate reads ({SCHEMA_VERSION}); "
        "upgrade curate to read it"
    )
    v3["schema_version"] = "3"
    with pytest.raises(GoodputError, match=r"schema_version: expected a positive integer, got '3'"):
        Goodput.from_json(v3)
    with pytest.raises(GoodputError, match=r"^goodput.json: expected a JSON object, got list$"):
        Goodput.from_json([])


def test_upgrade_gives_the_goodput_interval_the_multipliers_shape() -> None:
    v2 = {
        "schema_version": 2,
        "baseline": "raw",
        "recipes": {
            "curated": {
                "yield": 0.5,
                "goodput": {"value": 0.6, "ci": [0.5, 0.75], "bounds": {"value": None, "ci": [None, ">"]}},
            },
            "old": {"goodput": {"value": 0.6, "ci": [0.5, None]}},  # schema 1: no bounds
        },
    }
    before = json.dumps(v2)
    up = upgrade(v2)
    assert json.dumps(v2) == before  # a copy: the dict read is not changed
    assert up == {
        "schema_version": 3,
        "baseline": "raw",
        "recipes": {
            "curated": {
                "yield": 0.5,
                "goodput": {
                    "value": 0.6,
                    "ci_low": 0.5,
                    "ci_high": 0.75,
                    "bounds": {"value": None, "ci_low": None, "ci_high": ">"},
                },
            },
            "old": {"goodput": {"value": 0.6, "ci_low": 0.5, "ci_high": None}},
        },
    }
    assert list(up["recipes"]["curated"]["goodput"]) == ["value", "ci_low", "ci_high", "bounds"]
    assert upgrade(up) == up  # schema 3 stays as it is
    assert "schema_version" in upgrade({"recipes": {}})  # schema 1 had no version: it gets one


def test_a_schema_2_file_loads_upgraded_in_memory_and_its_missing_keys_are_forgiven() -> None:
    path = path_of("goodput_v2.json")
    d = json.loads(path.read_text())
    assert d["schema_version"] == 2
    assert "n" not in d["verdict"]["diff_bpb"]  # an early schema-2 file
    g = load(path)
    assert g.schema_version == 3
    ci = d["recipes"]["curated"]["goodput"]["ci"]
    assert [g.recipes["curated"].goodput.ci_low, g.recipes["curated"].goodput.ci_high] == ci
    assert g.verdict.diff_bpb.n is None
    assert not g.verdict.diff_bpb.has("n")
    assert not g.has("regime")
    assert not g.regime.present  # a block the file lacks reads empty
    assert g.regime.tokens_per_param is None
    assert "regime" not in g.to_json()


def test_a_new_control_kind_needs_no_schema_edit(v3: dict[str, Any]) -> None:
    block = {"diff_bpb": v3["controls"]["null"]["diff_bpb"], "message": "shuffled order", "swaps": 3}
    v3["controls"]["shuffled"] = block
    v3["ladder"]["shuffled_separated_at"] = ["proxy_tiny@512"]  # a kind's ladder check names its own key
    g = Goodput.from_json(v3)
    assert isinstance(g.controls.checks["shuffled"], ControlBlock)
    assert g.controls.checks["shuffled"].extra == {"swaps": 3}
    assert g.controls.checks["shuffled"].diff_bpb.value == block["diff_bpb"]["value"]
    assert g.ladder.failed_at == {k: v for k, v in v3["ladder"].items() if k.endswith("_at")}
    assert g.ladder.failed_at["shuffled_separated_at"] == ["proxy_tiny@512"]
    assert g.to_json() == v3
    v3["ladder"]["shuffled"] = ["x"]  # not a check's "_at" key
    with pytest.raises(
        GoodputError, match=r"^goodput.json: ladder: unknown key 'shuffled' \(expected one of "
    ):
        Goodput.from_json(v3)


def test_the_writer_keeps_the_proxy_phases_bytes(tmp_path: Path, v3: dict[str, Any]) -> None:
    out = write(Goodput.from_json(v3), tmp_path / "goodput.json")
    assert out.read_text() == json.dumps(v3, indent=1, allow_nan=False)  # as the phase always wrote it
    assert load(out) == Goodput.from_json(v3)


def test_load_names_the_file_that_is_not_json(tmp_path: Path) -> None:
    p = tmp_path / "goodput.json"
    p.write_text("{not json")
    with pytest.raises(GoodputError) as e:
        load(p)
    assert str(e.value) == (
        f"{p}: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    )


def test_a_recipe_dict_of_any_schema_reads_as_a_recipe() -> None:
    r = as_recipe({"yield": 0.5, "goodput": {"value": 0.4, "ci": [0.3, 0.5]}})
    assert (r.yield_, r.goodput.value, r.goodput.ci_low, r.goodput.ci_high) == (0.5, 0.4, 0.3, 0.5)
    assert r.multiplier.value is None
    assert not r.multiplier.present


def test_the_model_block_is_what_the_instrument_describes() -> None:
    """goodput.json's ``model`` is the main point's name and ``ModelConfig.describe()``: a field the
    instrument adds must be added to the schema (or every new goodput.json fails to write)."""
    from curate.instrument.model_config import ModelConfig

    assert {s.key for s in slots_of(Model)} == {"name", *ModelConfig().describe()}
