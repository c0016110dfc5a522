"""Every value is checked at load with its type or its choices, and an error is blamed where the value
came from: a YAML line, or the ``--set`` that wrote it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from curate.core.errors import ConfigError
from curate.pipeline.config import parse_pipeline

PIPE = """name: t
input: {path: x.jsonl, format: jsonl}
stages:
  - score: gopher_quality_v1
  - select:
      - {column: gopher_quality_v1.word_count, min: 50}
"""
KEYS = "keys: column, min, max, equals, reason, exclusive"


def _error(text: str, overrides: list[str] | None = None) -> str:
    with pytest.raises(ConfigError) as e:
        parse_pipeline(text, path="p.yaml", overrides=overrides)
    return str(e.value)


@pytest.mark.parametrize("bound", ["fifty", '"50"'])
def test_a_select_bound_that_is_not_a_number_fails_at_load(bound: str) -> None:
    shown = bound.strip('"')
    assert _error(PIPE.replace("min: 50", f"min: {bound}")) == (
        f"p.yaml:6: stages[1].select[0].min: bad rule: expected a number, got str '{shown}'; {KEYS}"
    )


def test_a_set_error_is_blamed_on_the_set_not_on_a_yaml_line() -> None:
    assert _error(PIPE, ["stages.1.select.0.min=abc"]) == (
        f"--set stages.1.select.0.min=abc: stages[1].select[0].min: bad rule: expected a number, "
        f"got str 'abc'; {KEYS}"
    )
    assert _error(PIPE, ["stages.1.select.0.mim=3"]) == (
        f"--set stages.1.select.0.mim=3: stages[1].select[0].mim: bad rule: unknown key "
        f"(did you mean 'min'?); {KEYS}"
    )
    # the same key written in the file is blamed on its line
    assert _error(PIPE.replace("min: 50", "min: 50, mim: 3")) == (
        f"p.yaml:6: stages[1].select[0].mim: bad rule: unknown key (did you mean 'min'?); {KEYS}"
    )


def test_input_on_error_is_checked_with_its_choices_and_one_key_prefix() -> None:
    text = PIPE.replace("format: jsonl}", "format: jsonl, on_error: quarantin}")
    assert _error(text) == (
        "p.yaml:2: input.on_error: expected one of 'fail', 'quarantine', got 'quarantin' "
        "(did you mean 'quarantine'?)"
    )
    assert _error(PIPE, ["input.on_error=skip"]) == (
        "--set input.on_error=skip: input.on_error: expected one of 'fail', 'quarantine', got 'skip'"
    )
    assert _error(PIPE.replace("format: jsonl}", "format: jsonl, batch_docs: many}")) == (
        "p.yaml:2: input.batch_docs: expected int, got str 'many'"
    )
    cfg = parse_pipeline(PIPE.replace("format: jsonl}", "format: jsonl, on_error: quarantine}"))
    assert cfg.input["on_error"] == "quarantine"


def test_enumerated_strings_in_stages_and_sections_are_checked_at_load() -> None:
    normalize = PIPE.replace("stages:\n", "stages:\n  - transform: normalize_v1\n    params: {form: NFX}\n")
    assert _error(normalize) == (
        "p.yaml:5: stages[0].params.form: expected one of 'NFC', 'NFKC', 'NFD', 'NFKD', got 'NFX' "
        "(did you mean 'NFD'?)"
    )
    assert _error(PIPE + "export: {formats: [parquet, megatorn]}\n") == (
        "p.yaml:7: export.formats: ['megatorn'] not valid; choose from parquet, megatron, memmap, hf_disk"
    )
    assert _error(PIPE + "report: {bins: many}\n") == (
        "p.yaml:7: report.bins: expected a positive integer, got 'many'"
    )
    assert (
        _error(PIPE + "engine: {kind: rey}\n") == "p.yaml:7: engine.kind: expected ray or inline, got 'rey'"
    )


def test_cli_refuses_a_bad_bound_before_any_work(tmp_path: Path, capsys) -> None:
    from curate.cli import main

    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(3)))
    pipe = tmp_path / "p.yaml"
    pipe.write_text(PIPE.replace("x.jsonl", str(tmp_path / "in.jsonl")).replace("min: 50", "min: fifty"))
    out = tmp_path / "run"
    t0 = time.perf_counter()
    assert main(["run", str(pipe), "--engine", "inline", "--output", str(out), "-q", "--no-phases"]) == 2
    assert time.perf_counter() - t0 < 5
    assert capsys.readouterr().err == (
        f"curate run: error: {pipe}:6: stages[1].select[0].min: bad rule: expected a number, "
        f"got str 'fifty'; {KEYS}\n"
    )
    assert not out.exists()  # nothing ran, no partial run directory


def test_a_device_string_is_checked_with_its_choices() -> None:
    text = PIPE.replace(
        "stages:\n", "stages:\n  - transform: synthesize_v1\n    params: {model: some/folder, device: gpu}\n"
    )
    assert _error(text) == "p.yaml:5: stages[0].params.device: expected auto, cpu, cuda or cuda:N, got 'gpu'"
    assert (
        parse_pipeline(text.replace("device: gpu", "device: 'cuda:1'")).stages[0].params["device"] == "cuda:1"
    )
