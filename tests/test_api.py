"""The Python API: ``curate.run`` and ``curate.filter``, as a notebook uses them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import curate
from curate.core.errors import ConfigError
from curate.pipeline.validate import EmptyRunError

LONG = " ".join(["the cat sat on the mat and looked at the dog in the garden."] * 6)


def test_filter_returns_keep_reason_and_scores_in_input_order() -> None:
    t = curate.filter([LONG, "too short", LONG + " again"], "gopher_quality_v1")
    assert t.column_names[:5] == ["id", "source", "text", "keep", "reason"]
    assert t.column("id").to_pylist() == ["0", "1", "2"]
    assert t.column("keep").to_pylist() == [True, False, True]
    assert t.column("reason").to_pylist() == [None, "gopher_quality_v1:short_doc", None]
    assert t.column("gopher_quality_v1.word_count").to_pylist() == [
        84,
        2,
        85,
    ]  # 13 words and a period, six times


def test_filter_runs_every_stage_on_every_row_and_keeps_the_first_reason() -> None:
    t = curate.filter(["too short", LONG], "gopher_quality_v1", "degeneration_v1")
    # The short text fails Gopher first; LONG passes Gopher and repeats one sentence (4-gram fraction 1.0).
    assert t.column("reason").to_pylist() == [
        "gopher_quality_v1:short_doc",
        "degeneration_v1:repeated_ngrams",
    ]
    # A row rejected by the first stage is still scored by the second.
    assert t.column("degeneration_v1.repeated_4gram_frac").to_pylist() == [0.0, 1.0]
    loose = curate.filter(
        ["too short"],
        "gopher_quality_v1",
        params={"gopher_quality_v1": {"min_doc_words": 1, "min_stop_words": 0}},
    )
    assert loose.column("keep").to_pylist() == [True]


def test_filter_takes_a_table_and_keeps_its_columns() -> None:
    docs = pa.table({"text": [LONG, "x"], "url": ["http://a.example/", None], "id": ["a", "b"]})
    t = curate.filter(docs, "gopher_quality_v1")
    assert t.column_names[:6] == ["id", "source", "text", "url", "keep", "reason"]
    assert t.column("id").to_pylist() == ["a", "b"]


def test_filter_errors_name_the_problem() -> None:
    with pytest.raises(ConfigError) as e:
        curate.filter(["x"], "gopher_quality_v1", params={"gopher_quality_v1": {"min_doc_word": 3}})
    assert str(e.value).startswith(
        "curate.filter: gopher_quality_v1.params.min_doc_word: unknown parameter; valid parameters: "
    )
    with pytest.raises(ValueError, match=r"^curate.filter: exact_dedup_v1 is a dedup stage \(it needs every"):
        curate.filter(["x"], "exact_dedup_v1")
    with pytest.raises(
        TypeError, match=r"^curate.filter: docs is a list of strings or a table, not one string"
    ):
        curate.filter("x", "gopher_quality_v1")
    with pytest.raises(ValueError, match=r"^curate.filter: params for c4_quality_v1, which is not among"):
        curate.filter(["x"], "gopher_quality_v1", params={"c4_quality_v1": {}})


def test_run_writes_a_run_and_returns_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in [LONG, "short", LONG]))
    (tmp_path / "p.yaml").write_text(
        "name: api\ninput: {path: nowhere.jsonl, format: jsonl}\nstages:\n"
        "  - dedup: exact_dedup_v1\n  - filter: gopher_quality_v1\n"
    )
    m = curate.run(
        tmp_path / "p.yaml",
        output=tmp_path / "run",
        input=str(tmp_path / "in.jsonl"),
        set={"stages.1.params": {"min_doc_words": 10}},
        engine="inline",
        phases=False,
    )
    assert m["accounting"] == {"input": 3, "kept": 1, "rejected": 2, "quarantined": 0, "balanced": True}
    assert m["removed_by_reason"] == {"exact_dedup_v1:duplicate": 1, "gopher_quality_v1:short_doc": 1}
    with pytest.raises(EmptyRunError):
        curate.run(
            tmp_path / "p.yaml",
            output=tmp_path / "run2",
            input=str(tmp_path / "in.jsonl"),
            set={"stages.1.params.min_doc_words": 1000},
            engine="inline",
            phases=False,
        )


def test_run_sets_python_values_as_they_are_and_an_error_names_the_set(tmp_path: Path) -> None:
    from curate.core.errors import ConfigError
    from curate.pipeline.config import load_pipeline

    (tmp_path / "p.yaml").write_text(
        "name: api\ninput: {path: in.jsonl, format: jsonl}\nstages:\n  - filter: gopher_quality_v1\n"
    )
    # a tuple (which YAML text cannot carry) and an index into a list, set without a round trip through YAML
    cfg = load_pipeline(
        tmp_path / "p.yaml", [("input.keep_fields", ("url", "lang")), ("stages.0.params.min_doc_words", 7)]
    )
    assert cfg.raw["input"]["keep_fields"] == ("url", "lang")
    assert cfg.stages[0].built.min_doc_words == 7
    with pytest.raises(ConfigError) as e:
        curate.run(tmp_path / "p.yaml", set={"stages.0.params.min_doc_words": "many"}, phases=False)
    assert str(e.value) == "set['stages.0.params.min_doc_words']='many': expected int, got str 'many'"


def test_filter_and_run_give_empty_text_one_reason(tmp_path: Path) -> None:
    # curate.filter once said short_doc where curate.run quarantines the empty document
    t = curate.filter(["", "  \n ", LONG], "gopher_quality_v1")
    assert t.column("reason").to_pylist()[:2] == ["quarantine:empty_text", "quarantine:empty_text"]
    assert t.column("keep").to_pylist()[:2] == [False, False]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": x}) + "\n" for x in ["", "  \n ", LONG]))
    (tmp_path / "p.yaml").write_text(
        f"name: e\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages:\n  - filter: gopher_quality_v1\n"
    )
    m = curate.run(tmp_path / "p.yaml", output=tmp_path / "run", engine="inline", phases=False)
    assert m["removed_by_reason"]["quarantine:empty_text"] == 2
