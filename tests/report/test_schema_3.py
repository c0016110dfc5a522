"""The report reads ``goodput.json`` as its typed object: a schema-2 record (upgraded in memory) and the
schema-3 file of the same numbers give the same report (the golden test holds the writer's schema-3 file to
the upgraded record), and a file that is not the schema is named in the report, not a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curate.goodput.schema import Goodput, upgrade
from curate.proxy.cli import format_recipes
from curate.report import front, trust
from curate.report.card import card_lines
from curate.report.data import RunData, load_run
from curate.report.markdown import render_markdown
from curate.report.verdict import verdict
from tests.proxy.golden import GOLDEN, load

MANIFEST = {
    "name": "t",
    "accounting": {"input": 46, "kept": 30, "rejected": 16, "quarantined": 0, "balanced": True},
}


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    """The toy phase's goodput.json as recorded (schema 2) and the same numbers as a schema-3 file."""
    old = load(GOLDEN / "toy_phase.json.gz")["goodput"]
    new = upgrade(old)
    Goodput.from_json(new)  # a whole schema-3 file: read strictly
    return old, new


def test_a_schema_2_record_reads_as_the_schema_3_file_of_the_same_numbers(both: tuple[dict, dict]) -> None:
    old, new = both
    assert (old["schema_version"], new["schema_version"]) == (2, 3)
    assert "ci" in old["recipes"]["curated"]["goodput"]
    assert "ci_low" in new["recipes"]["curated"]["goodput"]
    for render in (
        lambda g: card_lines(MANIFEST, g),
        lambda g: verdict(MANIFEST, g),
        trust.markdown,
        front.calls_markdown,
        format_recipes,
    ):
        assert render(old) == render(new)

    def page(g: dict[str, Any]) -> str:
        typed = Goodput.from_json(g)
        d = RunData(Path("run"), {**MANIFEST, "stages": []}, typed, None, None, [], {})
        return render_markdown(d, verdict(MANIFEST, typed))

    text = page(new)
    assert page(old) == text
    assert "| curated | 1.32 (<0.50–>2.00) | 71.9% | 0.95 (<0.36–>1.44) |" in text  # goodput's own marks


def test_a_goodput_json_that_is_not_the_schema_is_named_in_the_report(
    run_dir: Path, both: tuple[dict, dict]
) -> None:
    bad = json.loads(json.dumps(both[1]))
    del bad["recipes"]["curated"]["multiplier"]["ci_low"]
    (run_dir / "goodput.json").write_text(json.dumps(bad))
    d = load_run(run_dir)
    assert d.goodput is None
    assert d.goodput_error == "goodput.json could not be read: recipes.curated.multiplier: missing 'ci_low'"
    assert card_lines(MANIFEST, d.goodput)[0].endswith("whether the curation helps training is not measured.")
