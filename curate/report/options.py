"""The pipeline's ``report:`` section (:class:`ReportOptions`), typed and checked by the machinery of stage
parameters (:mod:`curate.core.params`).

Its class is registered as the ``report`` section (:data:`curate.core.registry.SECTIONS`), so a pipeline
checks it at load without importing the report's modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from curate.core.params import Section, bounds
from curate.core.registry import SECTIONS


@SECTIONS.add("report")
@dataclass(frozen=True)
class ReportOptions(Section):
    """How the report is built. Example::

    report:
      examples_per_reason: 3   # rejected documents shown per removal reason
      bins: 40                 # histogram bins per score column
    """

    examples_per_reason: int = field(default=3, metadata=bounds(1))
    bins: int = field(default=40, metadata=bounds(1))


def options(section: dict[str, Any] | None) -> ReportOptions:
    """The ``report:`` section (may be empty or None) as :class:`ReportOptions`; an error is a
    :class:`curate.core.params.SectionError` naming the key (``report.bins: ...``)."""
    return ReportOptions.parse(section)
