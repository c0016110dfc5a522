"""A run with ``pii_v1`` in redact mode leaves no raw value it finds anywhere in its folder: rows that stages
before it reject (a short document, a duplicate, a quarantined line) are redacted before they are
written, and the report, the export and the manifest see only what was written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from curate.verbs.summary import inspect_run

MAIL, CARD = "jane.doe@example.com", "4111 1111 1111 1111"
LONG = " ".join(["the committee met on tuesday and reviewed the plan for the new park in detail."] * 6)


def _texts(path: Path) -> str:
    """Everything a file holds that a reader could see: a Parquet file's every cell, decoded."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str)
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("piirun")
    rows = [
        {"id": "short", "text": f"write to {MAIL}"},  # gopher: too short, before pii_v1
        {"id": "kept", "text": f"{LONG} write to {MAIL} or pay with {CARD}."},
        {"id": "dup", "text": f"{LONG} write to {MAIL} or pay with {CARD}."},  # exact_dedup, before pii_v1
        *({"id": f"d{i}", "text": f"{LONG} item {i}"} for i in range(6)),
    ]
    lines = [json.dumps(r) for r in rows] + ['{"id": "broken", "text": "mail ' + MAIL]  # quarantined
    (d / "in.jsonl").write_text("\n".join(lines) + "\n")
    cfg = parse_pipeline(
        f"name: p\ninput: {{path: {d}/in.jsonl, format: jsonl, on_error: quarantine}}\n"
        "stages:\n  - filter: gopher_quality_v1\n  - dedup: exact_dedup_v1\n  - transform: pii_v1\n"
        "export: {formats: [parquet]}\n"
    )
    run_pipeline(cfg, d / "run", engine=InlineEngine(progress=False))
    return d / "run"


def test_no_raw_value_in_any_file_of_the_run(run: Path) -> None:
    files = [p for p in run.rglob("*") if p.is_file()]
    seen = {p.relative_to(run).as_posix(): _texts(p) for p in files}
    tops = {k.split("/")[0] for k in seen}
    assert tops >= {"_work", "export", "kept", "rejected", "manifest.json", "report.html", "report.md"}
    leaks = sorted(k for k, v in seen.items() if MAIL in v or CARD in v)
    assert leaks == []


def test_rejected_rows_keep_their_reasons_and_are_redacted(run: Path) -> None:
    rows = [r for p in sorted((run / "rejected").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    by_id = {r["id"]: r for r in rows}
    assert by_id["short"]["text"] == "write to <EMAIL>"
    assert by_id["short"]["reason"] == "gopher_quality_v1:short_doc"
    assert by_id["dup"]["text"].endswith("write to <EMAIL> or pay with <CREDIT_CARD>.")
    assert by_id["dup"]["reason"].startswith("exact_dedup_v1")
    broken = [r for r in rows if r["reason"].startswith("quarantine")]
    assert [r["text"] for r in broken] == ['{"id": "broken", "text": "mail <EMAIL>']
    assert broken[0]["reason"] == "quarantine:malformed_json"
    # the accounting is that of the raw rows: counts only, one removal per reason
    stages = {s["name"]: s for s in json.loads((run / "manifest.json").read_text())["stages"]}
    assert [stages[n]["removed"] for n in ("read", "gopher_quality_v1", "exact_dedup_v1")] == [
        {"quarantine:malformed_json": 1},
        {"gopher_quality_v1:short_doc": 1},
        {"exact_dedup_v1:duplicate": 1},
    ]
    counts = stages["pii_v1"]["counts"]
    assert {k: v for k, v in counts.items() if v} == {"email": 1, "card": 1}  # the kept row's alone


def test_the_parts_before_pii_are_gone_and_their_markers_say_so(run: Path) -> None:
    """The scratch parts before pii_v1 were removed at the end and their done markers rewritten, so that
    resume's size check (which reads the markers) still finds every unit done."""
    assert list((run / "_work" / "s0").glob("p*.parquet")) == []
    marker = json.loads(next((run / "_work" / "s0").glob("done-*.json")).read_text())
    assert sorted(marker["files"]) == ["r00000-00000.parquet"]
    assert marker["parts"] == ["00000-00000"]


@pytest.fixture(scope="module")
def reject_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("piireject")
    rows = [{"id": "card", "text": f"pay with {CARD} or write to {MAIL}. {LONG}"}]
    rows += [{"id": f"d{i}", "text": f"{LONG} item {i}"} for i in range(4)]
    (d / "in.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = parse_pipeline(
        f"name: r\ninput: {{path: {d}/in.jsonl, format: jsonl}}\n"
        "stages:\n  - transform: pii_v1\n    params: {mode: reject}\n"
    )
    run_pipeline(cfg, d / "run", engine=InlineEngine(progress=False))
    return d / "run"


def test_reject_mode_shows_no_raw_value_outside_rejected(reject_run: Path) -> None:
    """``mode: reject`` keeps the document as it was in rejected/ (the user's own copy); the report's
    examples and ``curate inspect`` show it masked, and the manifest holds counts only."""
    rejected = [r for p in (reject_run / "rejected").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert [(r["id"], r["reason"], CARD in r["text"]) for r in rejected] == [
        ("card", "pii_v1:email", True)
    ]  # e-mail: first in check order
    shown = {n: (reject_run / n).read_text() for n in ("report.md", "report.html", "manifest.json")}
    shown["inspect"] = inspect_run(reject_run, reason="pii_v1:email", n=1)
    assert {n: (MAIL in v or CARD in v) for n, v in shown.items()} == dict.fromkeys(shown, False)
    assert "pay with <CREDIT_CARD> or write to <EMAIL>." in shown["inspect"]
    assert "&lt;CREDIT_CARD&gt;" in shown["report.html"] or "<CREDIT_CARD>" in shown["report.html"]


def test_the_target_samples_are_redacted_too(tmp_path: Path) -> None:
    """With a ``target:`` section the run keeps two samples (the target and a raw draw of the input) in
    ``target/``; a pipeline with ``pii_v1`` in redact mode writes and fits them redacted, so neither holds
    a raw value (and the rows that carried one are still drawn: their redacted text is there)."""
    rows = [{"id": f"d{i}", "text": f"{LONG} item {i}"} for i in range(12)]
    rows.append({"id": "mail", "text": f"{LONG} write to {MAIL} or pay with {CARD}."})
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    target = [f"notes on the park plan {i}, questions to {MAIL}." for i in range(5)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in target))
    cfg = parse_pipeline(
        f"name: p\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\n"
        f"target: {{path: {tmp_path}/t.jsonl, raw_docs: 20}}\n"
        "stages:\n  - transform: pii_v1\n  - score: dsir_v1\n"
    )
    run_pipeline(cfg, tmp_path / "run", engine=InlineEngine(progress=False))
    samples = {p.name: _texts(p) for p in (tmp_path / "run" / "target").glob("*.jsonl.gz")}
    assert sorted(samples) == ["raw.jsonl.gz", "target.jsonl.gz"]
    raw = [
        json.loads(x)["text"]
        for x in gzip.decompress((tmp_path / "run" / "target" / "raw.jsonl.gz").read_bytes())
        .decode()
        .splitlines()
    ]
    assert sum("write to <EMAIL> or pay with <CREDIT_CARD>." in t for t in raw) == 1
    assert len(raw) == 13
    leaks = sorted(
        p.relative_to(tmp_path / "run").as_posix()
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and (MAIL in _texts(p) or CARD in _texts(p))
    )
    assert leaks == []
