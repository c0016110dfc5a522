"""Scratch files of the global stages (key tables, shuffle outputs, drop lists), named by plain strings
that are either local paths or URLs in the run directory's storage.

A global stage's tasks run on every node of a cluster: what one task writes, another (on another node)
reads. So scratch lives where the run directory lives (a local or shared path, or a bucket), never on
one node's local disk, and every read and write goes through these few functions, which take either
kind of name. Writes are whole and atomic (a local rename, or one PUT), so a retried task never leaves
or reads half a file.
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.io.files import atomic_path
from curate.io.storage import Location, errors_named, is_remote


def join(root: str | Path, *names: str) -> str:
    """``root/names...`` (a URL stays a URL)."""
    return Location.of(str(root)).child(*names).url


def parent(path: str | Path) -> str:
    """The folder holding ``path``."""
    s = str(path)
    return posixpath.dirname(s.rstrip("/")) if is_remote(s) else str(Path(s).parent)


def makedirs(path: str | Path) -> None:
    """Create a local folder (object stores need none)."""
    Location.of(str(path)).makedirs()


def exists(path: str | Path) -> bool:
    return Location.of(str(path)).exists()


def files(folder: str | Path, pattern: str) -> list[str]:
    """Files directly in ``folder`` matching ``pattern``, sorted by name ([] when it does not exist)."""
    loc = Location.of(str(folder))
    if not loc.remote and not loc.local.is_dir():
        return []
    return [f.url for f in loc.glob(pattern)]


def remove(folder: str | Path, pattern: str) -> None:
    """Delete the files of ``folder`` matching ``pattern``."""
    for f in files(folder, pattern):
        Location.of(f).remove()


def clear(folder: str | Path) -> None:
    """Delete ``folder`` and everything below it (nothing when it does not exist)."""
    loc = Location.of(str(folder))
    if not loc.remote:
        shutil.rmtree(loc.local, ignore_errors=True)
        return
    with errors_named(loc.url):
        fs = loc.fs
        fs.invalidate_cache()
        if fs.find(loc.key):
            fs.rm(loc.key, recursive=True)


def write_table(table: pa.Table, path: str | Path) -> str:
    """Write ``table`` to ``path`` whole and atomically; returns ``path`` as a string."""
    loc = Location.of(str(path))
    if not loc.remote:
        with atomic_path(loc.local) as tmp:
            pq.write_table(table, tmp)
        return str(path)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    loc.write_bytes(sink.getvalue().to_pybytes())
    return loc.url


def read_table(path: str | Path, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
    """The Parquet file at ``path`` (a local path or a URL): ``columns`` and rows passing ``filters``
    (pyarrow's DNF filters) only, when given."""
    loc = Location.of(str(path))
    if not loc.remote:
        return pq.read_table(loc.url, columns=columns, filters=filters)
    return pq.read_table(pa.BufferReader(loc.read_bytes()), columns=columns, filters=filters)


def write_bytes(data: bytes, path: str | Path) -> None:
    Location.of(str(path)).write_bytes(data)


def read_bytes(path: str | Path) -> bytes:
    return Location.of(str(path)).read_bytes()


def read_tables(paths: list[str], columns: list[str] | None = None) -> Any:
    """The files' tables concatenated (None for no files)."""
    tables = [read_table(p, columns) for p in paths]
    return pa.concat_tables(tables) if tables else None
