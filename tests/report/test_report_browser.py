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
    assert check_metrics(rendered.metrics, goodput) == 3 * 16
    assert rendered.cells[("exact_dedup_v1", "docs_out")] == "30"
    # Loss curves, funnel, two histograms: all four figures survive parsing.
    assert dom.count("<svg") == page.read_text().count("<svg") == 4
    shot = built_run / "report.png"
    _, console = run_chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,3200")
    assert console == []
    assert png_size(shot) == (1280, 3200)
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    # Not a blank page: plenty of non-white pixels (text, tables, charts).
    assert (pixels[..., :3].min(axis=2) < 0.5).mean() > 0.01
