"""Labelled training text for fastText: sources, deterministic sampling, preprocessing, fingerprints."""

from __future__ import annotations

import glob
import gzip
import hashlib
import heapq
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class LabelledSource:
    """One labelled input: JSON Lines files (plain or ``.gz``) matched by ``path`` (a path or glob).

    ``label``: the class name (written as ``__label__<label>``). ``where``: keep only records whose
    fields equal these values (e.g. ``{synthetic: true}`` or ``{generator: human}``; a list value means
    "any of"). ``sample``: at most this many records in total, chosen uniformly by a seeded hash of the
    record (independent of file order). ``per_file``: at most this many per matched file (applied before
    ``sample``), so one large file cannot crowd out the others. ``split``: ``paragraphs`` turns each
    record into chunks of consecutive paragraphs of at least ``min_chars`` characters (for books).
    ``max_chars``: truncate each text (keeps training fast; fastText averages embeddings anyway).
    """

    label: str
    path: str
    where: dict[str, Any] = field(default_factory=dict)
    sample: int | None = None
    per_file: int | None = None
    split: str = "none"
    min_chars: int = 200
    max_chars: int | None = 20_000
    text_field: str = "text"
    group_field: str | None = None

    def files(self) -> list[str]:
        matched = sorted(glob.glob(self.path)) if glob.has_magic(self.path) else [self.path]
        matched = [p for p in matched if os.path.isfile(p)]
        if not matched:
            raise FileNotFoundError(f"labelled source {self.label!r}: no file matches {self.path!r}")
        return matched


@dataclass
class Example:
    """One training example: the preprocessed text, its label, and a group key for the held-out split."""

    label: str
    text: str
    group: str


def fasttext_text(texts: pa.Array | pa.ChunkedArray | list[str]) -> pa.Array | pa.ChunkedArray:
    """The preprocessing shared by training and scoring: lowercase, newlines to spaces.

    fastText reads one example per line, so a newline inside a text would split it (``predict`` refuses
    such text). Its tokenizer already treats ``\r \t \v \f`` and runs of spaces as one separator, so
    only ``\n`` needs replacing (a plain replace: cheaper than a regex; predictions are bit-identical to
    the earlier ``[\r\n\t\v\f]+`` regex, checked on 5,338 web documents). Vectorized on Arrow.
    """
    arr = pa.array(texts, pa.string()) if isinstance(texts, list) else texts
    return pc.replace_substring(pc.utf8_lower(pc.fill_null(arr, "")), "\n", " ")


def file_fingerprint(path: str) -> dict[str, Any]:
    """``{path, size, sha256}`` of one input file, recorded in the model manifest."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"path": path, "size": os.path.getsize(path), "sha256": h.hexdigest()}


def _matches(record: dict[str, Any], where: dict[str, Any]) -> bool:
    for key, want in where.items():
        have = record.get(key)
        if isinstance(want, list):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


def _iter_records(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f):
            if line.strip():
                yield lineno, json.loads(line)


_PARA = re.compile(r"\n\s*\n")


def _chunks(text: str, min_chars: int) -> Iterator[str]:
    """Consecutive paragraphs joined until each chunk has at least ``min_chars`` characters."""
    buf: list[str] = []
    size = 0
    for para in _PARA.split(text):
        para = para.strip()
        if not para:
            continue
        buf.append(para)
        size += len(para)
        if size >= min_chars:
            yield "\n".join(buf)
            buf, size = [], 0
    if buf and size >= min_chars // 2:
        yield "\n".join(buf)


def _rank(seed: int, key: str) -> int:
    """A seeded, file-order-independent random rank for sampling."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest(), "little")


def read_labelled(source: LabelledSource, *, seed: int) -> tuple[list[Example], list[dict[str, Any]]]:
    """Read, filter, chunk and sample one source. Returns the examples and the files' fingerprints."""
    picked: list[tuple[int, str, str]] = []
    fingerprints = []
    for path in source.files():
        fingerprints.append(file_fingerprint(path))
        candidates: list[tuple[int, str, str]] = []
        for lineno, record in _iter_records(path):
            if not _matches(record, source.where):
                continue
            text = record.get(source.text_field)
            if not isinstance(text, str) or not text.strip():
                continue
            rid = str(record.get("id", f"{os.path.basename(path)}:{lineno}"))
            group = str(record.get(source.group_field, rid)) if source.group_field else rid
            pieces = list(_chunks(text, source.min_chars)) if source.split == "paragraphs" else [text]
            for j, piece in enumerate(pieces):
                key = f"{rid}#{j}" if len(pieces) > 1 else rid
                if source.max_chars:
                    piece = piece[: source.max_chars]
                candidates.append((_rank(seed, key), piece, group if len(pieces) == 1 else key))
        if source.per_file is not None:
            candidates = heapq.nsmallest(source.per_file, candidates)
        picked.extend(candidates)
    if source.sample is not None:
        picked = heapq.nsmallest(source.sample, picked)
    else:
        picked.sort()
    texts = fasttext_text([t for _, t, _ in picked]).to_pylist()
    examples = [Example(source.label, t, g) for t, (_, _, g) in zip(texts, picked, strict=True) if t.strip()]
    return examples, fingerprints
