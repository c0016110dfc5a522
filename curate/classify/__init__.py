"""Training and loading of fastText text classifiers (quality, machine-text detection).

``train_classifier`` turns a :class:`ClassifierRecipe` (labelled JSON Lines sources, sample sizes,
fastText parameters, a seed) into a model file plus a manifest; ``load_verified`` loads a model only
after its sha256 matches the manifest. The scorers in ``curate.scorers`` use both.
"""

from curate.classify.data import LabelledSource, fasttext_text, read_labelled
from curate.classify.model import (
    load_verified,
    manifest_path,
    positive_probability,
    threshold_for_top_percent,
)
from curate.classify.train import ClassifierRecipe, load_recipe, roc_auc, train_classifier
from curate.io.integrity import ModelIntegrityError

__all__ = [
    "ClassifierRecipe",
    "LabelledSource",
    "ModelIntegrityError",
    "fasttext_text",
    "load_recipe",
    "load_verified",
    "manifest_path",
    "positive_probability",
    "read_labelled",
    "roc_auc",
    "threshold_for_top_percent",
    "train_classifier",
]
