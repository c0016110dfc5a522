"""The ``rejected`` control: every row a non-quarantine stage rejected. Kept against rejected shows
whether the filters separate teaching data from the rest (it informs; it does not gate the decision)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register
from curate.proxy.kinds.scores import column_values

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob


@register
@dataclass
class Rejected(Recipe):
    """rejected/'s non-quarantined rows."""

    KIND = "rejected"
    ROLE = "control"
    ORDER = 1

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        from curate.instrument.shards import ShardJob

        return [
            ShardJob(src=str(f), out=str(out / f"rejected-{i:05d}"), rejected=True, **common)
            for i, f in enumerate(files.rejected)
        ]

    def scores(self, files: RunFiles, column: str) -> np.ndarray:
        """The values of score ``column`` over the rows it trains on."""
        return column_values(files.kept, files.rejected, column, stages=["*"], with_kept=False)

    def skip_reason(self, data: dict[str, dict[str, Any]], min_tokens: int) -> str | None:
        tokens = data[self.name]["tokens"]
        return f"only {tokens} tokens of rejected (non-quarantine) data" if tokens <= min_tokens else None
