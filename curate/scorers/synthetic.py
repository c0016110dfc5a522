"""``machine_text_v1``: a light fastText detector of machine-written text.

Trained with ``curate train-classifier models/machine_text_fasttext.yaml`` on the human/machine pairs
of ``../shared/corpora/synthetic`` (L2R rewrites by four chat models, Fast-DetectGPT continuations by
eight generators). Its score is a *style* signal, not proof of authorship: see
``benchmarks/RESULTS-scorers.md`` for its AUC on generator families it never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.select import Rule
from curate.scorers.fasttext_quality import FastTextParams, FastTextScorer


@dataclass
class MachineTextParams(FastTextParams):
    """As ``fasttext_quality_v1``'s params, with the detector as the default model. ``max_prob``:
    reject texts whose machine probability exceeds it (the ``filter:`` reference threshold)."""

    model: str = "models/machine_text_fasttext.ftz"
    max_prob: float | None = None


@STAGES.add("machine_text_v1")
class MachineText(FastTextScorer):
    """Probability that a text is machine-generated (``machine_text_v1.machine_prob``)."""

    Params = MachineTextParams
    field = "machine_prob"
    check = "machine_text"

    def reference_rules(self) -> list[Rule]:
        p: MachineTextParams = self.params
        if p.max_prob is not None:
            return [
                Rule(column=schema.column_name(self.label, self.field), max=p.max_prob, reason=self.check)
            ]
        # min_prob / keep_top_percent keep the *most* machine-like texts (e.g. to audit a synthetic set).
        return super().reference_rules()
