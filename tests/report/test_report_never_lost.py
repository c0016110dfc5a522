"""``curate report`` (and the report a ``curate proxy`` rebuilds) honours the run's ``report:`` section,
and a failure while building leaves the previous report.html and report.md byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.cli import main
from curate.report import build


def _bytes(run: Path) -> tuple[bytes, bytes]:
    return (run / build.HTML).read_bytes(), (run / build.MD).read_bytes()


def _with_report_section(run: Path, section: dict) -> None:
    m = json.loads((run / "manifest.json").read_text())
    m["config"]["report"] = section
    (run / "manifest.json").write_text(json.dumps(m))


def _spy(monkeypatch) -> list[dict]:
    seen: list[dict] = []
    real = build.load_run

    def spy(run_dir, **kw):
        seen.append(kw)
        return real(run_dir, **kw)

    monkeypatch.setattr(build, "load_run", spy)
    return seen


def test_a_rebuild_takes_the_runs_report_section(run_dir, monkeypatch):
    _with_report_section(run_dir, {"bins": 60, "examples_per_reason": 1})
    seen = _spy(monkeypatch)
    build.build_report_with_headline(run_dir)  # what `curate proxy` calls after its runs
    assert seen == [{"per_reason": 1, "bins": 60}]


def test_the_command_line_overrides_the_section_key_by_key(run_dir, monkeypatch, capsys):
    _with_report_section(run_dir, {"bins": 60, "examples_per_reason": 1})
    seen = _spy(monkeypatch)
    assert main(["report", str(run_dir), "--bins", "12"]) == 0
    assert seen == [{"per_reason": 1, "bins": 12}]
    assert f"report: {run_dir / build.HTML}" in capsys.readouterr().out


def test_a_bad_value_in_the_runs_section_is_named(run_dir, capsys):
    _with_report_section(run_dir, {"bins": 0})
    assert main(["report", str(run_dir)]) == 2
    assert capsys.readouterr().err == "curate report: error: report.bins: expected a value >= 1, got 0\n"


@pytest.mark.parametrize("stage", ["render_html", "render_markdown"])
def test_a_failed_rebuild_leaves_the_previous_report_byte_identical(run_dir, monkeypatch, stage):
    build.build_report(run_dir)
    before = _bytes(run_dir)
    (run_dir / "goodput.json").unlink()  # a rebuild would now say something else

    def broken(*a, **k):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(build, stage, broken)
    with pytest.raises(RuntimeError, match="renderer failed"):
        build.build_report(run_dir)
    assert _bytes(run_dir) == before
    assert sorted(p.name for p in run_dir.iterdir() if ".tmp" in p.name) == []
