"""What the package is made of, said in one place by the root: the packages that hold the built-in
stages, sources and section parsers.

``curate/__init__.py`` imports this module, so the composition is in force before any other module of the
package runs (Python runs a package's ``__init__`` before any of its modules): a Ray worker that unpickles
a stage, a test that imports ``curate.runtime.runner``, ``curate run``. The floors below are handed what
they need and name no package above them (``tests/test_layers.py``); every arrow drawn here is an
``import`` statement the layer test reads.

Nothing heavy loads here: the packages' ``__init__`` modules are empty (their modules are read by the
registry, not imported: a pipeline of heuristic filters never imports torch).
"""

from __future__ import annotations

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


hold_builtins(*BUILTIN_PACKAGES)
