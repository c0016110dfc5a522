"""The pipeline's ``report:`` section (:class:`ReportOptions`), validated.

Its parser is registered as the ``report`` section (:data:`curate.core.registry.SECTIONS`), so a pipeline
checks it at load without importing the report's modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curate.core.errors import PhaseError
from curate.core.registry import SECTIONS
from curate.pipeline.keys import located_phase_error

KEYS = {"examples_per_reason": int, "bins": int}


@dataclass(frozen=True)
class ReportOptions:
    """How the report is built: rejected documents shown per removal reason, histogram bins per score
    column."""

    examples_per_reason: int = 3
    bins: int = 40


def options(section: dict[str, Any] | None) -> ReportOptions:
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
    for k, v in section.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PhaseError(f"report.{k}: expected a positive integer, got {v!r}")
    return ReportOptions(**section)


@SECTIONS.add("report")
def parse_section(section: Any, err: Any = None, path: str | None = None) -> ReportOptions:
    """The registered parser of the ``report:`` section. At pipeline load (``err``: the located error of
    :func:`curate.pipeline.keys.located`) an error names the key's file and line (or its ``--set``);
    without it (a verb on a finished run) it raises the ``PhaseError`` of :func:`options`."""
    if err is None:
        return options(section)
    try:
        return options(section)
    except PhaseError as e:
        raise located_phase_error(e, "report", err) from None
