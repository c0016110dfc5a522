"""A shard's batches kept in the run directory when reading the source is costly.

``python_env`` parses every Python file it reads (``ast``: most of the demo's curation time), and a run with
a ``target:`` section reads every shard twice: the target pass's raw-sample scan, then segment 0. For a
source whose ``costly_read`` is true, the scan writes each shard's batches, exactly as ``read`` gave them
(quarantined rows included), under ``_work/source/`` in the run directory's storage, where any node can
read them; segment 0 reads them back instead of the source, and the runner deletes the folder once
segment 0 is done. A shard whose marker is missing or names another shard (another key, or the same key
over other files: a source re-planned after its files changed) is read from the source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from curate.io import scratch
from curate.io.storage import Location, read_parquet, write_parquet

if TYPE_CHECKING:
    import pyarrow as pa

    from curate.io.sources import Shard


def folder(work: str) -> str:
    """Where the batches are kept: ``source/`` in a run's ``_work`` folder (``work``)."""
    return Location.of(work).child("source").url


def clear(work: str) -> None:
    """Delete the kept batches (once segment 0 has read them)."""
    scratch.clear(folder(work))


def _marker(cache: str, shard: Shard) -> Location:
    return Location.of(cache).child(f"{shard.index:05d}.json")


def _ident(shard: Shard) -> dict[str, str]:
    """What the kept batches must match: the shard's key, path and what it reads (``extra``: for
    ``python_env``, its files)."""
    plan = repr((shard.path, shard.extra)).encode()
    return {"key": shard.key, "plan": hashlib.sha256(plan).hexdigest()[:16]}


def write(cache: str, shard: Shard, tables: list[pa.Table]) -> None:
    """Keep ``tables`` (a shard's batches, in order) under ``cache``; the marker, written last, commits them."""
    loc = Location.of(cache)
    loc.makedirs()
    for j, t in enumerate(tables):
        write_parquet(t, loc.child(f"{shard.index:05d}-{j:05d}.parquet"), scratch=True)
    _marker(cache, shard).write_json({**_ident(shard), "batches": len(tables)})


def batches(cache: str, shard: Shard) -> Iterator[pa.Table] | None:
    """The batches :func:`write` kept for ``shard``, in order; None when there are none for it."""
    marker = _marker(cache, shard)
    if not marker.exists():
        return None
    meta = marker.read_json()
    if {k: meta.get(k) for k in ("key", "plan")} != _ident(shard):
        return None
    loc = Location.of(cache)
    return (read_parquet(loc.child(f"{shard.index:05d}-{j:05d}.parquet")) for j in range(meta["batches"]))
