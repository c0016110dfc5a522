"""``curate report RUN_DIR``: (re)build a finished run's report.html and report.md."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from curate.core.errors import PhaseError

EXAMPLE = """example:
  curate report runs/demo
  curate report runs/demo --examples-per-reason 5 --bins 60

Reads RUN_DIR/manifest.json, kept/ and rejected/, and goodput.json and export/manifest.json when
present; writes RUN_DIR/report.html (one self-contained file: open it in any browser, offline) and
RUN_DIR/report.md (the same numbers, for terminals and pull requests), then prints the verdict.
"""


def register(subparsers: Any) -> None:
    """Add the ``report`` verb to the main CLI's subparsers."""
    p = subparsers.add_parser(
        "report",
        help="build report.html and report.md for a finished run",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished run directory (with manifest.json), or its URL"
    )
    p.add_argument(
        "--examples-per-reason",
        type=int,
        help="rejected documents shown per removal reason (default: the run's report: section, else 3)",
    )
    p.add_argument(
        "--bins",
        type=int,
        help="histogram bins per score column (default: the run's report: section, else 40)",
    )
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    """Build the report; print its paths and the verdict. Exit 0 on success, 2 on a usage/data error."""
    from curate.report.build import build_report_with_headline

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    run_dir = Path(args.run_dir)
    if not (run_dir / "manifest.json").is_file():
        raise PhaseError(f"{run_dir}: no manifest.json; is it a finished run directory?")
    # options not given come from the run's report: section (a PhaseError names a bad value)
    (html_path, md_path), headline = build_report_with_headline(
        run_dir, examples_per_reason=args.examples_per_reason, bins=args.bins
    )
    print(headline)
    print(f"report: {html_path}")
    print(f"        {md_path}")
    return 0
