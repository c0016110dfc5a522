"""``curate select``: re-thresholding from stored scores equals a fresh run with those thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.cli import main
from curate.core.engine import InlineEngine
from curate.core.errors import PhaseError
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from curate.verbs.reselect import format_summary, reselect

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "and",
    "then",
    "it",
    "runs",
    "far",
    "away",
    "from",
    "home",
]


def write_corpus(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(60):
        n = 3 + (i * 7) % 60  # 3..62 words
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(n)) + "."
        rows.append({"id": f"d{i}", "text": text})
    rows.append({"id": "dup", "text": rows[5]["text"]})  # an exact duplicate: removed by dedup, not select
    lines = [json.dumps(r) for r in rows] + ["{broken"]
    (d / "a.jsonl").write_text("\n".join(lines[:30]) + "\n")
    (d / "b.jsonl").write_text("\n".join(lines[30:]) + "\n")


def pipeline(d: Path, min_words: int) -> str:
    # Score first, select last: every row carries every score, so any threshold can be loosened.
    return f"""\
name: rs
input: {{path: {d}/*.jsonl, format: jsonl, batch_docs: 16}}
allow_empty: true
stages:
  - dedup: exact_dedup_v1
  - score: gopher_quality_v1
  - score: degeneration_v1
  - select:
      - {{column: gopher_quality_v1.word_count, min: {min_words}}}
      - {{column: degeneration_v1.distinct_1, min: 0.2}}
"""


def kept_and_rejected(run: Path) -> tuple[list[str], dict[str, str]]:
    kept = sorted(
        i for f in sorted((run / "kept").glob("*.parquet")) for i in pq.read_table(f).column("id").to_pylist()
    )
    rej: dict[str, str] = {}
    for f in sorted((run / "rejected").glob("*.parquet")):
        t = pq.read_table(f, columns=["id", "reason"])
        rej.update(zip(t.column("id").to_pylist(), t.column("reason").to_pylist(), strict=True))
    return kept, rej


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("rs")
    write_corpus(d / "in")
    run_pipeline(parse_pipeline(pipeline(d / "in", 30)), d / "run30", engine=InlineEngine(), phases=False)
    return d, d / "run30"


@pytest.mark.parametrize("min_words", [10, 45])
def test_loosening_and_tightening_equal_a_fresh_run(base_run, min_words: int) -> None:
    d, run = base_run
    fresh = d / f"fresh{min_words}"
    run_pipeline(parse_pipeline(pipeline(d / "in", min_words)), fresh, engine=InlineEngine(), phases=False)
    out = d / f"sel{min_words}"
    s = reselect(run, [f"gopher_quality_v1.word_count.min={min_words}"], out)
    assert kept_and_rejected(out) == kept_and_rejected(fresh)
    m_fresh, m_sel = (json.loads((p / "manifest.json").read_text()) for p in (fresh, out))
    assert m_sel["accounting"] == m_fresh["accounting"]
    assert m_sel["removed_by_reason"] == m_fresh["removed_by_reason"]
    assert s["missing_score"] == 0
    assert (s["readmitted"] > 0) == (min_words < 30)


def test_exact_counts_of_a_loosened_run(base_run) -> None:
    _, run = base_run
    s = reselect(run, ["gopher_quality_v1.word_count.min=10"])
    # 62 lines: 1 malformed (quarantined), 1 exact duplicate, 60 documents of 3 + (7i mod 60) words: 7i
    # mod 60 takes every value 0..59 once, so exactly 7 documents (3..9 words) have fewer than 10.
    assert s["accounting"] == {"input": 62, "kept": 53, "rejected": 8, "quarantined": 1, "balanced": True}
    assert s["carried_over"] == {"exact_dedup_v1:duplicate": 1, "quarantine:malformed_json": 1}
    assert s["removed"] == {"select:gopher_quality_v1.word_count<10": 7}
    assert s["pool"] == 60


def test_rejected_rows_lacking_a_later_score_stay_rejected(tmp_path: Path) -> None:
    write_corpus(tmp_path / "in")
    text = pipeline(tmp_path / "in", 30).replace(
        "  - score: gopher_quality_v1\n", "  - filter: gopher_quality_v1\n    params: {min_doc_words: 30}\n"
    )
    run_pipeline(parse_pipeline(text), tmp_path / "run", engine=InlineEngine(), phases=False)
    s = reselect(tmp_path / "run", ["gopher_quality_v1.word_count.min=10"])
    # The filter's rows were rejected before degeneration_v1 scored them: the select can re-admit none.
    assert s["readmitted"] == 0
    assert s["missing_score"] == s["removed"]["select:degeneration_v1.distinct_1<0.2"] > 0


def test_cli_select_prints_counts_and_refuses_bad_sets(base_run, tmp_path: Path, capsys) -> None:
    _, run = base_run
    assert main(["select", str(run), "--set", "gopher_quality_v1.word_count.min=10"]) == 0
    out = capsys.readouterr().out
    assert "kept 53; removed 7: select:gopher_quality_v1.word_count<10 7" in out
    assert "input 62 = kept 53 + rejected 8 + quarantined 1  (balanced)" in out
    assert out.rstrip().endswith("nothing written (give --output DIR to write the new kept set)")
    assert main(["select", str(run), "--set", "gopher_quality_v1.word_count.lo=10"]) == 2
    assert capsys.readouterr().err == (
        "curate select: error: --set 'gopher_quality_v1.word_count.lo=10': expected COLUMN.BOUND=VALUE with BOUND "
        "one of min, max, equals, e.g. --set gopher_quality_v1.word_count.min=20\n"
    )
    with pytest.raises(
        PhaseError, match=r"stores no column 'c4_quality_v1.sentences'; stored score columns: deg"
    ):
        reselect(run, ["c4_quality_v1.sentences.min=3"])
    with pytest.raises(PhaseError, match="already exists and is not empty"):
        reselect(run, [], run)


def test_rows_readmitted_before_a_dedup_are_counted_and_warned(tmp_path: Path, capsys) -> None:
    # A select *before* the dedup: the rows it rejected never reached exact_dedup_v1, so re-admitting
    # them can re-admit a duplicate. `curate select` does not run the dedup again; it says so, with counts.
    d = tmp_path / "in"
    write_corpus(d)
    twin = json.loads((d / "b.jsonl").read_text().splitlines()[6])  # d36: 15 words, rejected at min 30
    with (d / "b.jsonl").open("a") as f:
        f.write(json.dumps({"id": "twin", "text": twin["text"]}) + "\n")
    text = f"""\
name: rs
input: {{path: {d}/*.jsonl, format: jsonl, batch_docs: 16}}
stages:
  - score: gopher_quality_v1
  - select:
      - {{column: gopher_quality_v1.word_count, min: 30}}
  - dedup: exact_dedup_v1
"""
    run_pipeline(parse_pipeline(text), tmp_path / "run", engine=InlineEngine(), phases=False)
    s = reselect(tmp_path / "run", ["gopher_quality_v1.word_count.min=10"], tmp_path / "sel")
    # 3 + (7i mod 60) words takes each value 3..62 once: 20 documents have 10..29 words, plus the twin.
    assert s["readmitted"] == 21
    assert s["readmitted_unchecked"] == 21
    assert s["readmitted_skipped"] == {"exact_dedup_v1": 21}
    kept, _ = kept_and_rejected(tmp_path / "sel")
    assert {"d36", "twin"} <= set(kept)  # the duplicate pair is back: what the warning is about
    # the derived run's funnel carries bytes (the report showed "pool from run ... 0 B")
    source, derived = (json.loads((tmp_path / p / "manifest.json").read_text()) for p in ("run", "sel"))
    pool_row, select_row = derived["stages"]
    assert pool_row["bytes_in"] == source["stages"][0]["bytes_in"] > 0
    assert pool_row["bytes_out"] == select_row["bytes_in"] == s["pool_bytes"] > 0
    assert main(["select", str(tmp_path / "run"), "--set", "gopher_quality_v1.word_count.min=10"]) == 0
    assert (
        "warning: 21 re-admitted rows never went through the stages after the select that rejected "
        "them: exact_dedup_v1 (21); the new kept set may hold duplicates those stages would have removed "
        "(run `curate run` with the new thresholds for a fully deduplicated set)\n"
    ) in capsys.readouterr().out


def test_no_warning_when_the_select_comes_after_every_dedup(base_run) -> None:
    _, run = base_run
    s = reselect(run, ["gopher_quality_v1.word_count.min=10"])
    assert s["readmitted"] == 20
    assert s["readmitted_unchecked"] == 0
    assert s["readmitted_skipped"] == {}
    assert "warning" not in format_summary(s, None)


def test_a_failed_select_leaves_no_half_run_and_a_rerun_succeeds(
    base_run, tmp_path: Path, monkeypatch
) -> None:
    """The new run is written beside --output and renamed into place once complete: a failure midway
    (here, after every part is written, in the manifest) leaves nothing at --output, so the same command
    can simply be run again."""
    from curate.verbs import reselect as rs

    _, run = base_run
    out = tmp_path / "loose"
    real = rs._write_manifest

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(rs, "_write_manifest", broken)
    with pytest.raises(OSError, match="disk full"):
        reselect(run, ["gopher_quality_v1.word_count.min=10"], out)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setattr(rs, "_write_manifest", real)
    s = reselect(run, ["gopher_quality_v1.word_count.min=10"], out)
    assert s["kept"] == 53
    assert json.loads((out / "manifest.json").read_text())["accounting"]["kept"] == 53
    assert len(list((out / "kept").glob("part-*.parquet"))) > 0
