"""The contract between target-aware scorers and the run's ``target:`` sample.

A :class:`TargetFitted` scorer has a ``model`` parameter. Given, it is used as is (a fitted artifact from
an earlier run, or a file the user built). Empty, the run fits it before any stage runs
(:func:`curate.target.prepare.prepare`): it hands the scorer a :class:`TargetSample` and a folder named by
the fingerprint of (sample sha256, the scorer's :meth:`TargetFitted.fit_key`, its name), and the scorer
writes its artifact there and returns its path. A rerun finds the folder complete and does not refit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TargetSample:
    """The texts a target-aware scorer is fitted on: the target sample and a sample of the raw input
    (both already checked disjoint from every eval set), with the files they came from."""

    target_texts: list[str]
    raw_texts: list[str]
    target_files: list[str] = field(default_factory=list)
    target_jsonl: str = ""  # the target sample as JSON Lines ({"text": ...}), for recipe-based trainers
    raw_jsonl: str = ""
    seed: int = 0

    def sha256(self) -> str:
        """Fingerprint of the data (both samples, in order)."""
        h = hashlib.sha256()
        for role, texts in (("target", self.target_texts), ("raw", self.raw_texts)):
            h.update(f"{role}:{len(texts)}\n".encode())
            for t in texts:
                h.update(hashlib.sha256(t.encode("utf-8")).digest())
        return h.hexdigest()


class TargetFitted:
    """Mixin for scorers fitted to the pipeline's target sample (``params.model`` empty = fit it)."""

    params: Any
    label: str
    name: str

    def needs_fit(self) -> bool:
        return not getattr(self.params, "model", "")

    def fit_key(self) -> dict[str, Any]:
        """What, besides the data and the seed, determines the fitted artifact (e.g. bucket count)."""
        return {}

    def fit(self, sample: TargetSample, out_dir: Path) -> str:
        """Write the artifact into ``out_dir`` (which exists and is empty) and return its path."""
        raise NotImplementedError

    def use_model(self, path: str) -> None:
        """Point the scorer at a fitted artifact (before it is shipped to workers)."""
        self.params.model = path
