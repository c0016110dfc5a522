"""The target sample and the eval sets must be disjoint: exact text and word 13-grams, checked with the
proxy phase's decontamination index (:func:`curate.instrument.evalsets.build_gram_index` / ``gram_hits``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import ConfigError
from curate.targeting.config import TargetSpec


class TargetError(ConfigError):
    """A target sample that cannot be used (empty, unreadable, overlapping an eval set)."""


def read_jsonl(path: Path) -> list[str]:
    """The ``text`` of every record of a JSON Lines ``.gz`` file written by the target preparation."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def _overlap_error(spec: TargetSpec, hits: np.ndarray, files: list[str], evals: list[Any]) -> TargetError:
    parts = []
    for k, e in enumerate(evals):
        docs = np.flatnonzero(hits[:, k])
        if len(docs):
            tfiles = sorted({files[i] for i in docs})
            parts.append(
                f"eval set {e.name!r} ({e.file or e.spec.source}) shares text with {len(docs)} target "
                f"document(s) of {', '.join(tfiles)}"
            )
    return TargetError(
        f"{spec.where}: target: overlaps the eval sets: {'; '.join(parts)}. The target sample and the eval "
        "sets must be disjoint (13-gram and exact-text check): take the target from other documents "
        "(target.skip_docs, another file) or remove the eval set"
    )


def check_disjoint(spec: TargetSpec, texts: list[str], files: list[str], evals: list[Any], work: Path) -> str:
    """Refuse a target sharing an exact text or a word 13-gram with a file eval set; returns the path of
    the eval sets' gram index (``""`` when there is none)."""
    from curate.instrument.evalsets import build_gram_index
    from curate.instrument.grams import gram_hits
    from curate.instrument.shards import text_hashes

    if not evals:
        return ""
    index = work / "eval_grams.npz"
    build_gram_index(evals, index)
    hits = gram_hits(texts, str(index))
    th = text_hashes(texts)
    for k, e in enumerate(evals):
        hits[:, k] |= np.isin(th, text_hashes(e.decontam_texts()))
    if hits.any():
        raise _overlap_error(spec, hits, files, evals)
    return str(index)


def recheck(run_dir: Path, evals: list[Any], index_path: str) -> None:
    """The proxy phase's guard: a run's stored target sample (``RUN_DIR/target/target.jsonl.gz``) against
    the eval sets it is about to train with (``curate proxy --set eval=...`` may have changed them)."""
    from curate.instrument.grams import gram_hits
    from curate.instrument.shards import text_hashes

    path = Path(run_dir) / "target" / "target.jsonl.gz"
    if not path.exists():
        return
    texts = read_jsonl(path)
    roles = (
        json.loads((path.parent / "roles.json").read_text()) if (path.parent / "roles.json").exists() else {}
    )
    files = ", ".join(roles.get("target", {}).get("files", [])) or str(path)
    hits = gram_hits(texts, index_path)
    th = text_hashes(texts)
    for k, e in enumerate(evals):
        hits[:, k] |= np.isin(th, text_hashes(e.decontam_texts()))
    if hits.any():
        raise _overlap_error(
            TargetSpec(where=f"proxy: the run's target sample {path}"), hits, [files] * len(texts), evals
        )
