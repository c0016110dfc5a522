"""curate: turn raw text corpora into training data and measure the data goodput it buys.

The Python API (see the README's "Python" section)::

    import curate
    curate.run("pipelines/web.yaml", output="runs/web", set={"stages.0.params.form": "NFKC"})
    curate.filter(["some text", "more text"], "gopher_quality_v1")   # a table: keep, reason, scores
"""

from curate import compose  # noqa: F401  (the packages of built-ins and the phases: curate/compose.py)
from curate.api import filter, run
from curate.runtime.versions import __version__

__all__ = ["__version__", "filter", "run"]
