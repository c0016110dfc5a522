"""report.html / report.md built from a real (small) run: funnel, escaping, goodput values, no network."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.report import data as report_data
from curate.report import examples as report_examples
from curate.report import histograms as report_histograms
from curate.report.build import build_report
from tests.report.report_html import check_metrics, parse
from tests.report.report_run import N_BAD, N_DUP, N_NORMAL, N_SHORT, N_SHOUT, XSS


def test_fixture_run_is_what_the_tests_assume(run_dir: Path) -> None:
    m = json.loads((run_dir / "manifest.json").read_text())
    n_in = N_NORMAL + N_SHORT + N_SHOUT + N_DUP + N_BAD
    assert m["accounting"] == {
        "input": n_in,
        "kept": N_NORMAL,
        "rejected": N_SHORT + N_SHOUT + N_DUP,
        "quarantined": N_BAD,
        "balanced": True,
    }
    assert m["removed_by_reason"] == {
        "exact_dedup_v1:duplicate": 5,
        "quarantine:malformed_json": 1,
        "select:shouting": 4,
        "select:too_short": 6,
    }


def test_funnel_numbers_equal_the_manifest(built_run: Path) -> None:
    run_dir = built_run
    html_path, md_path = run_dir / "report.html", run_dir / "report.md"
    m = json.loads((run_dir / "manifest.json").read_text())
    cells = parse(html_path.read_text()).cells
    assert [s["name"] for s in m["stages"]] == [
        "read",
        "normalize_v1",
        "report_test_shape_v1",
        "select",
        "exact_dedup_v1",
    ]
    for s in m["stages"]:
        assert cells[(s["name"], "docs_in")] == f"{s['docs_in']:,}"
        assert cells[(s["name"], "docs_out")] == f"{s['docs_out']:,}"
        assert cells[(s["name"], "removed")] == f"{sum(s['removed'].values()):,}"
    assert cells[("select", "docs_in")] == "45"
    assert cells[("select", "docs_out")] == "35"
    assert cells[("exact_dedup_v1", "removed")] == "5"
    html = html_path.read_text()
    assert "input <b>46</b> = kept <b>30</b> + rejected <b>15</b> + quarantined <b>1</b> (balanced)" in html
    assert (
        '<tr data-reason="select:too_short"><td class="l">select:too_short</td><td>6</td><td>13.0%</td></tr>'
        in html
    )
    md = md_path.read_text()
    assert "| select | 45 | 35 | 10 | 3.3 KB | " in md
    assert "| select:too_short | 6 | 13.0% |" in md


def test_document_text_is_escaped(built_run: Path) -> None:
    html = (built_run / "report.html").read_text()
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()  # the page has no script at all
    # The example sits under its reason, with its id.
    block = re.search(r'<details[^>]*data-reason="select:too_short">(.*?)</details>', html, re.S)
    assert block
    assert "id <code>s0</code>" in block.group(1)
    assert "(3 shown)" in block.group(1)


def test_duplicate_examples_name_the_kept_copy(built_run: Path) -> None:
    html = (built_run / "report.html").read_text()
    block = re.search(r'<details[^>]*data-reason="exact_dedup_v1:duplicate">(.*?)</details>', html, re.S)
    assert block
    assert re.findall(r"id <code>(d\d)</code>.*?duplicate of <code>(n\d)</code>", block.group(1)) == [
        ("d0", "n0"),
        ("d1", "n1"),
        ("d2", "n2"),
    ]


def test_every_goodput_number_equals_goodput_json(built_run: Path, goodput: dict[str, Any]) -> None:
    html_path, md_path = built_run / "report.html", built_run / "report.md"
    found = parse(html_path.read_text()).metrics
    assert check_metrics(found, goodput) == 3 * 15
    # removed from the schema: the T/4-vs-T agreement (un-cooled checkpoints) and the tokens per device-hour
    # derived without finished runs are not shown, though this older file still has them
    assert "decision_agreement" not in found
    assert "Decision agreement" not in html_path.read_text()
    assert "device-h" not in html_path.read_text()
    md = md_path.read_text()
    # The Markdown shows the same rounded numbers.
    for recipe in goodput["recipes"]:
        for key in ("multiplier", "goodput", "effective_tokens", "yield"):
            assert found[f"{recipe}.{key}"][1] in md
    # every number of curated's multiplier lies beyond the baseline's curve (it ends at T, and m > 1)
    assert "| curated | 1.38* (1.34*–1.42*) | 62.0% | 0.85 (0.83–0.88) | 1,705,526 |" in md


def test_null_metrics_render_as_dashes(run_dir: Path, goodput: dict[str, Any]) -> None:
    goodput["recipes"]["strict"]["multiplier"].update(value=None, ci_high=None)
    goodput["recipes"]["strict"]["goodput"] = {"value": None, "ci": [0.2, None]}
    (run_dir / "goodput.json").write_text(json.dumps(goodput))
    found = parse(build_report(run_dir)[0].read_text()).metrics
    check_metrics(found, goodput)
    assert found["strict.multiplier"] == ("null", "—")


def test_no_external_resources(built_run: Path) -> None:
    html = (built_run / "report.html").read_text()
    for bad in (
        'src="http',
        "src='http",
        'href="http',
        "href='http",
        "url(http",
        "@import",
        "<link",
        "<iframe",
    ):
        assert bad not in html, bad
    # The only URLs are the SVG and XLink namespaces, which are names, not fetches.
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }


def test_score_histograms_mark_the_select_thresholds(built_run: Path) -> None:
    d = report_data.load_run(built_run)
    hs = {h.column: h for h in d.histograms}
    assert list(hs) == ["report_test_shape_v1.words", "report_test_shape_v1.upper_frac"]
    words = hs["report_test_shape_v1.words"]
    # 30 kept; the 10 select rejections and the 5 duplicates carry the score too.
    assert (words.n_kept, words.n_rejected, words.n_missing) == (30, 15, 0)
    assert int(words.kept.sum()) == 30
    assert int(words.rejected.sum()) == 15
    assert [(t.kind, t.value, t.stage) for t in words.thresholds] == [("min", 5.0, "select")]
    assert [(t.kind, t.value) for t in hs["report_test_shape_v1.upper_frac"].thresholds] == [("max", 0.5)]
    html = (built_run / "report.html").read_text()
    fig = re.search(r'<figure data-column="report_test_shape_v1.words">(.*?)</figure>', html, re.S)
    assert fig
    assert "<svg" in fig.group(1)
    assert "min 5" in fig.group(1)


def test_report_without_goodput_or_export_says_so(run_dir: Path) -> None:
    (run_dir / "goodput.json").unlink()
    import shutil

    shutil.rmtree(run_dir / "export")
    html_path, md_path = build_report(run_dir)
    html = html_path.read_text()
    assert "data-metric" not in html
    assert "This run has no <code>goodput.json</code>" in html
    assert "No export in this run" in html
    assert (
        "kept 30 of 46 documents (65.2% of documents). No proxy runs (no goodput.json): whether the curation helps "
        "training is not measured."
    ) in html
    assert "No goodput.json" in md_path.read_text()


def test_broken_goodput_is_reported_not_fatal(run_dir: Path) -> None:
    (run_dir / "goodput.json").write_text("{not json")
    html = build_report(run_dir)[0].read_text()
    assert "goodput.json could not be read" in html


def test_export_summary_counts_each_megatron_shard_once(built_run: Path) -> None:
    export = json.loads((built_run / "export" / "manifest.json").read_text())
    html = (built_run / "report.html").read_text()
    total = sum(s["tokens"] for s in export["splits"].values())
    assert re.search(rf"<td class=\"l\">megatron</td><td>4</td><td>[^<]+</td><td>{total:,}</td>", html)
    n = len(export["files"])
    assert f"sha256 recorded for <b>{n}</b> of {n} files" in html
    for split, v in export["splits"].items():
        assert (
            f'<tr data-split="{split}"><td class="l">{split}</td><td>{v["docs"]:,}</td><td>{v["tokens"]:,}</td>'
            in html
        )


def test_rebuild_is_byte_identical(built_run: Path, tmp_path: Path) -> None:
    import shutil

    again = tmp_path / "again"
    shutil.copytree(built_run, again)
    assert build_report(again)[0].read_bytes() == (built_run / "report.html").read_bytes()


def test_examples_read_only_the_row_groups_they_need(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 50 row groups of 100 rows; reason "a" everywhere, reason "b" only in row group 37.
    reasons = ["a"] * 5000
    reasons[3700:3702] = ["b", "b"]
    t = pa.table(
        {
            "id": [f"r{i}" for i in range(5000)],
            "text": ["x" * 50] * 5000,
            "source": ["s"] * 5000,
            "stage": ["st"] * 5000,
            "reason": reasons,
        }
    )
    f = tmp_path / "part-00000.parquet"
    pq.write_table(t, f, row_group_size=100)
    text_reads: list[int] = []
    orig = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: Any, **kw: Any) -> Any:
        for batch in orig(self, *args, **kw):
            if "text" in batch.schema.names:
                text_reads.append(kw["row_groups"][0])
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    ex = report_examples.sample_examples([f], ["a", "b"], per_reason=3)
    assert [e.id for e in ex["a"]] == ["r0", "r1", "r2"]
    assert [e.id for e in ex["b"]] == ["r3700", "r3701"]
    assert text_reads == [0, 37]


def test_histograms_use_stats_or_values_and_count_missing(tmp_path: Path) -> None:
    a = pa.table({"s.x": pa.array([1.0, 2.0, None, float("nan")]), "s.n": pa.array([10, 20, 30, 40])})
    b = pa.table({"s.x": pa.array([9.0, None]), "s.n": pa.array([None, None], pa.int64())})
    pq.write_table(a, tmp_path / "a.parquet")
    pq.write_table(b, tmp_path / "b.parquet", write_statistics=False)  # range must come from the values
    marks = {"s.n": [report_histograms.Threshold("s.n", "max", 50.0, "select")]}
    hs = {
        h.column: h
        for h in report_histograms.histograms(
            [tmp_path / "a.parquet"], [tmp_path / "b.parquet"], ["s.x", "s.n"], marks, bins=4
        )
    }
    x, n = hs["s.x"], hs["s.n"]
    assert (x.edges[0], x.edges[-1], x.n_kept, x.n_rejected, x.n_missing) == (1.0, 9.0, 2, 1, 3)
    assert x.kept.tolist() == [2, 0, 0, 0]
    assert x.rejected.tolist() == [0, 0, 0, 1]
    assert x.mean_kept == 1.5
    # The threshold (50) lies beyond the data (10..40): it is named, and does not widen the range.
    assert (n.edges[0], n.edges[-1], n.kept.tolist(), n.n_missing) == (10.0, 40.0, [1, 1, 1, 1], 2)
    assert [n.inside(t) for t in n.thresholds] == [False]


def test_examples_stream_a_large_row_group_only_up_to_the_last_needed_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reasons = ["a"] * 5000
    reasons[1500] = "b"
    t = pa.table({"id": [f"r{i}" for i in range(5000)], "text": ["y" * 2000] * 5000, "reason": reasons})
    f = tmp_path / "part-00000.parquet"
    pq.write_table(t, f)  # one row group
    rows_read: list[int] = []
    orig = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: Any, **kw: Any) -> Any:
        for batch in orig(self, *args, **kw):
            rows_read.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    ex = report_examples.sample_examples([f], ["a", "b"], per_reason=2, max_chars=10)
    assert [e.id for e in ex["a"]] == ["r0", "r1"]
    assert [e.id for e in ex["b"]] == ["r1500"]
    assert ex["b"][0].text == "y" * 10
    assert ex["b"][0].truncated
    assert rows_read == [1024, 1024]  # rows 0..2047 of 5000
