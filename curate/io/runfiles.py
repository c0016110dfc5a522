"""The pipeline's output parts (``kept/``, ``rejected/``) of a run directory, read where they are.

A run directory in object storage is worked on through a local mirror (:class:`curate.io.stage.Mirror`),
which does not download ``kept/`` and ``rejected/``: it records the run's URL in the mirror
(:data:`MARKER`), and the readers here list those parts in the bucket and read them on demand, only the
columns and row groups asked for (ranged reads through the store's filesystem). The parts keep their
names in the mirror (``<mirror>/kept/part-00000.parquet``), so the phases and verbs name files the same
way for a local and a remote run; a local run directory is read from disk as before.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.io.files import sha256_file
from curate.io.storage import Location, errors_named, is_remote

MARKER = ".curate-remote.json"  # in a mirror: {"url": the run directory}; never uploaded
STREAMED = ("kept", "rejected")
CHUNK = 8 << 20


def remote_of(run_dir: str | Path) -> str | None:
    """The URL of the run directory whose mirror ``run_dir`` is, None for a plain local run directory."""
    marker = Path(run_dir) / MARKER
    if not marker.is_file():
        return None
    return str(json.loads(marker.read_text())["url"])


def parts(run_dir: str | Path, sub: str) -> list[Path]:
    """The ``part-*.parquet`` files of ``run_dir/sub`` (``kept`` or ``rejected``), sorted by name: for a
    mirror, the bucket's listing, named inside the mirror."""
    url = remote_of(run_dir)
    if url is None:
        return sorted((Path(run_dir) / sub).glob("part-*.parquet"))
    return [Path(run_dir) / sub / f.name for f in Location.of(url).child(sub).glob("part-*.parquet")]


def where(path: str | Path) -> str:
    """Where the part ``path`` is read from: a URL as it is; a part named in a mirror, its object in the
    bucket; anything else, the local path."""
    s = str(path)
    if is_remote(s):
        return s
    p = Path(s)
    if p.parent.name in STREAMED and not p.exists():
        url = remote_of(p.parent.parent)
        if url is not None:
            return Location.of(url).child(p.parent.name, p.name).url
    return s


def parquet_file(path: str | Path) -> pq.ParquetFile:
    """A :class:`pyarrow.parquet.ParquetFile` over ``path`` (local, URL, or a part named in a mirror):
    from a bucket, the footer and then only the column chunks read are fetched (ranged GETs)."""
    src = where(path)
    if not is_remote(src):
        return pq.ParquetFile(src)
    loc = Location.of(src)
    with errors_named(loc.url):
        f = loc.fs.open(loc.key, "rb", cache_type="none")  # each read one ranged GET, nothing read ahead
        return pq.ParquetFile(f)


def size_and_sha256(path: str | Path) -> tuple[int, str]:
    """Bytes and sha256 of the file at ``path`` (see :func:`parquet_file`); a bucket object is streamed
    through the hash in 8 MiB reads, never stored."""
    src = where(path)
    if not is_remote(src):
        return Path(src).stat().st_size, sha256_file(src)
    loc = Location.of(src)
    h, n = hashlib.sha256(), 0
    with errors_named(loc.url), loc.fs.open(loc.key, "rb", block_size=CHUNK, cache_type="none") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return n, h.hexdigest()


def read_table(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """``columns`` (all when None) of the Parquet file at ``path`` (see :func:`parquet_file`)."""
    return parquet_file(path).read(columns=columns)


def read_schema(path: str | Path) -> Any:
    return parquet_file(path).schema_arrow
