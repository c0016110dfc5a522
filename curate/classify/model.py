"""Load a fastText classifier safely and turn its predictions into a positive-class probability."""

from __future__ import annotations

import glob
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from curate.io.files import sha256_file
from curate.io.integrity import ModelIntegrityError

log = logging.getLogger(__name__)


FASTTEXT_EPS = 1e-5  # fastText's smoothing inside log() at prediction time


def manifest_path(model_path: str) -> str:
    """The manifest next to a model: ``models/quality_fasttext.ftz`` -> ``models/quality_fasttext.manifest.json``."""
    return str(Path(model_path).with_suffix(".manifest.json"))


def read_manifest(model_path: str) -> dict[str, Any]:
    p = manifest_path(model_path)
    try:
        with open(p, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ModelIntegrityError(
            f"{model_path}: no manifest {p} to verify the model against; train it with "
            f"`curate train-classifier` or pass the expected sha256 in the stage params"
        ) from None


def load_verified(model_path: str, *, sha256: str | None = None) -> tuple[Any, dict[str, Any]]:
    """Load a fastText model after checking its sha256 against ``sha256`` or its manifest.

    fastText's loader parses untrusted binaries in C++; a file swapped or corrupted after training is
    refused before it is parsed. Returns ``(model, manifest)`` (the manifest is ``{}`` when ``sha256``
    was given and no manifest exists).
    """
    import fasttext

    if not Path(model_path).is_file():
        raise FileNotFoundError(f"fastText model {model_path} not found (see models/README.md to rebuild it)")
    manifest: dict[str, Any] = {}
    if sha256 is None or Path(manifest_path(model_path)).is_file():
        manifest = read_manifest(model_path)
    expected = sha256 or manifest.get("model_sha256")
    actual = sha256_file(model_path)
    if actual != expected:
        raise ModelIntegrityError(
            f"{model_path}: sha256 {actual} does not match the expected {expected}; "
            f"refusing to load (retrain it or restore the file)"
        )
    return fasttext.load_model(model_path), manifest


def positive_probability(model: Any, texts: list[str], positive_label: str) -> np.ndarray:
    """P(``positive_label``) for each preprocessed text (no newlines), in one batched ``predict`` call."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    target = f"__label__{positive_label}"
    labels = model.get_labels()
    if target not in labels:
        raise ValueError(f"label {positive_label!r} not in model labels {labels}")
    # fastText reports exp(log(p + 1e-5)) = p + 1e-5 for every label. Reading the target's own value
    # (k = all labels) keeps small probabilities apart; 1 - p(top label) would round them all to 0.
    all_labels, all_probs = model.f.multilinePredict([t + "\n" for t in texts], len(labels), 0.0, "strict")
    probs = np.asarray(all_probs, dtype=np.float32).reshape(len(texts), len(labels))
    col = np.fromiter(
        (lab.index(target) if target in lab else 0 for lab in all_labels), dtype=np.int64, count=len(texts)
    )
    return (probs[np.arange(len(texts)), col] - np.float32(FASTTEXT_EPS)).clip(0.0, 1.0)


def threshold_for_top_percent(paths: str | list[str], column: str, keep_top_percent: float) -> float:
    """The score that keeps the top ``keep_top_percent`` % of a scored corpus (stored parquet columns).

    Use it after a scoring run to turn a percentile (DCLM keeps the top 10%) into an absolute ``min``
    for a ``select`` rule; no model runs again. ``paths``: parquet files or globs (e.g. ``RUN/kept/*.parquet``).
    """
    import pyarrow.parquet as pq

    files = [f for p in ([paths] if isinstance(paths, str) else paths) for f in sorted(glob.glob(p))]
    if not files:
        raise FileNotFoundError(f"no parquet files match {paths!r}")
    values = np.concatenate(
        [pq.read_table(f, columns=[column]).column(column).to_numpy(zero_copy_only=False) for f in files]
    ).astype(np.float64)
    values = values[~np.isnan(values)]
    if not 0 < keep_top_percent <= 100:
        raise ValueError(f"keep_top_percent must be in (0, 100], got {keep_top_percent}")
    return float(np.quantile(values, 1 - keep_top_percent / 100, method="higher"))
