"""The committed JSON Schema of ``goodput.json`` is the one the classes generate, and every file on record
validates against it: schema 3 with every key, schemas 1 and 2 as they were written."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from curate.goodput.schema import SCHEMA_FILE, schema_text
from tests.goodput.records import recorded

RECORDED = recorded()


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "curate/goodput/goodput.schema.json is stale: python -m curate.goodput.schema > "
        "curate/goodput/goodput.schema.json"
    )


@pytest.mark.parametrize(("name", "d"), RECORDED, ids=[n for n, _ in RECORDED])
def test_every_recorded_file_validates(validator: jsonschema.Draft202012Validator, name: str, d: Any) -> None:
    assert [e.message for e in validator.iter_errors(d)] == []


def test_every_written_file_validates_and_schema_3_has_every_key(
    validator: jsonschema.Draft202012Validator, written: dict[str, dict[str, Any]], v3: dict[str, Any]
) -> None:
    for d in written.values():
        assert [e.message for e in validator.iter_errors(d)] == []
    del v3["recipes"]["curated"]["multiplier"]["ci_low"]
    assert [e.message for e in validator.iter_errors(v3)] == ["'ci_low' is a required property"]
    v3["schema_version"] = 2  # an older file may lack it, but its goodput interval is ci: [low, high]
    messages = [e.message for e in validator.iter_errors(v3)]
    assert set(messages) == {"Additional properties are not allowed ('ci_high', 'ci_low' were unexpected)"}
    assert len(messages) == 2 * len(v3["recipes"])  # each recipe's goodput and its bounds


def test_schema_3s_goodput_interval_is_the_multipliers_shape(
    validator: jsonschema.Draft202012Validator, v3: dict[str, Any]
) -> None:
    gp = v3["recipes"]["curated"]["goodput"]
    v3["recipes"]["curated"]["goodput"] = {"value": gp["value"], "ci": [gp["ci_low"], gp["ci_high"]]}
    messages = sorted(e.message for e in validator.iter_errors(v3))
    assert messages == [
        "'bounds' is a required property",
        "'ci_high' is a required property",
        "'ci_low' is a required property",
        "Additional properties are not allowed ('ci' was unexpected)",
    ]
