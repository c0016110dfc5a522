"""The contract between target-aware scorers and the run's ``target:`` sample.

A :class:`TargetFitted` scorer has a ``model`` parameter. Given, it is used as is (a fitted artifact from
an earlier run, or a file the user built). Empty, the run fits it before any stage runs
(:func:`curate.targeting.prepare.prepare`): it hands the scorer a :class:`TargetSample` and a folder named by
the fingerprint of (sample sha256, the scorer's :meth:`TargetFitted.fit_key`, its name), and the scorer
writes its artifact there and returns its path. A rerun finds the folder complete and does not refit.

When the run directory is in object storage the fit happens on the driver's disk and its folder is
uploaded to ``<run>/target/`` (:meth:`TargetFitted.ship_from`); a worker on another node, which cannot
see the driver's disk, fetches that folder into its own cache before ``setup`` (no shared disk needed).
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

    def ship_from(self, folder_url: str, artifact: str) -> None:
        """The fit's folder was uploaded to ``folder_url``; ``artifact`` is the model's path relative to
        it. A worker that does not see ``params.model`` (another node's disk) fetches the folder."""
        self._shipped = (folder_url, artifact)

    def ensure_setup(self) -> None:
        shipped = getattr(self, "_shipped", None)
        if shipped and not getattr(self, "_ready", False) and not Path(str(self.params.model)).exists():
            self.use_model(str(fetch_folder(shipped[0]) / shipped[1]))
        super().ensure_setup()  # type: ignore[misc]


def fetch_folder(url: str) -> Path:
    """A local copy of the folder at ``url`` (every file below it), cached by URL under ``CURATE_CACHE``
    (default ``~/.cache/curate/fetched``); files already there with the same size are not fetched again."""
    import os

    from curate.io.storage import Location

    root = Location.of(url)
    cache = Path(os.environ.get("CURATE_CACHE") or Path.home() / ".cache" / "curate" / "fetched")
    local = cache / f"{root.name}-{hashlib.sha256(url.encode()).hexdigest()[:12]}"
    for rel, size, _ in root.walk_files():
        dst = local / rel
        if not (dst.exists() and dst.stat().st_size == size):
            root.child(*rel.split("/")).download(dst)
    return local
