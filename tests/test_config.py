"""Config errors name the file, line and key, and list the valid choices; overrides apply by dotted path."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.core.errors import ConfigError
from curate.pipeline.config import EngineSpec, apply_overrides, build_stages, load_pipeline, parse_pipeline

GOOD = """\
name: t
input: {path: data/*.jsonl, format: jsonl}
stages:
  - transform: normalize_v1
    params: {max_blank_lines: 2}
  - select:
      - {column: text, equals: x}
"""


def test_good_pipeline_builds_typed_stages() -> None:
    cfg = parse_pipeline(GOOD, path="p.yaml")
    assert cfg.name == "t"
    assert [(s.kind, s.name) for s in cfg.stages] == [("transform", "normalize_v1"), ("select", "select")]
    stages = build_stages(cfg)
    assert stages[0].params.max_blank_lines == 2
    assert stages[1].rules[0].column == "text"


def test_unknown_stage_names_line_key_and_choices() -> None:
    text = GOOD.replace("transform: normalize_v1", "transform: normalize_v9")
    with pytest.raises(ConfigError) as e:
        parse_pipeline(text, path="p.yaml")
    msg = str(e.value)
    assert msg.startswith("p.yaml:4: stages[0].transform: unknown stage 'normalize_v9'; valid stages: ")
    assert "normalize_v1" in msg
    assert "select" in msg


def test_unknown_parameter() -> None:
    text = GOOD.replace("max_blank_lines: 2", "max_blank_line: 2")
    with pytest.raises(ConfigError) as e:
        parse_pipeline(text, path="p.yaml")
    assert str(e.value) == (
        "p.yaml:5: stages[0].params.max_blank_line: unknown parameter; "
        "valid parameters: collapse_spaces, form, max_blank_lines"
    )


def test_wrong_parameter_type() -> None:
    text = GOOD.replace("max_blank_lines: 2", "max_blank_lines: two")
    with pytest.raises(ConfigError) as e:
        parse_pipeline(text, path="p.yaml")
    assert str(e.value) == ("p.yaml:5: stages[0].params.max_blank_lines: expected int, got str 'two'")


def test_unknown_top_key_and_format() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^p.yaml:1: stagez: unknown key; valid keys: allow_empty, description, engine, export, ",
    ):
        parse_pipeline("stagez: []\ninput: {format: jsonl}\n", path="p.yaml")
    with pytest.raises(
        ConfigError, match=r"^p.yaml:1: input.format: unknown source 'csvv'; valid sources: .*jsonl"
    ):
        parse_pipeline("input: {format: csvv}\n", path="p.yaml")


def test_stage_kind_mismatch_and_bad_rule() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^p.yaml:3: stages\[0\].score: 'normalize_v1' is a transform stage; "
        r"use 'transform: normalize_v1'$",
    ):
        parse_pipeline("input: {format: jsonl}\nstages:\n  - score: normalize_v1\n", path="p.yaml")
    with pytest.raises(
        ConfigError, match=r"^p.yaml:4: stages\[0\].select\[0\]: bad rule: rule on 'a' needs at least one "
    ):
        parse_pipeline("input: {format: jsonl}\nstages:\n  - select:\n      - {column: a}\n", path="p.yaml")


def test_invalid_yaml_points_at_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nstages: [\n  - a\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: not valid YAML"):
        load_pipeline(p)
    with pytest.raises(ConfigError, match="cannot read pipeline file"):
        load_pipeline(tmp_path / "missing.yaml")


def test_overrides_by_dotted_path() -> None:
    cfg = parse_pipeline(
        GOOD,
        path="p.yaml",
        overrides=["stages.0.params.max_blank_lines=5", "input.path=other/*.jsonl", "engine.kind=inline"],
    )
    assert cfg.stages[0].params == {"max_blank_lines": 5}
    assert cfg.raw["input"]["path"] == "other/*.jsonl"
    assert cfg.input["path"] == str(Path.cwd() / "other/*.jsonl")  # resolved: curate/io/paths.py
    assert cfg.engine == EngineSpec(kind="inline")
    with pytest.raises(ConfigError) as e:
        apply_overrides({"stages": [{}, {}]}, ["stages.9.params.x=1"])
    assert str(e.value) == (
        "--set stages.9.params.x=1: stages is a list of 2 (indexes 0 to 1); '9' is not one of its indexes"
    )
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        apply_overrides({}, ["novalue"])


def test_overridden_values_are_type_checked() -> None:
    with pytest.raises(ConfigError) as e:
        parse_pipeline(GOOD, path="p.yaml", overrides=["stages.0.params.max_blank_lines=x"])
    assert str(e.value) == "--set stages.0.params.max_blank_lines=x: expected int, got str 'x'"


def test_shipped_pipelines_parse() -> None:
    root = Path(__file__).resolve().parents[1] / "pipelines"
    files = sorted(root.glob("*.yaml"))
    assert files, "no pipelines shipped"
    corpora = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    for f in files:
        try:
            cfg = load_pipeline(f)
        except ConfigError as e:
            # Eval files are checked at load: without ../shared/corpora, the pipelines that evaluate on it
            # cannot load, and say which file is missing.
            if not corpora.exists() and "../shared/corpora" in str(e) and "does not exist" in str(e):
                continue
            raise
        assert build_stages(cfg)


def test_duplicate_stage_labels_are_refused() -> None:
    text = GOOD + "  - transform: normalize_v1\n"
    with pytest.raises(
        ConfigError, match=r"^p.yaml:8: stages\[2\]: 'normalize_v1' is already stages\[0\]; give one"
    ):
        parse_pipeline(text, path="p.yaml")
    cfg = parse_pipeline(GOOD + "  - transform: normalize_v1\n    label: norm2\n", path="p.yaml")
    assert [s.label for s in build_stages(cfg)] == ["normalize_v1", "select", "norm2"]


def test_a_filter_is_one_stage_named_and_labelled_like_its_scorer() -> None:
    from curate.core.stage import FilterStage

    text = GOOD + "  - filter: gopher_quality_v1\n    label: gq\n    params: {min_doc_words: 3}\n"
    stages = build_stages(parse_pipeline(text, path="p.yaml"))
    assert [type(s).__name__ for s in stages] == ["Normalize", "Select", "FilterStage"]
    f = stages[2]
    assert isinstance(f, FilterStage)
    assert (f.name, f.label, f.scorer.label) == (
        "gopher_quality_v1",
        "gq",
        "gq",
    )
    assert f.rules[0].column == "gq.word_count"
    assert f.rules[0].min == 3
    assert [p["kind"] for p in f.parts()] == ["score", "select"]
    # A scorer without reference thresholds cannot be a filter: the error says what to write instead.
    with pytest.raises(
        ConfigError, match=r"^p.yaml:8: stages\[2\].filter: 'machine_text_v1' has no reference"
    ):
        parse_pipeline(GOOD + "  - filter: machine_text_v1\n", path="p.yaml")


PROXY = (
    GOOD
    + """proxy:
  recipes: {raw: {from: raw}, curated: {from: kept}}
  eval:
    - {name: h, kind: heldout, holdout: 0.02}
"""
)


def test_proxy_config_errors_fail_at_load_with_file_line_and_key(tmp_path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"^p.yaml:\d+: proxy.eval\[0\].kind: expected one of 'text', 'choice', 'heldout', got 'mcq'$",
    ):
        parse_pipeline(PROXY.replace("kind: heldout", "kind: mcq"), path="p.yaml")
    with pytest.raises(
        ConfigError, match=r"^p.yaml:\d+: proxy.headline\[0\]: 'wiki' names no eval set; eval sets: h$"
    ):
        parse_pipeline(PROXY + "  headline: [wiki]\n", path="p.yaml")
    with pytest.raises(
        ConfigError,
        match=r"^p.yaml:\d+: proxy.ladder\[0\].budget: budget 1000 tokens < 4 steps of 2048 tokens$",
    ):
        parse_pipeline(PROXY + "  ladder: [{model: proxy_tiny, budget: 1000}]\n", path="p.yaml")
    bad = tmp_path / "bench.jsonl"
    bad.write_text(
        '{"query": "q", "choices": ["a", "b"], "gold": 1}\n{"query": "q2", "choices": ["a", "b"]}\n'
    )
    text = PROXY + f"    - {{name: b, kind: choice, path: {bad}}}\n"
    # an eval file's own error, at the line of the entry's path
    with pytest.raises(
        ConfigError, match=rf"^p.yaml:12: proxy.eval\[1\].path: {bad}:2: a record with choices has no gold"
    ):
        parse_pipeline(text, path="p.yaml")
    with pytest.raises(
        ConfigError, match=r"^p.yaml:12: proxy.eval\[1\].path: /nonexistent.jsonl does not exist$"
    ):
        parse_pipeline(PROXY + "    - {name: b, kind: choice, path: /nonexistent.jsonl}\n", path="p.yaml")


def test_each_section_registers_its_parser_found_without_importing_its_package() -> None:
    from curate.core.registry import SECTIONS, builtin_index

    assert builtin_index()["SECTIONS"] == {
        "proxy": "curate.proxy.spec.config",
        "export": "curate.export.options",
        "report": "curate.report.options",
        "target": "curate.targeting.config",
    }
    assert SECTIONS.names() == ["export", "proxy", "report", "target"]


def test_the_config_holds_each_section_parsed_once_and_each_stage_built_once() -> None:
    from curate.export.options import ExportOptions
    from curate.report.options import ReportOptions

    text = GOOD + "export: {formats: [parquet], seed: 3}\nreport: {bins: 12}\n"
    cfg = parse_pipeline(text, path="p.yaml")
    assert cfg.export == ExportOptions(formats=("parquet",), seed=3)
    assert cfg.report == ReportOptions(bins=12)
    assert cfg.proxy is None
    assert cfg.raw["export"] == {"formats": ["parquet"], "seed": 3}  # the manifest's config: as written
    assert cfg.source_params.path == str(Path.cwd() / "data/*.jsonl")
    assert cfg.stages[0].built.max_blank_lines == 2
    first, again = build_stages(cfg)[0], build_stages(cfg)[0]
    assert first.params == again.params == cfg.stages[0].built
    assert first.params is not again.params  # each run's stages own their params (a fit changes them)
