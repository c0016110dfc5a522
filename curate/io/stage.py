"""The local side of a run directory in object storage: its stage folder and the mirror of its files.

Ray's start-up log, the target-aware scorers' fits (made here, then uploaded to the run's ``target/``)
and the driver's side of the post-run phases (proxy runs, export, report, which write token shards
through ``np.memmap``, with seeks, and read files by path) work on a local folder; :class:`Mirror`
fetches the run's small files there (not ``kept/`` and ``rejected/``, read in place:
:mod:`curate.io.runfiles`) and uploads what the phases wrote. The phases' tasks, which may run on
other nodes, reach the run's files through :class:`RemoteRoot` (the bucket and their node's own cache),
never this folder. Global stages' scratch is not here either: its tasks run on every node, so it stays
in the run directory's storage (:mod:`curate.io.scratch`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from curate.io.runfiles import MARKER
from curate.io.storage import Location, redact


def node_cache() -> Path:
    """This node's own cache of fetched files: ``CURATE_CACHE`` when set, else ``~/.cache/curate``."""
    return Path(os.environ.get("CURATE_CACHE") or Path.home() / ".cache" / "curate")


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

    The driver's side of proxy training, export (token shards are written through ``np.memmap``, with
    seeks) and the report run on :func:`stage_dir`; :meth:`send` and :meth:`receive` move the files
    their tasks exchange with the run's storage; :meth:`push` then uploads what they wrote, every ``manifest.json`` after the
    files it describes and the run's own ``manifest.json`` last, so a reader (or a resume) that finds a
    manifest finds its files complete.
    """

    SKIP = ("_work/", "ray.log", "kept/", "rejected/", MARKER)  # the pipeline's output: read in place

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
        """Fetch every file of the run whose local copy is missing or of another size, except ``_work/``
        and the pipeline's output parts (``kept/``, ``rejected/``), which readers stream from the bucket
        (:mod:`curate.io.runfiles`, told the run's URL by :data:`~curate.io.runfiles.MARKER`)."""
        self.local.mkdir(parents=True, exist_ok=True)
        (self.local / MARKER).write_text(json.dumps({"url": self.remote.url}))
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
        changed = [r for r, st in now.items() if self._seen.get(r) != st]
        changed.sort(key=lambda r: (r == "manifest.json", posixpath.basename(r) == "manifest.json", r))
        for rel in changed:
            self.remote.child(rel).upload(self.local / rel)
        self._seen = now

    def root(self) -> RemoteRoot:
        """The mapping a phase's tasks use to reach this mirror's files in the run's storage."""
        return RemoteRoot(local=str(self.local.resolve()), url=self.remote.url)

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.local).as_posix()
        except ValueError:  # a phase's paths are resolved (RunContext.path); the mirror's may not be
            return path.resolve().relative_to(self.local.resolve()).as_posix()

    def send(self, paths: list[Path]) -> None:
        """Upload these files of the mirror now (tasks on other nodes are about to read them); :meth:`push`
        does not upload them again unless they change."""
        for p in paths:
            rel = self._rel(p)
            self.remote.child(rel).upload(p)
            st = p.stat()
            self._seen[rel] = (st.st_size, st.st_mtime_ns)

    def receive(self, paths: list[Path]) -> None:
        """Download these files (written to the run's storage by tasks) into the mirror, where the driver
        reads them; :meth:`push` does not upload them back."""
        for p in paths:
            rel = self._rel(p)
            self.remote.child(rel).download(p)
            st = p.stat()
            self._seen[rel] = (st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class RemoteRoot:
    """The driver's mirror of a run directory (``local``) and the run directory itself (``url``), for a
    phase's tasks, which may run on nodes that cannot see the driver's disk.

    A task names files by their path in the driver's mirror (the names the driver and its records use) and
    reaches them through this: :meth:`url_of` is the same file in the run's storage, :meth:`fetch` a copy
    in the node's own cache (:func:`node_cache`), :meth:`cache_of` where a task works on a file locally
    before :meth:`upload` puts it in the run's storage. Picklable: two strings.
    """

    local: str
    url: str

    def rel(self, path: str | Path) -> str:
        """``path`` (in the driver's mirror) relative to the run directory; refuses a path outside it."""
        try:
            return Path(path).relative_to(self.local).as_posix()
        except ValueError:
            pass
        try:  # the driver's unresolved name for it (the mirror's own folder, when its parents are links)
            return Path(path).resolve().relative_to(self.local).as_posix()
        except ValueError:
            raise ValueError(f"{path}: not in the run directory's mirror {self.local}") from None

    def url_of(self, path: str | Path) -> str:
        return Location.of(self.url).child(self.rel(path)).url

    def cache_of(self, path: str | Path) -> Path:
        """Where this node keeps its copy of ``path``: one folder per run directory in the node cache."""
        tag = hashlib.sha256(redact(self.url).encode()).hexdigest()[:12]
        return (
            node_cache()
            / "runs"
            / f"{posixpath.basename(self.url.rstrip('/')) or 'run'}-{tag}"
            / self.rel(path)
        )

    def exists(self, path: str | Path) -> bool:
        return Location.of(self.url_of(path)).exists()

    def fetch(self, path: str | Path, *, optional: bool = False) -> Path | None:
        """This node's copy of ``path``, downloaded from the run's storage unless the cached copy has the
        stored object's size (the files fetched this way are written once: shards, eval sets, the
        tokenizer). ``optional``: None when the object does not exist (else ``FileNotFoundError``)."""
        remote, dst = Location.of(self.url_of(path)), self.cache_of(path)
        size = remote.size()
        if size is None:
            if optional:
                return None
            raise FileNotFoundError(f"{redact(remote.url)}: not in the run's storage")
        if not (dst.is_file() and dst.stat().st_size == size):
            remote.download(dst)
        return dst

    def upload(self, local: str | Path, path: str | Path) -> None:
        """Put the node-local file ``local`` in the run's storage under ``path``'s name."""
        Location.of(self.url_of(path)).upload(local)
