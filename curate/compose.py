"""What the package is made of, said in one place by the root: the packages that hold the built-in
stages, sources and section parsers, and the phases that run after curation, in order.

``curate/__init__.py`` imports this module, so the composition is in force before any other module of the
package runs (Python runs a package's ``__init__`` before any of its modules): a Ray worker that unpickles
a stage, a test that imports ``curate.runtime.runner``, ``curate run``. The floors below are handed what
they need and name no package above them (``tests/test_layers.py``); every arrow drawn here is an
``import`` statement the layer test reads.

Nothing heavy loads here: the packages' ``__init__`` modules are empty (their modules are read by the
registry, not imported: a pipeline of heuristic filters never imports torch), and each phase's module is
imported when the phase runs (the proxy phase's is torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import curate.core
import curate.dedup
import curate.export
import curate.filters
import curate.io
import curate.proxy.spec
import curate.report
import curate.scorers
import curate.targeting
from curate.core.registry import hold_builtins
from curate.runtime.phases import Phase, install

if TYPE_CHECKING:
    from curate.runtime.context import RunContext

# The packages whose public modules register built-ins (``@STAGES.add``, ``@SOURCES.add``,
# ``@SECTIONS.add``): the registry reads them without importing them (curate/core/registry.py).
BUILTIN_PACKAGES = (
    curate.core,  # the select stage
    curate.io,  # the sources
    curate.filters,
    curate.dedup,
    curate.scorers,
    curate.targeting,  # the target: section
    curate.proxy.spec,  # the proxy: section
    curate.export,  # the export: section
    curate.report,  # the report: section
)


def _proxy(ctx: RunContext) -> dict[str, Any]:
    from curate.proxy.phase import run_phase  # torch and the instrument: only for a run with proxy:

    return run_phase(ctx)


def _export(ctx: RunContext) -> dict[str, Any]:
    from curate.export.phase import run_phase

    return run_phase(ctx)


def _report(ctx: RunContext) -> dict[str, Any]:
    from curate.report.phase import run_phase

    return run_phase(ctx)


# The phases after curation, in the order they run: the report last, so it shows what the export wrote;
# every run gets a report (its defaults without a report: section).
PHASES = (
    Phase("proxy", _proxy),
    Phase("export", _export),
    Phase("report", _report, always=True),
)

hold_builtins(*BUILTIN_PACKAGES)
install(PHASES)
