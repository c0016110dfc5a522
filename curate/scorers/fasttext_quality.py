"""fastText classifier scorers: ``fasttext_quality_v1`` (DCLM-style quality) and the shared base.

The model loads once per worker in ``setup()``, after its sha256 is checked against its manifest (or
the ``sha256`` param). Scoring is one batched ``predict`` per Arrow batch on text preprocessed in Arrow
(lowercase, line breaks to spaces), exactly as in training.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Resources, Scorer
from curate.io.paths import resolve_str


def resolve_model_path(path: str) -> str:
    """An absolute model path, resolved on the driver so that workers (any cwd) find the same file, by
    the one rule for paths (:func:`curate.io.paths.resolve_str`: the working directory, then the
    repository root, where the default ``models/`` live; a pipeline's ``params.model`` arrives already
    resolved at load, against its folder too). An object store's URL is returned as it is (fetched by
    each worker)."""
    return resolve_str(path)


@dataclass
class FastTextParams:
    """``model``: a fastText model trained by ``curate train-classifier`` (its manifest sits next to it).
    ``sha256``: pin the model file instead of (or on top of) its manifest. ``positive_label``: the class
    whose probability is reported (default: the manifest's). Reference threshold for ``filter:``, one of:
    ``min_prob`` (absolute) or ``keep_top_percent`` (keep the top N% by score; the threshold is the
    matching quantile of the manifest's held-out reference sample, see ``reference_rules``).
    """

    model: str = "models/quality_fasttext.ftz"
    sha256: str | None = None
    positive_label: str | None = None
    min_prob: float | None = field(default=None, metadata=bounds(0, 1))
    keep_top_percent: float | None = field(default=None, metadata=bounds(0, 100, lo_open=True))


class FastTextScorer(Scorer):
    """Base of fastText classifier scorers: one probability column ``<label>.<field>``."""

    Params = FastTextParams
    field: ClassVar[str] = "prob"
    check: ClassVar[str] = "low_prob"
    # Reference sample used for keep_top_percent (see the manifest's score_quantiles).
    quantile_set: ClassVar[str] = "holdout_negative"
    resources = Resources(num_cpus=1.0)
    _unpicklable = ("_model",)

    def __init__(self, params: Any = None, *, label: str | None = None) -> None:
        super().__init__(params, label=label)
        p = self.params
        if p.min_prob is not None and p.keep_top_percent is not None:
            raise ValueError(f"{self.label}: give min_prob or keep_top_percent, not both")
        if p.keep_top_percent is not None and not 0 < p.keep_top_percent <= 100:
            raise ValueError(f"{self.label}: keep_top_percent must be in (0, 100], got {p.keep_top_percent}")
        self._model: Any = None
        self._manifest: dict[str, Any] = {}
        self.model_path = resolve_model_path(p.model)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Loaded resources were dropped by __getstate__; setup() reloads them on the worker.
        self.__dict__.update(state)
        self.__dict__.setdefault("_model", None)

    def setup(self) -> None:
        from curate.classify import load_verified
        from curate.io.storage import local_copy

        stem = self.model_path.rsplit(".", 1)[0]  # its manifest: models/x.ftz -> models/x.manifest.json
        path = local_copy(self.model_path, also=(stem + ".manifest.json",))
        self._model, self._manifest = load_verified(path, sha256=self.params.sha256)
        positive = self.params.positive_label or self._manifest.get("positive_label")
        self._positive: str = str(positive or "")
        if not positive:
            raise ValueError(
                f"{self.label}: set positive_label (the model {self.params.model} has no manifest)"
            )

    def output_fields(self) -> list[str]:
        return [self.field]

    def score(self, table: pa.Table) -> dict[str, Any]:
        from curate.classify import fasttext_text, positive_probability

        self.ensure_setup()
        texts = fasttext_text(table.column(schema.TEXT)).to_pylist()
        prob = positive_probability(self._model, texts, self._positive)
        return {self.field: pa.array(prob.astype(np.float32), pa.float32())}

    def threshold(self) -> float | None:
        """The absolute reference threshold (``keep_top_percent`` resolved through the manifest)."""
        p = self.params
        if p.min_prob is not None:
            return p.min_prob
        if p.keep_top_percent is None:
            return None
        from curate.classify.model import read_manifest

        manifest = self._manifest or read_manifest(self.model_path)
        quantiles = manifest.get("score_quantiles", {}).get(self.quantile_set)
        if not quantiles:
            raise ValueError(
                f"{self.label}: {p.model}'s manifest has no {self.quantile_set} quantiles; "
                f"use min_prob, or compute a threshold from stored scores with "
                f"curate.classify.threshold_for_top_percent"
            )
        # quantiles[i] is the i-th percentile; keeping the top N% means P >= the (100-N)-th percentile.
        return float(np.interp(100 - p.keep_top_percent, np.arange(len(quantiles)), quantiles))

    def reference_rules(self) -> list[Rule]:
        t = self.threshold()
        if t is None:
            return []
        return [Rule(column=schema.column_name(self.label, self.field), min=t, reason=self.check)]


@STAGES.add("fasttext_quality_v1")
class FastTextQuality(FastTextScorer):
    """Probability that a document looks like the reference-quality text the classifier was trained on
    (``fasttext_quality_v1.hq_prob``). Default model: ``models/quality_fasttext.ftz`` (DCLM-style:
    Wikipedia, Python docs and Gutenberg vs random raw web). ``keep_top_percent`` resolves through the
    score quantiles of the held-out *raw web* sample recorded in the manifest, a proxy for a web corpus;
    for the exact percentile of your corpus, score it once and use
    ``curate.classify.threshold_for_top_percent("RUN/kept/*.parquet", "fasttext_quality_v1.hq_prob", 10)``
    as ``min`` of a ``select`` rule (no model runs again).
    """

    field = "hq_prob"
    check = "low_quality"
