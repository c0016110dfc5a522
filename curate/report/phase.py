"""The ``report`` phase the runner calls after the pipeline and the proxy runs."""

from __future__ import annotations

from typing import Any

from curate.core.errors import PhaseError
from curate.report.build import build_report_with_headline
from curate.runtime.context import RunContext

KEYS = {"examples_per_reason": int, "bins": int}


def options(section: dict[str, Any] | None) -> dict[str, int]:
    """Validate the ``report:`` section (may be empty or None). Example::

    report:
      examples_per_reason: 3   # rejected documents shown per removal reason
      bins: 40                 # histogram bins per score column
    """
    section = section or {}
    if not isinstance(section, dict):
        raise PhaseError(f"report: expected a mapping, got {type(section).__name__}")
    unknown = sorted(set(section) - set(KEYS))
    if unknown:
        raise PhaseError(
            f"report: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(KEYS))}"
        )
    out = {}
    for k, v in section.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PhaseError(f"report.{k}: expected a positive integer, got {v!r}")
        out[k] = v
    return out


def run_phase(ctx: RunContext) -> dict[str, Any]:
    """Build RUN_DIR/report.html and report.md; return ``{"html", "md", "headline"}`` for the manifest.

    The paths are relative to the run directory. The phase reads the manifest from disk, so a rebuilt
    report matches what ``curate report RUN_DIR`` writes.
    """
    opts = options(ctx.section)
    (html_path, md_path), headline = build_report_with_headline(
        ctx.run_dir, examples_per_reason=opts.get("examples_per_reason", 3), bins=opts.get("bins", 40)
    )
    return {
        "html": str(html_path.relative_to(ctx.run_dir)),
        "md": str(md_path.relative_to(ctx.run_dir)),
        "headline": headline,
    }
