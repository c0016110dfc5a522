"""The ``rejected`` control: every row a non-quarantine stage rejected. Kept against rejected shows
whether the filters separate teaching data from the rest (it informs; it does not gate the decision)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.proxy.kinds.base import Evidence, Recipe, RunFiles, Settings, register
from curate.proxy.kinds.scores import column_values
from curate.proxy.statistics import analysis

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob


@register
@dataclass
class Rejected(Recipe):
    """rejected/'s non-quarantined rows."""

    KIND = "rejected"
    NOT_FOR_MIXTURES = "a mixture has no rejected rows of its own"
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

    def check(self, ev: Evidence) -> dict[str, Any] | None:
        """Kept (the controlled recipe) against rejected: do the filters carry signal? Informs only."""
        controlled = ev.controlled
        if controlled is None or controlled not in ev.heads:
            return None
        iv = analysis.paired(ev.heads[controlled], ev.heads[self.name])
        ratio = analysis.relative_multiplier(ev.base, float(ev.heads[self.name][:, -1].mean()), iv)
        ratio["method"] = (
            "t_base(R + d) / t_base(R) over the paired interval of d = kept - rejected (R: rejected's bpb)"
        )
        c = analysis.call(iv)
        return {
            "diff_bpb_kept_minus_rejected": iv.as_dict(),
            "call": c,
            "m_kept_over_m_rejected": ratio,
            "epochs_at_T": ev.epochs.get(self.name),
            "message": {
                "better": f"the kept data ({controlled}) teaches more per token than the rejected rows: the filters carry learning signal for these targets",
                "worse": f"the rejected rows teach more per token than the kept data ({controlled}): the filters remove signal these targets need",
                "not_called": "kept and rejected rows are not separated at this budget: no evidence either way that the filters carry signal",
            }[c],
        }
