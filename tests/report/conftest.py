"""Fixtures: a real finished run for the report tests (tests/report/report_run.py's input and pipeline,
run in-process), plus a Parquet+Megatron export and the goodput.json fixture (the proxy phase's schema).

The goodput fixture ``data/goodput.json`` was produced by ``curate.proxy.statistics.descriptive.goodput_report`` on
synthetic curves (3 recipes, 3 seeds, 2 eval sets), with ``budget``/``seeds``/``model`` added as the
proxy phase records them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.report.report_run import DATA, pipeline_yaml, train_tokenizer, write_inputs


@pytest.fixture(scope="session")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished run (pipeline + export), built once per session; tests copy it."""
    from curate.core.engine import InlineEngine
    from curate.export.options import ExportOptions
    from curate.export.phase import run_phase as export_phase
    from curate.pipeline.config import parse_pipeline
    from curate.runtime.context import RunContext
    from curate.runtime.runner import run_pipeline

    root = tmp_path_factory.mktemp("report_run")
    write_inputs(root / "in")
    run = root / "run"
    engine = InlineEngine(progress=False)
    manifest = run_pipeline(
        parse_pipeline(pipeline_yaml(root / "in")), run, engine=engine, progress=False, phases=False
    )
    tok = train_tokenizer(root / "tokenizer.json", ["Document data curation pipeline token model"] * 20)
    ctx = RunContext(
        run_dir=run,
        config=manifest["config"],
        engine=engine,
        manifest=manifest,
        section=ExportOptions(formats=("parquet", "megatron"), tokenizer=str(tok), val_fraction=0.1),
    )
    export_phase(ctx)
    return run


@pytest.fixture
def run_dir(base_run: Path, tmp_path: Path) -> Path:
    """A private copy of the finished run with goodput.json dropped in."""
    dst = tmp_path / "run"
    shutil.copytree(base_run, dst)
    shutil.copy(DATA / "goodput.json", dst / "goodput.json")
    return dst


@pytest.fixture
def goodput() -> dict[str, Any]:
    return json.loads((DATA / "goodput.json").read_text())


@pytest.fixture(scope="session")
def built_run(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run with goodput.json and the report built once: for tests that only read it."""
    from curate.report.build import build_report

    dst = tmp_path_factory.mktemp("report_built") / "run"
    shutil.copytree(base_run, dst)
    shutil.copy(DATA / "goodput.json", dst / "goodput.json")
    build_report(dst)
    return dst


@pytest.fixture(scope="session")
def built_run_v2(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run with ``data/goodput_v2.json`` (the fields the statistics and controls add: Holm calls, the
    controls' decision, per-pair power, signal and noise per set, the ladder's decision agreement, a bound)
    and its report built once."""
    from curate.report.build import build_report

    dst = tmp_path_factory.mktemp("report_built_v2") / "run"
    shutil.copytree(base_run, dst)
    shutil.copy(DATA / "goodput_v2.json", dst / "goodput.json")
    build_report(dst)
    return dst


@pytest.fixture(scope="session")
def built_run_wide(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``goodput_v2.json`` with three more recipes, so the scale ladder's table has 16 columns (a real run
    of six recipes and controls overflowed the page with them)."""
    import copy

    from curate.report.build import build_report

    g = json.loads((DATA / "goodput_v2.json").read_text())
    for k, name in enumerate(("hi_quality", "nodedup", "no_gopher_quality")):
        g["recipes"][name] = copy.deepcopy(g["recipes"]["strict"])
        for p in g["ladder"]["points"]:
            p["recipes"][name] = copy.deepcopy(p["recipes"]["strict"])
            p["ranking"] = [*p["ranking"], name]
        g["multiple_comparisons"]["family"].append(name)
        g["multiple_comparisons"]["pairs"][name] = {"p": 0.5, "p_holm": 0.5 + k / 10, "call": "not_called"}
    dst = tmp_path_factory.mktemp("report_built_wide") / "run"
    shutil.copytree(base_run, dst)
    (dst / "goodput.json").write_text(json.dumps(g))
    build_report(dst)
    return dst
