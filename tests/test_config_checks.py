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
        f"--set stages.1.select.0.min=abc: bad rule: expected a number, got str 'abc'; {KEYS}"
    )
    assert _error(PIPE, ["stages.1.select.0.mim=3"]) == (
        f"--set stages.1.select.0.mim=3: bad rule: unknown key (did you mean 'min'?); {KEYS}"
    )
    # the same key written in the file is blamed on its line
    assert _error(PIPE.replace("min: 50", "min: 50, mim: 3")) == (
        f"p.yaml:6: stages[1].select[0].mim: bad rule: unknown key (did you mean 'min'?); {KEYS}"
    )


SEMANTIC = PIPE.replace("stages:\n", "stages:\n  - dedup: semantic_dedup_v1\n    params: {threshold: 0.85}\n")
NOT_A_MODEL = (
    "model 'nope' is not a local directory (nothing is downloaded): give the directory of a Hugging Face "
    "encoder (config, weights, tokenizer) or the name of a packaged one (all-minilm-l6-v2, wordllama-l2-supercat)"
)


def test_a_bad_set_value_is_named_as_the_user_wrote_it_not_on_the_line_it_replaced() -> None:
    # a parameter the YAML does not hold, checked by the stage's validate(), which names its label first
    assert (
        _error(SEMANTIC, ["stages.0.params.model=nope"]) == f"--set stages.0.params.model=nope: {NOT_A_MODEL}"
    )
    assert (
        _error(SEMANTIC, ["stages.0.params.dim=abc"])
        == "--set stages.0.params.dim=abc: expected int, got str 'abc'"
    )
    assert _error(SEMANTIC, ["stages.0.params.threshold=2"]) == (
        "--set stages.0.params.threshold=2: expected a value in [0, 1], got 2.0"
    )
    # the same value written in the file: its line, the key path once (no stage name repeated in it)
    assert _error(SEMANTIC.replace("threshold: 0.85", "model: nope")) == (
        f"p.yaml:5: stages[0].params.model: {NOT_A_MODEL}"
    )
    # a --set that wrote a mapping: the failing key inside it, spelled as --set spells keys
    assert _error(SEMANTIC, ["stages.0={dedup: semantic_dedup_v1, params: {dim: x}}"]) == (
        "--set stages.0={dedup: semantic_dedup_v1, params: {dim: x}}: stages.0.params.dim: expected int, "
        "got str 'x'"
    )


def test_a_set_that_cannot_be_applied_names_itself_and_what_is_there() -> None:
    assert _error(PIPE, ["stages.9.params.x=1"]) == (
        "--set stages.9.params.x=1: stages is a list of 2 (indexes 0 to 1); '9' is not one of its indexes"
    )
    assert _error(PIPE, ["stages.-1.params.x=1"]) == (
        "--set stages.-1.params.x=1: stages is a list of 2 (indexes 0 to 1); '-1' is not one of its indexes"
    )
    assert (
        _error(PIPE, ["name.x=1"])
        == "--set name.x=1: name is str 't', not a mapping or list; name.x cannot be set"
    )


def test_an_error_above_a_set_key_names_the_line_and_the_set_under_it() -> None:
    from curate.pipeline.keys import located

    err = located(
        "p.yaml", {("stages", 1, "params"): 5}, {("stages", 1, "params", "x"): "--set stages.1.params.x=2"}
    )
    assert str(err(("stages", 1, "params"), "x and y disagree")) == (
        "p.yaml:5: stages[1].params: x and y disagree (with --set stages.1.params.x=2)"
    )
    assert str(err(("stages", 1, "params", "x"), "too big")) == "--set stages.1.params.x=2: too big"
    assert str(err(("stages", 0), "bad")) == "p.yaml: stages[0]: bad"


def test_input_on_error_is_checked_with_its_choices_and_one_key_prefix() -> None:
    text = PIPE.replace("format: jsonl}", "format: jsonl, on_error: quarantin}")
    assert _error(text) == (
        "p.yaml:2: input.on_error: expected one of 'fail', 'quarantine', got 'quarantin' "
        "(did you mean 'quarantine'?)"
    )
    assert _error(PIPE, ["input.on_error=skip"]) == (
        "--set input.on_error=skip: expected one of 'fail', 'quarantine', got 'skip'"
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
        "p.yaml:7: export.formats[1]: expected one of 'parquet', 'megatron', 'memmap', 'hf_disk', got "
        "'megatorn' (did you mean 'megatron'?)"
    )
    assert _error(PIPE + "report: {bins: many}\n") == "p.yaml:7: report.bins: expected int, got str 'many'"
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
