"""report.html in headless Chromium: it renders with no console messages, the goodput numbers in the
rendered DOM equal goodput.json, and a screenshot is saved as RUN_DIR/report.png.

Uses the Chromium command line only (``--dump-dom``, ``--screenshot``, console messages through
``--enable-logging=stderr``); skipped, with the reason, where no Chromium binary is installed
(``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.report.report_html import check_metrics, parse

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no headless browser found (looked for {', '.join(BROWSERS)}); `apt-get install chromium`")


def run_chromium(page: Path, profile: Path, *args: str) -> tuple[str, list[str]]:
    """Load ``page``; return stdout and the console messages Chromium logged."""
    cmd = [
        browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
        page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def test_console_messages_are_detected(tmp_path: Path) -> None:
    # The check below is only worth something if a page that does log is caught.
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); missingFn();</script></body></html>")
    _, console = run_chromium(page, tmp_path / "profile", "--dump-dom")
    assert len(console) == 2
    assert "boom" in console[0]
    assert "missingFn" in console[1]


def test_report_renders_in_chromium(built_run: Path, goodput: dict[str, Any], tmp_path: Path) -> None:
    page = built_run / "report.html"
    dom, console = run_chromium(page, tmp_path / "profile", "--dump-dom")
    assert console == []
    rendered = parse(dom)
    assert check_metrics(rendered.metrics, goodput) == 3 * 15
    assert rendered.cells[("exact_dedup_v1", "docs_out")] == "30"
    # Forest plot, loss curves, funnel, two histograms: all five figures survive parsing.
    assert dom.count("<svg") == page.read_text().count("<svg") == 5
    shot = built_run / "report.png"
    _, console = run_chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,3200")
    assert console == []
    assert png_size(shot) == (1280, 3200)
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    # Not a blank page: plenty of non-white pixels (text, tables, charts).
    assert (pixels[..., :3].min(axis=2) < 0.5).mean() > 0.01


# Measures the laid-out page in the browser and writes the result into the DOM for --dump-dom to return:
# where the card and the forest plot end, each table's overflow of its container, and every pair of axis
# tick labels of one chart whose boxes overlap.
MEASURE = """<script>
(function () {
  const bottom = (id) => { const e = document.getElementById(id); return e ? e.getBoundingClientRect().bottom : null; };
  const tables = [...document.querySelectorAll("table")].map((t) => {
    const p = t.parentElement, tr = t.getBoundingClientRect(), pr = p.getBoundingClientRect();
    return {id: t.id, overflow: Math.max(tr.right - pr.right, p.scrollWidth - p.clientWidth)};
  });
  const overlaps = [];
  let labels = 0;
  document.querySelectorAll("svg").forEach((svg, k) => {
    const ts = [...svg.querySelectorAll('g[id^="xtick_"] text, g[id^="ytick_"] text')]
      .map((t) => ({text: t.textContent, r: t.getBoundingClientRect()}))
      .filter((t) => t.r.width > 0 && t.text.trim());
    labels += ts.length;
    for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++) {
      const a = ts[i].r, b = ts[j].r;
      if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
        overlaps.push([k, ts[i].text, ts[j].text]);
    }
  });
  const out = {card: bottom("card"), forest: bottom("forest"), tables, overlaps, labels,
               page: document.documentElement.scrollWidth};
  const pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def measure(page: Path, tmp_path: Path) -> dict[str, Any]:
    import json
    import re

    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom, console = run_chromium(probe, tmp_path / "profile", "--dump-dom", "--window-size=1400,900")
    assert console == []
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_the_measure_catches_overflow_and_colliding_labels(tmp_path: Path) -> None:
    # The checks below are only worth something if a wide table and two overlapping tick labels are caught.
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body><div style="width:300px"><table id="wide"><tr><td>'
        + "x" * 200
        + '</td></tr></table></div><svg width="200" height="50"><g id="xtick_1"><text x="10" y="20">36.9k'
        '</text></g><g id="xtick_2"><text x="20" y="20">61.2k</text></g></svg></body></html>'
    )
    m = measure(page, tmp_path)
    assert [t["id"] for t in m["tables"] if t["overflow"] > 1] == ["wide"]
    assert m["overlaps"] == [[0, "36.9k", "61.2k"]]


@pytest.mark.parametrize("fixture", ["built_run", "built_run_v2", "built_run_wide"])
def test_card_and_forest_fit_the_first_screen_and_nothing_collides(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run = request.getfixturevalue(fixture)
    m = measure(run / "report.html", tmp_path)
    assert m["card"] is not None
    assert m["forest"] is not None
    assert max(m["card"], m["forest"]) <= 900  # card and forest plot on a 1,400 x 900 screen
    assert m["page"] <= 1400  # nothing makes the page scroll sideways
    assert [t for t in m["tables"] if t["overflow"] > 1] == []
    assert m["labels"] > 10  # the tick labels were found (forest, ladder, loss curves, histograms)
    assert m["overlaps"] == []
