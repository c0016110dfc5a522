"""The ``report`` phase the runner calls after the pipeline and the proxy runs."""

from __future__ import annotations

from typing import Any

from curate.report.build import build_report_with_headline
from curate.report.options import ReportOptions
from curate.runtime.context import RunContext


def run_phase(ctx: RunContext) -> dict[str, Any]:
    """Build RUN_DIR/report.html and report.md; return ``{"html", "md", "headline"}`` for the manifest.

    ``ctx.section`` is the parsed ``report:`` section (:class:`curate.report.options.ReportOptions`;
    the defaults when the pipeline has none). The paths are relative to the run directory. The phase
    reads the manifest from disk, so a rebuilt report matches what ``curate report RUN_DIR`` writes.
    """
    opts = ReportOptions() if ctx.section is None else ReportOptions.narrow(ctx.section)
    (html_path, md_path), headline = build_report_with_headline(
        ctx.run_dir, examples_per_reason=opts.examples_per_reason, bins=opts.bins
    )
    return {
        "html": str(html_path.relative_to(ctx.run_dir)),
        "md": str(md_path.relative_to(ctx.run_dir)),
        "headline": headline,
    }
