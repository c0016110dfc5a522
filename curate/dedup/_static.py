"""Static token embeddings for ``semantic_dedup_v1``: a document's vector is the mean of its tokens'
vectors, looked up in a table that an installed package ships. No network, no model run.

A static table is a neural encoder's knowledge frozen per token: it knows that "car" and "automobile"
are close (which the hashed bag of words of :mod:`curate.dedup._embed` cannot) but, like the bag of
words, not word order. Its cost is one tokenizer pass (most of it) and one sparse product per batch:
about half the hashed embedding's speed and ~90x all-MiniLM-L6-v2's on a CPU (``BENCHMARKS.md``,
section 11).

The table and tokenizer are named by ``STATIC`` and checked by sha256 before they are read
(:class:`StaticModel`): a name means these exact bytes, so its calibrated threshold keeps its meaning
across installs. The package itself is never imported (WordLlama's ``__init__`` imports libraries
``curate`` does not depend on, and its loader may download); only its files are read, found with
``importlib.util.find_spec``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class StaticModel:
    """A token-embedding table that a package ships, and the tokenizer it was trained with."""

    package: str  # the distribution: pip install --no-deps {package}=={version}
    version: str  # the version whose files the sha256s below are
    module: str  # the importable package that holds the files (found, never imported)
    table: str  # the safetensors file, relative to the package directory
    tensor: str  # the tensor in it: (vocabulary, dim)
    tokenizer: str  # a Hugging Face ``tokenizers`` JSON, relative to the package directory
    table_sha256: str
    tokenizer_sha256: str
    threshold: float  # the calibrated default (benchmarks/semantic_calibration.py)

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.package}=={self.version}"


# WordLlama's l2_supercat at 256 dimensions (LLaMA 2 vocabulary, 32,000 tokens; MIT per the package).
WORDLLAMA = StaticModel(
    package="wordllama",
    version="0.4.0.post1",
    module="wordllama",
    table="weights/l2_supercat_256.safetensors",
    tensor="embedding.weight",
    tokenizer="tokenizers/l2_supercat_tokenizer_config.json",
    table_sha256="64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
    tokenizer_sha256="93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
    threshold=0.85,
)
# Names ``model`` accepts for a static table (lower case).
STATIC = {"wordllama-l2-supercat": WORDLLAMA}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_static(name: str, spec: StaticModel) -> tuple[Path, Path]:
    """The table and tokenizer files of ``spec``, checked. Raises ``ValueError`` naming the package
    and the command that installs it, or the file whose bytes are not the calibrated ones."""
    found = importlib.util.find_spec(spec.module)
    if found is None or not found.submodule_search_locations:
        raise ValueError(
            f"model {name!r} ships in the package {spec.package}, which is not installed: {spec.install}"
        )
    root = Path(next(iter(found.submodule_search_locations)))
    files = []
    for rel, want in ((spec.table, spec.table_sha256), (spec.tokenizer, spec.tokenizer_sha256)):
        path = root / rel
        if not path.is_file():
            raise ValueError(
                f"model {name!r}: the package {spec.package} has no file {path}; install the version "
                f"this name was calibrated on: {spec.install}"
            )
        if _sha256(path) != want:
            raise ValueError(
                f"model {name!r}: {path} is not the file this name was calibrated on (sha256 expected "
                f"{want}); install that version: {spec.install}"
            )
        files.append(path)
    return files[0], files[1]


class StaticEmbedder:
    """Mean of the tokens' vectors from a static table, L2-normalized (an empty text gets the zero
    vector). Every token counts, however long the document (no truncation)."""

    def __init__(self, table: Path, tokenizer: Path, *, tensor: str, chunk: int = 512) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.table = np.ascontiguousarray(load_file(str(table))[tensor], np.float32)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.chunk = chunk

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    def __call__(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Unit vectors, one row per text (float32)."""
        from scipy import sparse

        values = [t or "" for t in texts.to_pylist()]
        vocab = self.table.shape[0]
        out = np.zeros((len(values), self.dim), np.float32)
        for lo in range(0, len(values), self.chunk):  # bounded memory: ``chunk`` documents at a time
            encs = self.tokenizer.encode_batch(values[lo : lo + self.chunk], add_special_tokens=False)
            lengths = np.fromiter((len(e.ids) for e in encs), np.int64, len(encs))
            ids = np.fromiter((i for e in encs for i in e.ids), np.int64, int(lengths.sum()))
            np.clip(ids, 0, vocab - 1, out=ids)
            # One row per document, one entry per token: the product sums each document's token vectors
            # (the mean's direction; the norm is divided out below).
            counts = sparse.csr_matrix(
                (np.ones(len(ids), np.float32), ids, np.r_[0, np.cumsum(lengths)]), shape=(len(encs), vocab)
            )
            out[lo : lo + len(encs)] = counts @ self.table
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norm > 0, norm, 1)).astype(np.float32)
