"""Build ``report.html`` and ``report.md`` for a finished run directory."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

from curate.io.files import atomic_write_text
from curate.report.card import card_lines
from curate.report.data import load_run
from curate.report.html import render_html
from curate.report.markdown import render_markdown
from curate.report.options import ReportOptions, options
from curate.report.verdict import verdict

log = logging.getLogger(__name__)

HTML = "report.html"
MD = "report.md"


def build_report(
    run_dir: str | Path, *, examples_per_reason: int | None = None, bins: int | None = None
) -> tuple[Path, Path]:
    """Write ``RUN_DIR/report.html`` (self-contained) and ``RUN_DIR/report.md``; return their paths.

    Reads ``manifest.json`` (required), ``kept/`` and ``rejected/`` parts, ``goodput.json`` and
    ``export/manifest.json`` (both optional: the report says when they are absent). ``examples_per_reason``
    and ``bins`` not given come from the run's ``report:`` section, then the defaults.
    """
    paths, _ = build_report_with_headline(run_dir, examples_per_reason=examples_per_reason, bins=bins)
    return paths


def run_options(manifest: dict[str, Any], **given: int | None) -> ReportOptions:
    """The report's options: those ``given`` (not None), else the run's own ``report:`` section (as its
    manifest recorded it), else the defaults; validated by the section's registered parser."""
    config = manifest.get("config") or {}
    section = dict(config.get("report") or {}) if isinstance(config, dict) else {}
    section.update({k: v for k, v in given.items() if v is not None})
    return options(section)


def build_report_with_headline(
    run_dir: str | Path, *, examples_per_reason: int | None = None, bins: int | None = None
) -> tuple[tuple[Path, Path], str]:
    """:func:`build_report`, also returning the verdict card (its lines joined by newlines), which opens
    the report and the terminal summary.

    Both pages are rendered before either is written, and each is replaced atomically: a failure while
    building leaves the previous report.html and report.md byte-identical."""
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    opts = run_options(manifest, examples_per_reason=examples_per_reason, bins=bins)
    data = load_run(run_dir, per_reason=opts.examples_per_reason, bins=opts.bins)
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
    markdown = render_markdown(data, headline)
    atomic_write_text(html_path, page)
    atomic_write_text(md_path, markdown)
    log.info("report: %s", html_path)
    return (html_path, md_path), card
