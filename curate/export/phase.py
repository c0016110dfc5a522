"""The ``export`` phase, run after the pipeline and the proxy runs and before the report, which shows
what the export wrote (:data:`curate.compose.PHASES`)."""

from __future__ import annotations

from typing import Any

from curate.export.exporter import export_run
from curate.export.options import ExportOptions
from curate.runtime.context import RunContext


def run_phase(ctx: RunContext) -> dict[str, Any]:
    """Export with ``ctx.section`` (the pipeline's ``export:`` section, parsed at load into
    :class:`~curate.export.options.ExportOptions`), return the run-manifest record.

    Example section::

        export:
          formats: [parquet, megatron, memmap]   # add hf_disk for a save_to_disk folder
          tokenizer: gpt2          # required by megatron/memmap: a tokenizer.json, gpt2 or proxy
          shard_tokens: 100000000
          val_fraction: 0.01
          seed: 0

    A rerun with the same inputs and options finds the finished export and returns its record with
    ``resumed: true``.
    """
    opts = ExportOptions.narrow(ctx.section)
    return export_run(ctx, opts)
