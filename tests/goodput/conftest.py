"""Fixtures: each golden measurement's ``goodput.json`` as the current writer makes it from the recorded
runs (schema 3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.goodput.records import RECORDS
from tests.proxy.golden import load, replay


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each golden measurement's ``goodput.json`` as the current writer makes it (schema 3), by name."""
    out = {}
    for p in RECORDS:
        rec = load(p)
        out[rec["name"]] = replay(rec, tmp_path_factory.mktemp(rec["name"]))
    return out


@pytest.fixture
def v3(written: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A fresh copy of one schema-3 ``goodput.json`` (the toy phase's), to change in a test."""
    return json.loads(json.dumps(written["toy_phase"]))
