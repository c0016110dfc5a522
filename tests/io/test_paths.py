"""One rule for every relative path a pipeline names, and errors that print where they looked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import curate
from curate.core.errors import ConfigError
from curate.io import paths
from curate.io.sources import SourceError
from curate.pipeline.config import load_pipeline

LONG = " ".join(["the quick brown fox jumps over the lazy dog and then it runs home"] * 8)


def _project(root: Path) -> Path:
    """``root/pipes/p.yaml`` naming ``data/*.jsonl`` (beside it) and a target file, relative."""
    (root / "pipes" / "data").mkdir(parents=True)
    (root / "pipes" / "data" / "a.jsonl").write_text(json.dumps({"id": "a", "text": LONG}) + "\n")
    pipe = root / "pipes" / "p.yaml"
    pipe.write_text(
        "name: rel\ninput: {path: data/*.jsonl, format: jsonl}\nstages:\n  - filter: gopher_quality_v1\n"
    )
    return pipe


def test_a_relative_input_path_resolves_against_the_pipeline_file_from_any_directory(
    tmp_path: Path, monkeypatch
) -> None:
    pipe = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_pipeline(pipe)
    assert cfg.input["path"] == str(tmp_path / "pipes" / "data" / "*.jsonl")
    assert cfg.raw["input"]["path"] == "data/*.jsonl"  # the manifest keeps the path as written
    m = curate.run(pipe, output=tmp_path / "run", engine="inline", phases=False)
    assert m["accounting"]["kept"] == 1
    assert m["input"]["fingerprint"][0]["path"] == str(tmp_path / "pipes" / "data" / "a.jsonl")


def test_the_working_directory_comes_first(tmp_path: Path, monkeypatch) -> None:
    pipe = _project(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.jsonl").write_text(json.dumps({"text": LONG}) + "\n")
    monkeypatch.chdir(tmp_path)
    assert load_pipeline(pipe).input["path"] == str(tmp_path / "data" / "*.jsonl")
    assert paths.candidates("data/*.jsonl", str(pipe)) == [
        tmp_path / "data" / "*.jsonl",
        tmp_path / "pipes" / "data" / "*.jsonl",
        paths.REPO_ROOT / "data" / "*.jsonl",
    ]


def test_a_missing_path_is_reported_with_its_absolute_form(tmp_path: Path, monkeypatch) -> None:
    pipe = _project(tmp_path)
    pipe.write_text(pipe.read_text().replace("data/*.jsonl", "nowhere.jsonl"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError) as e:
        curate.run(pipe, output=tmp_path / "run", engine="inline", phases=False)
    assert str(e.value) == f"{tmp_path / 'nowhere.jsonl'}: no such file or directory"


def test_target_and_eval_paths_follow_the_same_rule(tmp_path: Path, monkeypatch) -> None:
    pipe = _project(tmp_path)
    (tmp_path / "pipes" / "t.jsonl").write_text(json.dumps({"text": LONG}) + "\n")
    pipe.write_text(pipe.read_text() + "target: {path: t.jsonl}\n")
    monkeypatch.chdir(tmp_path)
    assert load_pipeline(pipe).target.path == str(tmp_path / "pipes" / "t.jsonl")
    pipe.write_text(pipe.read_text().replace("t.jsonl", "gone.jsonl"))
    with pytest.raises(ConfigError) as e:
        load_pipeline(pipe)
    assert str(e.value) == f"{pipe}:5: target.path: {tmp_path / 'gone.jsonl'}: no such file or directory"
    from curate.core.errors import PhaseError
    from curate.instrument.evalsets import EvalSpec, eval_file
    from curate.instrument.suites import resolve

    assert resolve("t.jsonl", str(pipe)) == tmp_path / "pipes" / "t.jsonl"
    spec = EvalSpec(name="e", kind="text", path="e.jsonl")
    with pytest.raises(PhaseError) as ex:
        eval_file(spec, str(pipe))
    assert str(ex.value) == (
        f"proxy.eval e: e.jsonl does not exist (looked for {tmp_path / 'e.jsonl'}, "
        f"{tmp_path / 'pipes' / 'e.jsonl'}, {paths.REPO_ROOT / 'e.jsonl'})"
    )


def test_stage_file_parameters_follow_the_same_rule(tmp_path: Path, monkeypatch) -> None:
    pipe = _project(tmp_path)
    (tmp_path / "pipes" / "eval.jsonl").write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    pipe.write_text(
        pipe.read_text()
        + "  - dedup: decontaminate_v1\n    params: {eval_paths: [eval.jsonl, '/abs/*.jsonl']}\n"
        + "  - score: fasttext_quality_v1\n    params: {model: models/quality_fasttext.ftz}\n"
        + "  - dedup: diversity_v1\n    params: {seed_path: nowhere.jsonl}\n"
    )
    monkeypatch.chdir(tmp_path)
    cfg = load_pipeline(pipe)
    assert cfg.stages[1].params["eval_paths"] == [str(tmp_path / "pipes" / "eval.jsonl"), "/abs/*.jsonl"]
    assert cfg.stages[2].params["model"] == str(paths.REPO_ROOT / "models" / "quality_fasttext.ftz")
    assert cfg.stages[3].params["seed_path"] == "nowhere.jsonl"  # found nowhere: left for the stage to report
    assert cfg.raw["stages"][1]["params"]["eval_paths"] == ["eval.jsonl", "/abs/*.jsonl"]  # as written
