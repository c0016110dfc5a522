"""Every recorded measurement (``tests/proxy/golden/*.json.gz``: shipped pipelines and the toy phase, each
recorded from finished runs by ``python -m tests.proxy.golden RUN NAME``) replays to the same
``goodput.json``, field by field: floats within 1e-9, everything else equal. A record of an older schema is
first brought to the current one by :func:`curate.goodput.schema.upgrade` (the shapes that changed, no
number), so the comparison stays exact. A field that changes on purpose is listed in :data:`CHANGED` with
why, and in CHANGELOG.md."""

from __future__ import annotations

import re

import pytest

from curate.goodput.schema import SCHEMA_VERSION, upgrade
from tests.proxy.golden import GOLDEN, differences, load, replay

RECORDS = sorted(GOLDEN.glob("*.json.gz"))

# Fields whose value changed on purpose since the records were made: {record name, or "*" for every
# record: {path prefix (or a regular expression, when it starts with a backslash): why}}. Each is in
# CHANGELOG.md.
GATE = (
    "the decision gate: the null must be shown equivalent to raw within a margin (TOST on the calibrated "
    "noise) and the planted control is judged against the null (2026-12-07)"
)
POWER = (
    "power figures from a spread with degrees of freedom: the pair's own pooled with the calibrated noise, "
    "else with the run's other pairs, and its interval (2026-12-07)"
)
TRANSFER = (
    "decision accuracy as the field measures it: over every pair of non-control recipes weighted by the "
    "reference's confidence in its sign and over the reference's Holm calls, with a cluster bootstrap over "
    "recipes and seeds, read against the noise ceiling and chance; it replaces the share of the pairs the "
    "reference called, unadjusted, with a bootstrap over seeds only (2026-12-07)"
)
CHANGED: dict[str, dict[str, str]] = {
    "*": {
        r"\.ladder\.points\[\d+\]\.decision_(accuracy_vs_reference|accuracy_ci|pairs): missing": TRANSFER,
        r"\.ladder\.points\[\d+\]\.decision_accuracy: added": TRANSFER,
        r"\.ladder\.(noise_ceiling|chance|seeds_disjoint|shared_seeds|accuracy_method): added": TRANSFER,
        ".controls.null.equivalence": GATE,
        ".controls.null.passed": GATE,
        ".controls.null.message": GATE,
        ".controls.planted": GATE,
        ".controls.decision": GATE,
        ".verdict.supported": GATE,
        ".verdict.unsupported_reasons": GATE,
        ".warnings": GATE,
        ".power": POWER,
        r"\.recipes\.[^.]+\.multiplier_adjusted: added": "the best recipe's selection-adjusted interval (2026-12-07)",
        r"\.ladder\.points\[\d+\]\.(sd_diff_bpb|sd_dof|mde_multiplier)": POWER,
        ".verdict.sentence": GATE + "; " + POWER,
    }
}


def _expected(name: str, diffs: list[str]) -> list[str]:
    allowed = {**CHANGED.get("*", {}), **CHANGED.get(name, {})}
    return [
        d for d in diffs if not any(re.match(p if p.startswith("\\") else re.escape(p), d) for p in allowed)
    ]


@pytest.mark.parametrize("path", RECORDS, ids=[p.name.removesuffix(".json.gz") for p in RECORDS])
def test_a_recorded_measurement_replays_to_the_same_goodput_json(path, tmp_path):
    rec = load(path)
    got = replay(rec, tmp_path)
    assert got["schema_version"] == SCHEMA_VERSION
    assert _expected(rec["name"], differences(upgrade(rec["goodput"]), got)) == []


def test_there_are_records_and_the_comparison_can_fail():
    assert len(RECORDS) >= 1
    rec = load(RECORDS[0])
    assert differences({"a": 1.0, "b": [1, "x"]}, {"a": 1.0 + 1e-12, "b": [1, "x"]}) == []
    assert differences({"a": 1.0, "b": [1, "x"]}, {"a": 1.001, "b": [2, "x"], "c": 0}) == [
        ".c: added",
        ".a: 1.0 -> 1.001",
        ".b[0]: 1 -> 2",
    ]
    assert rec["goodput"]["schema_version"] >= 2
