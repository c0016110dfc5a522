"""The report phase (as the runner calls it) and the ``curate report RUN_DIR`` verb."""

from __future__ import annotations

import json
import shutil
from html import escape
from pathlib import Path

import pytest

from curate.cli import build_parser, main
from curate.core.engine import InlineEngine
from curate.core.errors import PhaseError
from curate.report.options import ReportOptions
from curate.report.phase import run_phase
from curate.runtime.context import RunContext
from tests.report.report_run import pipeline_yaml, write_inputs


def ctx(run_dir: Path, section: dict | None) -> RunContext:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return RunContext(
        run_dir=run_dir,
        config=manifest["config"],
        engine=InlineEngine(progress=False),
        manifest=manifest,
        section=ReportOptions.parse(section),  # the report: section as the pipeline parses it
    )


CARD = [
    "Decision: curated called better than raw per training token (calls from each recipe's own interval, "
    "not adjusted for multiple comparisons).",
    "Best recipe: curated, multiplier 1.38x (CI 1.34–1.42) against raw (extrapolated beyond the baseline's curve).",
    "Data goodput of curated (yield x multiplier, each raw token trained once): 0.85 (CI 0.83–0.88) at yield "
    "62.0%.",
]


def test_phase_returns_paths_and_headline(run_dir: Path) -> None:
    (run_dir / "report.html").unlink(missing_ok=True)
    out = run_phase(ctx(run_dir, {"examples_per_reason": 1}))
    assert out["html"] == "report.html"
    assert out["md"] == "report.md"
    # the headline is the verdict card: this older goodput.json has no Holm calls, controls or power
    assert out["headline"].splitlines() == CARD
    html = (run_dir / "report.html").read_text()
    assert '<section class="card" id="card"><ul>' + "".join(f"<li>{escape(x)}</li>" for x in CARD) in html
    # the verdict in full follows the card and the forest plot, one click away
    assert (
        html.index('id="card"') < html.index('id="forest"') < html.index('<p class="verdict" id="verdict">')
    )
    assert '<p class="verdict" id="verdict">curated beats raw: 1.38x tokens-to-target (CI 1.34–1.42)' in html
    assert "select:too_short — 6 documents (1 shown)" in html


def test_phase_section_may_be_empty_or_none(run_dir: Path) -> None:
    assert run_phase(ctx(run_dir, {}))["html"] == "report.html"
    assert run_phase(ctx(run_dir, None))["md"] == "report.md"


def test_phase_rejects_unknown_and_bad_keys(run_dir: Path) -> None:
    with pytest.raises(
        PhaseError, match=r"^report.colour: unknown key; valid keys: bins, examples_per_reason$"
    ):
        run_phase(ctx(run_dir, {"colour": "red"}))
    with pytest.raises(PhaseError, match=r"^report.bins: expected a value >= 1, got 0$"):
        run_phase(ctx(run_dir, {"bins": 0}))


def test_runner_runs_the_report_phase(tmp_path: Path) -> None:
    from curate.pipeline.config import parse_pipeline
    from curate.runtime.runner import run_pipeline

    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline_yaml(tmp_path / "in", extra="report: {bins: 10}\n"))
    m = run_pipeline(cfg, tmp_path / "run", engine=InlineEngine(progress=False), progress=False)
    rec = m["phases"]["report"]
    assert rec["html"] == "report.html"
    assert rec["headline"] == (
        "kept 30 of 46 documents (65.2% of documents). No proxy runs (no goodput.json): whether the "
        "curation helps training is not measured."
    )
    assert (tmp_path / "run" / "report.html").is_file()
    assert (
        json.loads((tmp_path / "run" / "manifest.json").read_text())["phases"]["report"]["headline"]
        == rec["headline"]
    )


def test_cli_rebuilds_the_report(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "report.html").unlink(missing_ok=True)
    assert main(["report", str(run_dir), "--examples-per-reason", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == CARD
    assert out[3] == f"report: {run_dir / 'report.html'}"
    assert "(2 shown)" in (run_dir / "report.html").read_text()


def test_cli_errors_and_help(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"curate report: error: {tmp_path}: no manifest.json; is it a finished run directory?\n"
    )
    run = tmp_path / "r"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    assert main(["report", str(run), "--bins", "-3"]) == 2
    assert capsys.readouterr().err == "curate report: error: report.bins: expected a value >= 1, got -3\n"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "--help"])
    help_text = capsys.readouterr().out
    assert "example:" in help_text
    assert "curate report runs/demo" in help_text


def test_cli_on_a_bare_manifest(tmp_path: Path) -> None:
    # A manifest with nothing else (no kept/, rejected/, goodput, export) still yields a report.
    run = tmp_path / "bare"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"name": "bare", "stages": [], "accounting": {}}))
    assert main(["report", str(run)]) == 0
    html = (run / "report.html").read_text()
    assert "No numeric score columns" in html
    assert "No documents were removed" in html
    shutil.rmtree(run)


def test_a_chart_warning_does_not_reach_the_terminal(run_dir, monkeypatch, capsys) -> None:
    # the report of a select-derived run once leaked a matplotlib UserWarning
    import warnings

    from curate.cli import main
    from curate.report import html

    real = html.render_html

    def noisy(*args, **kwargs):
        warnings.warn("Attempting to set identical low and high xlims", UserWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr("curate.report.build.render_html", noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked warning would raise here
        assert main(["report", str(run_dir)]) == 0
    assert "Warning" not in capsys.readouterr().err
