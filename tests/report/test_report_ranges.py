"""The score tables and histograms tell the data's truth: ranges from the values only (a threshold beyond
them is named, not drawn into the axis), a column of one value shown as such, report.html and report.md
alike."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.io import runfiles
from curate.report import charts
from curate.report import histograms as rh
from curate.report.build import build_report
from curate.report.tables import score_range, score_thresholds


def _hists(tmp_path: Path) -> dict[str, rh.Histogram]:
    kept = pa.table(
        {
            "s.words": pa.array([21, 40, 80], pa.int64()),
            "s.zero": pa.array([0.0, 0.0, 0.0]),
            "s.inf": pa.array([1.0, float("inf"), 5.0]),
        }
    )
    rejected = pa.table(
        {
            "s.words": pa.array([3], pa.int64()),
            "s.zero": pa.array([0.0]),
            "s.inf": pa.array([2.0]),
        }
    )
    pq.write_table(kept, tmp_path / "k.parquet")
    pq.write_table(rejected, tmp_path / "r.parquet")
    marks = {
        "s.words": [
            rh.Threshold("s.words", "min", 21.0, "select"),
            rh.Threshold("s.words", "max", 1e5, "select"),
        ],
        "s.zero": [rh.Threshold("s.zero", "max", 0.5, "select")],
    }
    hs = rh.histograms(
        [tmp_path / "k.parquet"], [tmp_path / "r.parquet"], ["s.words", "s.zero", "s.inf"], marks, bins=4
    )
    return {h.column: h for h in hs}


def _ticks(svg: str) -> list[str]:
    """The x tick labels of a chart (matplotlib's SVG keeps them as text, in groups named xtick_N)."""
    return re.findall(r'<g id="xtick_\d+">.*?<text[^>]*>([^<]*)</text>', svg, re.S)


def test_range_is_the_datas_and_a_threshold_beyond_it_is_named(tmp_path: Path) -> None:
    h = _hists(tmp_path)["s.words"]
    assert (h.lo, h.hi, h.constant) == (3.0, 80.0, False)
    assert h.edges.tolist() == [3.0, 22.25, 41.5, 60.75, 80.0]
    assert (h.kept.tolist(), h.rejected.tolist()) == ([1, 1, 0, 1], [1, 0, 0, 0])
    assert [h.inside(t) for t in h.thresholds] == [True, False]
    assert score_range(h) == "3 … 80"
    assert score_thresholds(h) == "min 21, max 100000 (above every value)"
    assert score_thresholds(h, stage=True) == "min 21 (select), max 100000 (select; above every value)"
    svg = charts.histogram_svg(h)
    assert "max 100000: above every value" in svg  # in the legend
    assert "min 21" in svg  # the dashed line's label
    assert _ticks(svg) == ["0", "10", "20", "30", "40", "50", "60", "70", "80"]  # the axis stops at the data


def test_constant_column_is_one_bar_shown_as_all_its_value(tmp_path: Path) -> None:
    h = _hists(tmp_path)["s.zero"]
    assert (h.lo, h.hi, h.constant) == (0.0, 0.0, True)
    assert h.edges.tolist() == [0.0, 0.0]
    assert (h.kept.tolist(), h.rejected.tolist(), h.n_missing) == ([3], [1], 0)
    assert score_range(h) == "all 0"
    assert score_thresholds(h) == "max 0.5 (above every value)"
    svg = charts.histogram_svg(h)
    assert "s.zero: all 0" in svg
    assert _ticks(svg) == ["0"]  # no made-up -0.5 … 0.5 span


def test_infinite_values_do_not_stretch_the_range(tmp_path: Path) -> None:
    """The statistics hold inf: the finite range is read from the values, and inf counts as missing."""
    h = _hists(tmp_path)["s.inf"]
    assert (h.lo, h.hi, h.n_missing, h.n_kept, h.n_rejected) == (1.0, 5.0, 1, 2, 1)
    assert score_range(h) == "1 … 5"


def _html_row(html: str, column: str) -> list[str]:
    row = re.search(rf'<tr data-column="{re.escape(column)}">(.*?)</tr>', html, re.S)
    assert row, column
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def _md_row(md: str, column: str) -> list[str]:
    lines = [ln for ln in md.splitlines() if ln.startswith(f"| {column} |")]
    assert len(lines) == 1, column
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_html_and_markdown_show_the_same_ranges(run_dir: Path) -> None:
    """On a finished run with a column of zeros added to its kept and rejected parts: each table's range
    is the values' min and max, the zeros read "all 0", and both reports say the same."""
    for f in runfiles.parts(run_dir, "kept") + runfiles.parts(run_dir, "rejected"):
        t = pq.read_table(f)
        pq.write_table(t.append_column("report_test_shape_v1.zero", pa.array([0.0] * t.num_rows)), f)
    words = pa.concat_arrays(
        [
            pq.read_table(f, columns=["report_test_shape_v1.words"]).column(0).combine_chunks()
            for f in runfiles.parts(run_dir, "kept") + runfiles.parts(run_dir, "rejected")
            if "report_test_shape_v1.words" in pq.read_schema(f).names
        ]
    )
    lo, hi = pc.min(words).as_py(), pc.max(words).as_py()
    html_path, md_path = build_report(run_dir)
    html, md = html_path.read_text(), md_path.read_text()
    header = ["column", "kept", "mean (kept)", "rejected", "missing", "range", "thresholds"]
    assert f"| {' | '.join(header)} |" in md
    w_html, w_md = _html_row(html, "report_test_shape_v1.words"), _md_row(md, "report_test_shape_v1.words")
    assert w_html == w_md
    assert w_md[5] == f"{lo} … {hi}"
    assert w_md[6] == "min 5 (select)"
    z_html, z_md = _html_row(html, "report_test_shape_v1.zero"), _md_row(md, "report_test_shape_v1.zero")
    assert z_html == z_md
    assert z_md[5] == "all 0"
    assert "report_test_shape_v1.zero: all 0" in html  # the chart's title
