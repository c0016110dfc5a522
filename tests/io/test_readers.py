"""Every reader on small files the tests write, the real corpora where present, and each bad-input case."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curate.io.readers import read_table
from curate.io.sources import SourceError
from tests.helpers import corpora_path

DOCS = [
    {"id": f"x{i}", "text": f"document number {i} with some words", "url": f"https://e.org/{i}"}
    for i in range(5)
]


def _lines(docs: list[dict]) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def _reasons(t: pa.Table) -> list[str | None]:
    return t.column("__reject__").to_pylist()


@pytest.mark.parametrize("suffix", ["jsonl", "jsonl.gz", "jsonl.zst"])
def test_jsonl_compressions(tmp_path: Path, suffix: str) -> None:
    raw = _lines(DOCS)
    p = tmp_path / f"a.{suffix}"
    if suffix.endswith("gz"):
        raw = gzip.compress(raw)
    elif suffix.endswith("zst"):
        raw = zstandard.ZstdCompressor().compress(raw)
    p.write_bytes(raw)
    t = read_table(str(p))
    assert t.column("id").to_pylist() == [d["id"] for d in DOCS]
    assert t.column("text").to_pylist() == [d["text"] for d in DOCS]
    assert t.column("url").to_pylist() == [d["url"] for d in DOCS]
    assert t.column("source").to_pylist() == [f"a.{suffix}"] * 5
    assert _reasons(t) == [None] * 5


def test_field_mapping_and_derived_ids(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_bytes(_lines([{"content": "alpha beta"}, {"content": "gamma delta"}]))
    t = read_table(str(p), text_field="content")
    assert t.column("text").to_pylist() == ["alpha beta", "gamma delta"]
    # No id field: the id is <file>:<line>, stable across runs.
    assert t.column("id").to_pylist() == ["m.jsonl:1", "m.jsonl:2"]
    t2 = read_table(str(p), text_field="content", id_field=None)
    assert t2.column("id").to_pylist() == t.column("id").to_pylist()


def test_bad_lines_are_quarantined_with_reasons(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(
        b'{"id": "ok", "text": "fine text"}\n'
        b"{not json\n"
        b'{"id": "u", "text": "caf\xe9"}\n'  # invalid UTF-8 (latin-1 byte)
        b'{"id": "m"}\n'
        b'{"id": "n", "text": ["a", "list"]}\n'
        b'{"id": "e", "text": "   "}\n'
        b"[1, 2]\n"
    )
    t = read_table(str(p))
    assert t.num_rows == 7
    assert _reasons(t) == [
        None,
        "quarantine:malformed_json",
        "quarantine:invalid_utf8",
        "quarantine:missing_text",
        "quarantine:non_string_text",
        "quarantine:empty_text",
        "quarantine:not_an_object",
    ]
    # The raw content is kept so that nothing is lost.
    assert t.column("text")[1].as_py() == "{not json"
    assert t.column("text")[2].as_py() == '{"id": "u", "text": "caf\ufffd"}'


def test_lone_surrogates_are_replaced_in_every_column(tmp_path: Path) -> None:
    """JSON escapes such as "\\ud800" decode to lone surrogates, which UTF-8 (and Parquet) cannot hold: the
    text keeps its length with "?" in their place, and an id or a kept field holding one no longer fails
    the batch."""
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "a\\ud800", "text": "x\\udc00y", "url": "u\\ud801"}\n{"id": "b", "text": "fine"}\n')
    t = read_table(str(p), keep_fields=["url"])
    assert t.column("id").to_pylist() == ["a?", "b"]
    assert t.column("text").to_pylist() == ["x?y", "fine"]
    assert t.column("url").to_pylist() == ["u?", None]
    assert _reasons(t) == [None, None]


def test_giant_document_is_quarantined_not_crashing(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big = "word " * 10_000_000  # 50 MB
    p.write_text(
        json.dumps({"id": "big", "text": big}) + "\n" + json.dumps({"id": "small", "text": "hi there"}) + "\n"
    )
    t = read_table(str(p))
    assert _reasons(t) == ["quarantine:too_large", None]
    assert len(t.column("text")[0].as_py()) == len(big)
    # The limit is a parameter: raised, the document passes.
    t2 = read_table(str(p), max_doc_bytes=60_000_000)
    assert _reasons(t2) == [None, None]


def test_too_large_says_bytes_of_utf8_not_characters(tmp_path: Path) -> None:
    """The limit is in bytes, and so is the detail: 10 characters of 2 bytes each are 20 bytes."""
    text = "é" * 10
    p = tmp_path / "b.jsonl"
    p.write_text(
        json.dumps({"id": "wide", "text": text}) + "\n" + json.dumps({"id": "s", "text": "é"}) + "\n"
    )
    pq.write_table(pa.table({"text": [text, "é"]}), tmp_path / "b.parquet")
    for t in (
        read_table(str(p), max_doc_bytes=19),
        read_table(str(tmp_path / "b.parquet"), fmt="parquet", max_doc_bytes=19),
    ):
        assert _reasons(t) == ["quarantine:too_large", None]
        assert t.column("detail").to_pylist() == ["20 bytes exceed max_doc_bytes=19", None]
    # 20 bytes fit a limit of 20 (though 4 bytes a character could be 40).
    assert _reasons(read_table(str(p), max_doc_bytes=20)) == [None, None]
    assert _reasons(read_table(str(tmp_path / "b.parquet"), fmt="parquet", max_doc_bytes=20)) == [None, None]


def test_blank_line_is_a_counted_row_with_its_place(tmp_path: Path) -> None:
    """A blank line is no document, but a line of the file: one row per line, the blank one quarantined
    with the file and line it came from."""
    p = tmp_path / "gap.jsonl"
    p.write_bytes(b'{"text": "first doc"}\n  \r\n{"text": "third line"}\n')
    t = read_table(str(p))
    assert t.column("id").to_pylist() == ["gap.jsonl:1", "gap.jsonl:2", "gap.jsonl:3"]
    assert _reasons(t) == [None, "quarantine:blank_line", None]
    assert t.column("detail").to_pylist() == [None, "gap.jsonl: line 2 is blank", None]
    assert t.column("text").to_pylist() == ["first doc", "", "third line"]


def test_run_counts_a_blank_line_as_quarantined(tmp_path: Path) -> None:
    import curate

    (tmp_path / "in.jsonl").write_text(
        json.dumps({"text": "one two three"}) + "\n\n" + json.dumps({"text": "four five six"}) + "\n"
    )
    (tmp_path / "p.yaml").write_text(
        f"name: b\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages:\n  - dedup: exact_dedup_v1\n"
    )
    m = curate.run(tmp_path / "p.yaml", output=tmp_path / "run", engine="inline", phases=False)
    assert m["accounting"] == {"input": 3, "kept": 2, "rejected": 0, "quarantined": 1, "balanced": True}
    assert m["removed_by_reason"] == {"quarantine:blank_line": 1}


def test_truncated_gzip_keeps_what_was_read_and_counts_the_loss(tmp_path: Path) -> None:
    docs = [{"id": str(i), "text": f"text {i} " * 50} for i in range(2000)]
    raw = gzip.compress(_lines(docs))
    p = tmp_path / "trunc.jsonl.gz"
    p.write_bytes(raw[: len(raw) // 2])
    t = read_table(str(p))
    reasons = _reasons(t)
    assert reasons[-1] == "quarantine:truncated_file"
    assert t.column("id")[-1].as_py() == "trunc.jsonl.gz#truncated_file"
    good = [r for r in reasons[:-1] if r is None]
    assert 0 < len(good) < 2000
    assert all(r is None for r in reasons[:-1])


def test_unreadable_file_fails_with_path_or_is_quarantined(tmp_path: Path) -> None:
    p = tmp_path / "notgzip.jsonl.gz"
    p.write_bytes(b"this is not gzip at all")
    with pytest.raises(SourceError, match=r"notgzip\.jsonl\.gz: cannot read: .*on_error: quarantine"):
        read_table(str(p))
    t = read_table(str(p), on_error="quarantine")
    assert _reasons(t) == ["quarantine:unreadable_file"]
    with pytest.raises(SourceError, match="no such file or directory"):
        read_table(str(tmp_path / "missing.jsonl"))
    with pytest.raises(SourceError, match="matched no input files"):
        read_table(str(tmp_path / "*.nothing"))


def test_parquet_reader(tmp_path: Path) -> None:
    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"body": ["one doc", None, "", "three"], "doc": [1, 2, 3, 4]}), p)
    t = read_table(str(p), fmt="parquet", text_field="body", id_field="doc", batch_docs=2)
    assert t.column("id").to_pylist() == ["1", "2", "3", "4"]
    assert _reasons(t) == [None, "quarantine:missing_text", "quarantine:empty_text", None]
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "n.parquet")
    assert (
        _reasons(read_table(str(tmp_path / "n.parquet"), fmt="parquet")) == ["quarantine:non_string_text"] * 2
    )


def test_hf_datasets_reader(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["first doc", "second doc"], "id": ["a", "b"]})
    ds.save_to_disk(str(tmp_path / "saved"))
    t = read_table(str(tmp_path / "saved"), fmt="hf")
    assert t.column("id").to_pylist() == ["a", "b"]
    assert t.column("text").to_pylist() == ["first doc", "second doc"]
    # Local files through load_dataset's builders.
    (tmp_path / "f.jsonl").write_bytes(_lines(DOCS[:3]))
    t2 = read_table(str(tmp_path / "f.jsonl"), fmt="hf", builder="json")
    assert t2.column("text").to_pylist() == [d["text"] for d in DOCS[:3]]


def test_text_folder_reader(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("alpha text")
    (tmp_path / "sub" / "b.txt").write_text("beta text")
    (tmp_path / "sub" / "c.txt").write_bytes(b"bad \xff byte")
    (tmp_path / "ignored.md").write_text("not a txt")
    t = read_table(str(tmp_path), fmt="text", batch_docs=2)
    assert t.column("id").to_pylist() == ["a.txt", "sub/b.txt", "sub/c.txt"]
    assert _reasons(t) == [None, None, "quarantine:invalid_utf8"]


@pytest.mark.corpora
def test_real_warc_sample() -> None:
    p = corpora_path("warc", "sample-0000.warc.gz")
    t = read_table(str(p), fmt="warc")
    # 22 HTTP responses in the sample, all HTML; the requests, metadata and warcinfo records are not documents.
    assert t.num_rows == 22
    ok = [r is None for r in _reasons(t)]
    assert sum(ok) >= 20
    assert all(u.startswith("http") for u in t.column("url").to_pylist())
    assert all(i.startswith("<urn:uuid:") for i in t.column("id").to_pylist())


@pytest.mark.corpora
@pytest.mark.parametrize(
    ("name", "empty"), [("c4_en", 0), ("commoncrawl_2019", 0), ("news", 1), ("webtext", 0), ("sms_spam", 0)]
)
def test_real_jsonl_corpora(name: str, empty: int) -> None:
    p = corpora_path("web", f"{name}.jsonl.gz")
    t = read_table(str(p))
    with gzip.open(p, "rt") as f:
        n_lines = sum(1 for _ in f)  # every line is a row: a blank one would be quarantined
    assert t.num_rows == n_lines
    # news.jsonl.gz holds one article whose text is empty: it is quarantined, not dropped.
    assert Counter(_reasons(t)) == Counter(
        {None: n_lines - empty, "quarantine:empty_text": empty} if empty else {None: n_lines}
    )
    assert t.column("id").null_count == 0
