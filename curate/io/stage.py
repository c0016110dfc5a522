"""The local side of a run directory in object storage: its stage folder and the mirror of its files.

Ray's start-up log, the target-aware scorers' fits (made here, then uploaded to the run's ``target/``)
and the post-run phases (proxy runs, export, report, which write token shards through ``np.memmap``,
with seeks, and read files by path) work on a local folder; :class:`Mirror` fetches the run's files
there and uploads what the phases wrote. Global stages' scratch is not here: its tasks run on every
node, so it stays in the run directory's storage (:mod:`curate.io.scratch`).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from pathlib import Path

from curate.io.storage import Location, redact


def stage_dir(url: str) -> Path:
    """The local mirror of a run directory in object storage: Ray's log, target fits, and the post-run
    phases (proxy, export, report) that work on local files. Under
    ``CURATE_STAGE`` when set, else ``~/.cache/curate/stage``; one per URL, so a resume finds it."""
    root = Path(os.environ.get("CURATE_STAGE") or Path.home() / ".cache" / "curate" / "stage")
    name = posixpath.basename(url.rstrip("/")) or "run"
    return root / f"{name}-{hashlib.sha256(redact(url).encode()).hexdigest()[:12]}"


def show_url(text: str, url: str) -> str:
    """``text`` with the local mirror of ``url`` (:func:`stage_dir`) written as the URL itself, so what
    a verb prints about an ``s3://`` run directory names the bucket, not a cache folder."""
    return text.replace(str(stage_dir(url)), redact(url).rstrip("/"))


class Mirror:
    """A local copy of a run directory in object storage, for the phases that work on local files.

    Proxy training, export (token shards are written through ``np.memmap``, with seeks) and the report
    run on :func:`stage_dir`; :meth:`push` then uploads what they wrote, every ``manifest.json`` after the
    files it describes and the run's own ``manifest.json`` last, so a reader (or a resume) that finds a
    manifest finds its files complete.
    """

    SKIP = ("_work/", "ray.log")
    READ_ONLY = ("kept/", "rejected/")  # the pipeline's output: pulled, never pushed back

    def __init__(self, remote: Location) -> None:
        self.remote = remote
        self.local = stage_dir(remote.url)
        self._seen: dict[str, tuple[int, int]] = {}

    def _skip(self, rel: str) -> bool:
        return rel.startswith(self.SKIP) or ".tmp" in posixpath.basename(rel)

    def _local_files(self) -> dict[str, tuple[int, int]]:
        out = {}
        for p in self.local.rglob("*"):
            rel = p.relative_to(self.local).as_posix()
            if p.is_file() and not self._skip(rel):
                st = p.stat()
                out[rel] = (st.st_size, st.st_mtime_ns)
        return out

    def pull(self) -> Path:
        """Fetch every file of the run (not ``_work/``) whose local copy is missing or of another size."""
        self.local.mkdir(parents=True, exist_ok=True)
        have = self._local_files()
        for rel, size, _ in self.remote.walk_files():
            if self._skip(rel) or (rel in have and have[rel][0] == size):
                continue
            self.remote.child(rel).download(self.local / rel)
        self._seen = self._local_files()
        return self.local

    def push(self) -> None:
        """Upload the files the phases wrote or changed since :meth:`pull` (manifests last)."""
        now = self._local_files()
        changed = [r for r, st in now.items() if self._seen.get(r) != st and not r.startswith(self.READ_ONLY)]
        changed.sort(key=lambda r: (r == "manifest.json", posixpath.basename(r) == "manifest.json", r))
        for rel in changed:
            self.remote.child(rel).upload(self.local / rel)
        self._seen = now
