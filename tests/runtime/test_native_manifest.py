"""The run manifest records whether the filters took the native module or the polars/numpy fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.core.engine import InlineEngine
from curate.filters import native as N
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import pipeline, write_inputs


def _run(tmp_path: Path, name: str) -> tuple[dict, dict]:
    write_inputs(tmp_path / "in", n_files=1, n_docs=8)
    m = run_pipeline(parse_pipeline(pipeline(tmp_path / "in")), tmp_path / name, engine=InlineEngine())
    written = json.loads((tmp_path / name / "manifest.json").read_text())
    return m, written


def test_a_normal_run_records_the_native_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert N.built()  # make's pip install -e . compiles it
    monkeypatch.delenv(N.NATIVE_ENV, raising=False)
    m, written = _run(tmp_path, "run")
    assert m["native"] == {"path": "native", "reason": None}
    assert written["native"] == {"path": "native", "reason": None}


def test_a_run_with_the_switch_off_records_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(N.NATIVE_ENV, "0")
    m, written = _run(tmp_path, "run")
    assert m["native"] == {"path": "fallback", "reason": "disabled by CURATE_NATIVE=0"}
    assert written["native"] == m["native"]


def test_a_run_without_the_built_module_records_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(N, "_MODULE", None)
    monkeypatch.setenv(N.NATIVE_ENV, "1")
    _, written = _run(tmp_path, "run")
    assert written["native"] == {"path": "fallback", "reason": "not built"}
