"""Train a fastText classifier from a recipe and write the model plus its manifest.

The manifest (``<model stem>.manifest.json``) records what a reader needs to trust and reproduce the
model: the sha256 of every input file and of the model file, the sampling and fastText parameters, the
seed, and the held-out precision/recall/AUC. ``curate.classify.load_verified`` refuses a model whose
sha256 does not match its manifest.

Determinism: sampling, the held-out split and the example order are pure functions of the seed.
fastText itself trains lock-free ("Hogwild") over ``thread`` threads, so two trainings with the same
seed agree only up to float noise (max |Δp| 1.5e-4 in a 1,000-document probe; a few hundredths on
small, weakly separable sets); the project requires ``thread >= 12`` because fewer threads have produced "Encountered
NaN" failures with this fastText build (we reproduced it: ``thread=1`` on 800 L2R texts raised
"Encountered NaN", while ``thread=1`` on other data was bitwise reproducible). So models are not
bitwise reproducible; tests assert that two trainings with one seed use identical data, split and
order, and agree on predictions within a tolerance.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curate.classify.data import Example, LabelledSource, read_labelled
from curate.classify.model import manifest_path, positive_probability
from curate.io.files import atomic_path, atomic_write_json, sha256_file

log = logging.getLogger(__name__)

MIN_THREADS = 12
DEFAULT_FASTTEXT: dict[str, Any] = {
    "dim": 16,
    "epoch": 5,
    "lr": 0.5,
    "wordNgrams": 2,
    "bucket": 200_000,
    "minCount": 2,
    "loss": "softmax",
    "thread": MIN_THREADS,
}


@dataclass
class ClassifierRecipe:
    """What to train. ``sources`` carry their labels; ``positive_label`` is the class whose probability
    the scorers report. ``holdout`` is the held-out fraction (split by the sources' ``group_field``, e.g.
    ``pair`` so a human text and its machine rewrite never straddle the split). ``fasttext`` overrides
    :data:`DEFAULT_FASTTEXT`. ``quantize`` writes a compressed ``.ftz`` (a few MB at most).
    """

    name: str
    output: str
    positive_label: str
    sources: list[LabelledSource]
    seed: int = 0
    holdout: float = 0.1
    quantize: bool = True
    quantize_cutoff: int = 100_000
    fasttext: dict[str, Any] = field(default_factory=dict)

    def fasttext_params(self) -> dict[str, Any]:
        params = {**DEFAULT_FASTTEXT, **self.fasttext}
        if int(params["thread"]) < MIN_THREADS:
            log.warning(
                "fastText thread=%s raised to %d (fewer threads can fail with 'Encountered NaN')",
                params["thread"],
                MIN_THREADS,
            )
            params["thread"] = MIN_THREADS
        return params


def load_recipe(path: str, **overrides: Any) -> ClassifierRecipe:
    """Read a recipe YAML (see ``models/quality_fasttext.yaml``); ``overrides`` replace top-level keys."""
    import yaml

    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    raw.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(ClassifierRecipe)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(
            f"{path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(known))}"
        )
    src_fields = {f.name for f in dataclasses.fields(LabelledSource)}
    sources = []
    for i, s in enumerate(raw.get("sources") or []):
        bad = sorted(set(s) - src_fields)
        if bad:
            raise ValueError(
                f"{path}: sources[{i}]: unknown key(s) {', '.join(bad)}; "
                f"valid keys: {', '.join(sorted(src_fields))}"
            )
        sources.append(LabelledSource(**s))
    if not sources:
        raise ValueError(f"{path}: 'sources' is empty; give at least one positive and one negative source")
    raw["sources"] = sources
    return ClassifierRecipe(**raw)


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties). NaN with one class only."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), dtype=np.float64)
    # Average ranks over runs of equal scores.
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    avg = (starts + ends + 1) / 2.0  # 1-based average rank of each run
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def binary_metrics(prob: np.ndarray, is_pos: np.ndarray, threshold: float = 0.5) -> dict[str, float]:
    """Precision, recall, F1, accuracy at ``threshold`` and the AUC of ``prob`` for the positive class."""
    pred = prob >= threshold
    tp = int((pred & is_pos).sum())
    fp = int((pred & ~is_pos).sum())
    fn = int((~pred & is_pos).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "threshold": threshold,
        "precision": round(precision, 6),
        "recall": round(recall, 6),
        "f1": round(f1, 6),
        "accuracy": round(float((pred == is_pos).mean()), 6),
        "auc": round(roc_auc(prob, is_pos), 6),
    }


def _in_holdout(seed: int, group: str, fraction: float) -> bool:
    h = int.from_bytes(hashlib.blake2b(f"holdout:{seed}:{group}".encode(), digest_size=8).digest(), "little")
    return h / 2**64 < fraction


def _order_key(seed: int, ex: Example, i: int) -> bytes:
    return hashlib.blake2b(f"order:{seed}:{i}:{ex.group}".encode(), digest_size=8).digest()


def _examples(recipe: ClassifierRecipe) -> tuple[list[Example], list[dict[str, Any]], list[str]]:
    """Every source's labelled examples, a record per source for the manifest, and the sorted labels;
    refuses a recipe without its positive label and at least one other."""
    examples: list[Example] = []
    source_records = []
    for src in recipe.sources:
        got, fps = read_labelled(src, seed=recipe.seed)
        log.info("%s: %d examples from %d file(s) matching %s", src.label, len(got), len(fps), src.path)
        examples.extend(got)
        source_records.append({**dataclasses.asdict(src), "files": fps, "examples": len(got)})
    labels = sorted({e.label for e in examples})
    if recipe.positive_label not in labels or len(labels) < 2:
        raise ValueError(
            f"recipe {recipe.name!r}: need examples of {recipe.positive_label!r} and at least one "
            f"other label; got labels {labels}"
        )
    return examples, source_records, labels


def _fit(recipe: ClassifierRecipe, train: list[Example], params: dict[str, Any]) -> tuple[Any, str]:
    """Train fastText on ``train`` in the recipe's seeded order (quantized when asked); returns the model
    and the sha256 of the training file, which is what the recipe controls: the examples and their order."""
    import fasttext

    order = sorted(range(len(train)), key=lambda i: _order_key(recipe.seed, train[i], i))
    with tempfile.TemporaryDirectory(prefix="curate-ft-") as tmp:
        train_file = os.path.join(tmp, "train.txt")
        with open(train_file, "w", encoding="utf-8") as f:
            for i in order:
                f.write(f"__label__{train[i].label} {train[i].text}\n")
        train_sha256 = sha256_file(train_file)
        model = fasttext.train_supervised(input=train_file, seed=recipe.seed, verbose=0, **params)
        if recipe.quantize:
            model.quantize(input=train_file, qnorm=True, retrain=False, cutoff=recipe.quantize_cutoff)
    return model, train_sha256


def _holdout(model: Any, test: list[Example], positive: str) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Held-out metrics and score percentiles (0..100) of the negatives and of all (empty without a test split)."""
    if not test:
        return {}, {}
    prob = positive_probability(model, [e.text for e in test], positive)
    is_pos = np.array([e.label == positive for e in test])
    qs = np.linspace(0, 1, 101)
    quantiles = {
        "holdout_negative": [round(float(x), 6) for x in np.quantile(prob[~is_pos], qs)],
        "holdout_all": [round(float(x), 6) for x in np.quantile(prob, qs)],
    }
    return binary_metrics(prob, is_pos), quantiles


def train_classifier(recipe: ClassifierRecipe, *, output: str | None = None) -> dict[str, Any]:
    """Train, evaluate on the held-out split, write the model and its manifest; return the manifest."""
    import fasttext

    out = Path(output or recipe.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    examples, source_records, labels = _examples(recipe)
    hold = [_in_holdout(recipe.seed, e.group, recipe.holdout) for e in examples]
    train = [e for e, h in zip(examples, hold, strict=True) if not h]
    test = [e for e, h in zip(examples, hold, strict=True) if h]
    params = recipe.fasttext_params()
    model, train_sha256 = _fit(recipe, train, params)
    with atomic_path(out) as tmp:
        model.save_model(str(tmp))
    metrics, quantiles = _holdout(model, test, recipe.positive_label)
    count = lambda rows: {lab: sum(e.label == lab for e in rows) for lab in labels}  # noqa: E731
    manifest = {
        "name": recipe.name,
        "model_file": out.name,
        "model_sha256": sha256_file(str(out)),
        "model_bytes": out.stat().st_size,
        "created_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "positive_label": recipe.positive_label,
        "labels": labels,
        "seed": recipe.seed,
        "holdout_fraction": recipe.holdout,
        "quantized": recipe.quantize,
        "fasttext_params": params,
        "fasttext_version": getattr(fasttext, "__version__", "unknown"),
        "preprocessing": "utf8 lowercase; \\n replaced by a space",
        "sources": source_records,
        "counts": {"train": count(train), "holdout": count(test)},
        "train_file_sha256": train_sha256,
        "holdout_metrics": metrics,
        "score_quantiles": quantiles,
    }
    atomic_write_json(manifest_path(str(out)), manifest, indent=2, end="\n")
    log.info("wrote %s (%d bytes), held-out %s", out, manifest["model_bytes"], metrics)
    return manifest
