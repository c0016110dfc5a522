"""Build ``report.html`` and ``report.md`` for a finished run directory."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from curate.io.files import atomic_write_text
from curate.report.card import card_lines
from curate.report.data import load_run
from curate.report.html import render_html
from curate.report.markdown import render_markdown
from curate.report.verdict import verdict

log = logging.getLogger(__name__)

HTML = "report.html"
MD = "report.md"


def build_report(run_dir: str | Path, *, examples_per_reason: int = 3, bins: int = 40) -> tuple[Path, Path]:
    """Write ``RUN_DIR/report.html`` (self-contained) and ``RUN_DIR/report.md``; return their paths.

    Reads ``manifest.json`` (required), ``kept/`` and ``rejected/`` parts, ``goodput.json`` and
    ``export/manifest.json`` (both optional: the report says when they are absent).
    """
    paths, _ = build_report_with_headline(run_dir, examples_per_reason=examples_per_reason, bins=bins)
    return paths


def build_report_with_headline(
    run_dir: str | Path, *, examples_per_reason: int = 3, bins: int = 40
) -> tuple[tuple[Path, Path], str]:
    """:func:`build_report`, also returning the verdict card (its lines joined by newlines), which opens
    the report and the terminal summary."""
    run_dir = Path(run_dir)
    data = load_run(run_dir, per_reason=examples_per_reason, bins=bins)
    headline = verdict(data.manifest, data.goodput)  # the verdict in full, under the card
    card = "\n".join(card_lines(data.manifest, data.goodput))
    html_path, md_path = run_dir / HTML, run_dir / MD
    # A chart library's warning (matplotlib on a degenerate axis) is no message for the user of the
    # report: it goes to the log, and the terminal shows only the report's own lines.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = render_html(data, headline)
    for w in caught:
        log.debug("report charts: %s: %s", w.category.__name__, w.message)
    atomic_write_text(html_path, page)
    atomic_write_text(md_path, render_markdown(data, headline))
    log.info("report: %s", html_path)
    return (html_path, md_path), card
