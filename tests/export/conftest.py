"""Fixtures for the export tests (helpers live in export_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.export.export_fixtures import TEXTS, make_run, train_tokenizer


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json", TEXTS)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return make_run(tmp_path / "run", TEXTS)
