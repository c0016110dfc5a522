"""``target_classifier_v1``: a DCLM-style fastText classifier of *target* vs *raw* text.

Fitting is ``curate train-classifier`` (:func:`curate.classify.train_classifier`) on a generated recipe:
the pipeline's target sample as positives (label ``target``), the raw-input sample as negatives (label
``raw``), a held-out split and the usual manifest (sha256 of the inputs and of the model, held-out
AUC). Scoring is the ``fasttext_quality_v1`` path (:class:`~curate.scorers.fasttext_quality.
FastTextScorer`): column ``target_classifier_v1.target_prob``, the probability of ``target``.

With ``params.model`` set (e.g. a model trained by hand with ``curate train-classifier --positive
TARGET --negative RAW --positive-label target``), that model is used and nothing is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.core.registry import STAGES, bounds
from curate.scorers.fasttext_quality import FastTextParams, FastTextScorer, resolve_model_path
from curate.targeting.fitted import TargetFitted, TargetSample


@dataclass
class TargetClassifierParams(FastTextParams):
    """As ``fasttext_quality_v1``'s params; ``model`` empty = fitted to the pipeline's ``target:``.
    Fitting: ``holdout`` (held-out fraction), ``fasttext`` (overrides of
    :data:`curate.classify.train.DEFAULT_FASTTEXT`; ``thread`` stays >= 12), ``quantize`` (write a
    compressed ``.ftz``: needs more text than a small target sample has; default a full ``.bin``)."""

    model: str = ""
    holdout: float = field(default=0.1, metadata=bounds(0, 1))
    fasttext: dict[str, Any] = field(default_factory=dict)
    quantize: bool = False


@STAGES.add("target_classifier_v1")
class TargetClassifier(TargetFitted, FastTextScorer):
    """Probability that a document is target-like rather than raw (``target_prob``)."""

    Params = TargetClassifierParams
    field = "target_prob"
    check = "not_target_like"

    def fit_key(self) -> dict[str, Any]:
        p = self.params
        return {"holdout": p.holdout, "fasttext": p.fasttext, "quantize": p.quantize}

    def fit(self, sample: TargetSample, out_dir: Path) -> str:
        from curate.classify import ClassifierRecipe, LabelledSource, train_classifier

        p = self.params
        recipe = ClassifierRecipe(
            name=f"{self.label}_target_vs_raw",
            output=str(out_dir / ("model.ftz" if p.quantize else "model.bin")),
            positive_label="target",
            sources=[
                LabelledSource(label="target", path=sample.target_jsonl),
                LabelledSource(label="raw", path=sample.raw_jsonl),
            ],
            seed=sample.seed,
            holdout=p.holdout,
            quantize=p.quantize,
            fasttext=dict(p.fasttext),
        )
        train_classifier(recipe)
        return recipe.output

    def use_model(self, path: str) -> None:
        super().use_model(path)
        self.model_path = resolve_model_path(path)

    def setup(self) -> None:
        if not self.params.model:
            raise ValueError(f"{self.label}: no model; set params.model or add a target: section")
        super().setup()
