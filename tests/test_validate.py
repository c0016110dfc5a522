"""Checks before any work (bounds, language codes, select columns, input format) and empty-run errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main
from curate.core.engine import InlineEngine
from curate.core.errors import ConfigError
from curate.io.sources import SourceError
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline


def _parse(stages: str, extra: str = "") -> None:
    parse_pipeline(
        f"name: v\ninput: {{path: x.jsonl, format: jsonl}}\n{extra}stages:\n{stages}", path="v.yaml"
    )


def test_a_value_out_of_its_declared_range_fails_at_load() -> None:
    with pytest.raises(ConfigError) as e:
        _parse("  - dedup: minhash_dedup_v1\n    params: {threshold: 1.5}\n")
    assert str(e.value) == ("v.yaml:5: stages[0].params.threshold: expected a value in (0, 1], got 1.5")
    with pytest.raises(
        ConfigError, match=r"^v.yaml:5: stages\[0\].params.threshold: expected a value in \[0, 1\], got -0.1$"
    ):
        _parse("  - filter: language_v1\n    params: {threshold: -0.1}\n")
    with pytest.raises(ConfigError, match=r"stages\[0\].params.min_doc_words: expected a value >= 0"):
        _parse("  - filter: gopher_quality_v1\n    params: {min_doc_words: -3}\n")


def test_a_language_name_instead_of_a_code_is_refused_with_the_code() -> None:
    with pytest.raises(ConfigError) as e:
        _parse("  - filter: language_v1\n    params: {languages: [english]}\n")
    msg = str(e.value)
    assert msg.startswith(
        "v.yaml:5: stages[0].params.languages: 'english' is not a language code of "
        "the model (did you mean 'en'?); codes: af, als, am, an, ar,"
    )
    assert len(msg.split("codes: ")[1].split(", ")) == 176
    with pytest.raises(ConfigError, match=r"'xx' is not a language code of the model; codes: af,"):
        _parse("  - filter: language_v1\n    params: {languages: [en, xx]}\n")
    _parse("  - filter: language_v1\n    params: {languages: [en, de]}\n")  # valid codes pass


def test_select_columns_are_checked_against_what_the_stages_add() -> None:
    with pytest.raises(ConfigError) as e:
        _parse(
            "  - score: gopher_quality_v1\n  - select:\n      - {column: gopher_quality_v1.words, min: 50}\n"
        )
    assert str(e.value) == (
        "v.yaml:6: stages[1].select[0].column: gopher_quality_v1 adds no column 'gopher_quality_v1.words' "
        "(did you mean 'gopher_quality_v1.stop_words'?); its columns: gopher_quality_v1.alpha_words_ratio, "
        "gopher_quality_v1.avg_word_length, gopher_quality_v1.bullet_lines_ratio, "
        "gopher_quality_v1.ellipsis_ratio, gopher_quality_v1.end_ellipsis_lines_ratio, "
        "gopher_quality_v1.hash_ratio, gopher_quality_v1.stop_words, gopher_quality_v1.word_count"
    )
    with pytest.raises(ConfigError) as e:
        _parse("  - select:\n      - {column: c4_quality_v1.sentences, min: 3}\n  - score: c4_quality_v1\n")
    assert str(e.value) == (
        "v.yaml:5: stages[0].select[0].column: column 'c4_quality_v1.sentences' is added by stages[1], "
        "after this select; move the select after it"
    )
    with pytest.raises(ConfigError) as e:
        _parse("  - select:\n      - {column: quality, min: 3}\n")
    assert str(e.value) == (
        "v.yaml:5: stages[0].select[0].column: no stage before this select adds column 'quality'; "
        "columns available: url"
    )
    # Input fields kept from the source are columns too; a label renames the columns.
    parse_pipeline(
        "input: {path: x.parquet, format: parquet, keep_fields: [lang]}\nstages:\n"
        "  - score: gopher_quality_v1\n    label: gq\n  - select:\n      - {column: gq.word_count, min: 5}\n"
        "      - {column: lang, equals: en}\n"
    )


def test_parquet_files_read_as_jsonl_are_refused_before_any_work(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "text": ["hello"]}), tmp_path / "a.parquet")
    cfg = parse_pipeline(f"name: p\ninput: {{path: '{tmp_path}/*.parquet', format: jsonl}}\nstages: []\n")
    with pytest.raises(SourceError) as e:
        run_pipeline(cfg, tmp_path / "run", engine=InlineEngine())
    assert str(e.value) == (
        f"input: {tmp_path}/a.parquet looks like parquet, but input.format is jsonl; "
        "set input.format: parquet (or --set input.format=parquet)"
    )
    assert not (tmp_path / "run").exists()
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "hi"}) + "\n")
    cfg = parse_pipeline(f"name: p\ninput: {{path: '{tmp_path}/b.jsonl', format: parquet}}\nstages: []\n")
    with pytest.raises(SourceError, match=r"b.jsonl looks like jsonl, but input.format is parquet; "):
        run_pipeline(cfg, tmp_path / "run", engine=InlineEngine())


def test_cli_exit_codes_for_config_errors_and_empty_runs(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": f"short {i}"}) + "\n" for i in range(3)))
    yaml_path = tmp_path / "p.yaml"
    yaml_path.write_text(
        f"name: e\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages:\n  - filter: gopher_quality_v1\n"
    )
    out = tmp_path / "run"
    argv = ["run", str(yaml_path), "--engine", "inline", "--output", str(out), "-q", "--no-phases"]
    t0 = time.perf_counter()
    assert main([*argv, "--set", "stages.0.params.min_doc_words=-1"]) == 2
    assert time.perf_counter() - t0 < 5  # refused at load, before any work
    err = capsys.readouterr().err
    assert err == (
        "curate run: error: --set stages.0.params.min_doc_words=-1: expected a value >= 0, got -1\n"
        # blamed on the --set as the user wrote it, not on the YAML line it replaced
    )
    assert main(argv) == 4
    assert capsys.readouterr().err.startswith(
        f"curate run: error: {out}: kept 0 of 3 documents (gopher_quality_v1:"
    )
    assert main([*argv, "--set", "allow_empty=true"]) == 0
    assert "kept 0" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    [
        "gopher_quality_v1",
        "gopher_repetition_v1",
        "c4_quality_v1",
        "fineweb_quality_v1",
        "url_filter_v1",
        "language_v1",
        "degeneration_v1",
    ],
)
def test_declared_output_fields_are_what_score_adds(name: str) -> None:
    from curate.core.registry import STAGES

    table = pa.table(
        {
            "id": ["a", "b"],
            "text": ["Hello world. This is a test of the sample.\nSecond line here.", "x"],
            "source": ["s", "s"],
            "url": ["http://example.com/a", None],
        }
    )
    stage = STAGES.get(name)()
    assert sorted(stage.output_fields()) == sorted(stage.score(table))
