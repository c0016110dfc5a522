"""The source contract and the shared row-building helpers every reader uses.

A source lists *shards* (small picklable descriptors, in a deterministic order) and reads one shard as
a stream of Arrow batches with the base columns ``id``, ``text``, ``source`` plus the ``keep_fields``.
Rows that cannot be documents (malformed JSON, invalid UTF-8, missing or non-string text, empty text,
oversized documents, a truncated file) are never dropped: they come out with ``schema.REJECT`` set to
``quarantine:<why>`` and a ``detail`` message, so the run counts them and writes them to ``rejected/``.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pyarrow as pa

from curate.core import schema
from curate.io import storage

DETAIL = "detail"


class SourceError(RuntimeError):
    """An input that cannot be read at all (the run stops unless ``on_error: quarantine``)."""


@dataclass
class SourceParams:
    """Options common to every source. Format-specific ones live in each source's own Params."""

    path: str = ""
    text_field: str = "text"
    id_field: str | None = "id"
    source_field: str | None = "source"
    keep_fields: list[str] = field(default_factory=lambda: ["url"])
    on_error: Literal["fail", "quarantine"] = (
        "fail"  # quarantine: an unreadable file becomes one quarantined row
    )
    max_doc_bytes: int = 16_000_000
    batch_docs: int = 2000
    batch_bytes: int = 32_000_000
    limit: int | None = None  # read at most this many documents per shard (for samples and tests)


@dataclass(frozen=True)
class Shard:
    """One unit of reading: usually a file. ``key`` is stable and names the rows' ids."""

    index: int
    path: str
    key: str
    extra: tuple[tuple[str, Any], ...] = ()


class Source:
    """Base of every source; subclasses set ``Params`` and implement ``shards`` and ``read``."""

    name: ClassVar[str] = "source"
    Params: ClassVar[type] = SourceParams
    extensions: ClassVar[tuple[str, ...]] = ()
    # Reading a shard costs far more than writing and reading back its batches (python_env parses Python
    # files): a run that reads every shard twice keeps them after the first read (curate.io.shardcache).
    costly_read: ClassVar[bool] = False

    def __init__(self, params: Any) -> None:
        self.params = params

    def shards(self) -> list[Shard]:
        return files_to_shards(self.params.path, self.extensions)

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        raise NotImplementedError

    def may_hold(self, shard: Shard, name: str) -> bool:
        """Whether ``shard`` can hold rows whose ``source`` is ``name``. A source that only learns a row's
        source label by reading it says yes (the default); one that knows a shard's labels before reading
        it (``python_env``) says no for the others, so that a pass after one source's rows (the target
        sample) does not read the rest."""
        del shard, name
        return True

    def fingerprint(self) -> list[dict[str, Any]]:
        """Identity of the input for the manifest: each file's path, size and modification time
        (for an object: its URL, size and ETag)."""
        out = []
        for s in self.shards():
            if storage.is_remote(s.path):
                out.append(_object_fingerprint(s.path))
                continue
            try:
                st = os.stat(s.path)
                out.append({"path": s.path, "bytes": st.st_size, "mtime": int(st.st_mtime)})
            except OSError:
                out.append({"path": s.path, "bytes": None})
        return out


def _object_fingerprint(url: str) -> dict[str, Any]:
    fs, key = storage.filesystem(url)
    try:
        with storage.errors_named(url):
            info = fs.info(key)
    except storage.StorageError:
        return {"path": storage.redact(url), "bytes": None}
    etag = info.get("ETag") or info.get("etag")
    return {
        "path": storage.redact(url),
        "bytes": info.get("size"),
        "etag": str(etag).strip('"') if etag else None,
    }


def _expand_remote(path: str, extensions: tuple[str, ...]) -> list[str]:
    """Objects named by a URL: one object, a prefix (searched recursively), or a glob."""
    fs, key = storage.filesystem(path)
    with storage.errors_named(path):
        if any(ch in key for ch in "*?["):
            found = [p for p, info in fs.glob(key, detail=True).items() if info.get("type") != "directory"]
        elif fs.isdir(key):
            found = [p for p in fs.find(key) if not extensions or p.endswith(extensions)]
        elif fs.exists(key):
            found = [key]
        else:
            bucket = key.split("/", 1)[0]
            if bucket and not fs.exists(bucket):
                raise SourceError(f"{storage.redact(path)}: the bucket {bucket!r} does not exist")
            raise SourceError(f"{storage.redact(path)}: no such object or prefix")
        if not found:
            bucket = key.split("/", 1)[0]
            if bucket and not fs.exists(bucket):
                raise SourceError(f"{storage.redact(path)}: the bucket {bucket!r} does not exist")
    scheme = storage.protocol(path)
    return [f"{scheme}://{p}" for p in found]


def expand_paths(path: str, extensions: tuple[str, ...] = ()) -> list[str]:
    """Files named by a path, a glob, or a directory (searched recursively for ``extensions``);
    the same for an object-storage URL (a prefix is a directory)."""
    if not path:
        raise SourceError("input.path is empty: give a file, a glob or a directory")
    if storage.is_remote(path):
        found = _expand_remote(path, extensions)
    elif os.path.isdir(path):
        found = [
            os.path.join(root, f)
            for root, _, files in os.walk(path)
            for f in files
            if not extensions or f.endswith(extensions)
        ]
    elif any(ch in path for ch in "*?["):
        found = [p for p in glob.glob(path, recursive=True) if os.path.isfile(p)]
    else:
        if not os.path.exists(path):
            raise SourceError(f"{path}: no such file or directory")
        found = [path]
    if not found:
        raise SourceError(
            f"{storage.redact(path)}: matched no input files"
            + (f" ending in {', '.join(extensions)}" if extensions else "")
        )
    return sorted(found)


def files_to_shards(path: str, extensions: tuple[str, ...] = ()) -> list[Shard]:
    files = expand_paths(path, extensions)
    if storage.is_remote(path):  # keys relative to the common prefix, as for local files
        keys = [f.split("://", 1)[1] for f in files]
        root = posixpath.commonpath([posixpath.dirname(k) for k in keys])
        return [
            Shard(i, f, posixpath.relpath(k, root)) for i, (f, k) in enumerate(zip(files, keys, strict=True))
        ]
    root = os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
    return [Shard(i, f, os.path.relpath(os.path.abspath(f), root)) for i, f in enumerate(files)]


class BatchBuilder:
    """Accumulates rows and emits bounded Arrow batches with the base columns."""

    def __init__(self, params: SourceParams) -> None:
        self.params = params
        self.keep = [f for f in params.keep_fields if f not in (schema.ID, schema.TEXT, schema.SOURCE)]
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list[Any]] = {
            k: [] for k in (schema.ID, schema.TEXT, schema.SOURCE, *self.keep, schema.REJECT, DETAIL)
        }
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self.cols[schema.ID])

    def add(
        self,
        *,
        doc_id: str,
        text: str,
        source: str,
        extra: dict[str, Any] | None = None,
        reject: str | None = None,
        detail: str | None = None,
    ) -> None:
        limit = self.params.max_doc_bytes
        # A character is at most 4 bytes of UTF-8 (a lone surrogate 3): short texts are not encoded.
        big = reject is None and 4 * len(text) > limit
        nbytes = len(text.encode("utf-8", "surrogatepass")) if big else 0
        if nbytes > limit:
            reject, detail = "too_large", too_large(nbytes, limit)
        elif reject is None and not text.strip():
            reject, detail = "empty_text", "text is empty or whitespace only"
        c = self.cols
        c[schema.ID].append(doc_id)
        c[schema.TEXT].append(text)  # lone surrogates are replaced at flush, in the columns that hold any
        c[schema.SOURCE].append(source)
        for k in self.keep:
            v = (extra or {}).get(k)
            c[k].append(
                v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            )
        c[schema.REJECT].append(None if reject is None else schema.QUARANTINE_PREFIX + reject)
        c[DETAIL].append(detail)
        self.nbytes += len(text)

    def add_record(self, record: Any, *, default_id: str, source: str) -> None:
        """Map one decoded record (a dict) to a row, quarantining what is not a usable document."""
        p = self.params
        if not isinstance(record, dict):
            self.add(
                doc_id=default_id,
                text=json.dumps(record, ensure_ascii=False, default=str)[:10_000],
                source=source,
                reject="not_an_object",
                detail=f"a JSON {type(record).__name__}, not an object",
            )
            return
        doc_id = record.get(p.id_field) if p.id_field else None
        doc_id = default_id if doc_id is None else str(doc_id)
        src = record.get(p.source_field) if p.source_field else None
        src = source if src is None else str(src)
        text = record.get(p.text_field)
        if text is None:
            self.add(
                doc_id=doc_id,
                text=json.dumps(record, ensure_ascii=False, default=str)[:10_000],
                source=src,
                extra=record,
                reject="missing_text",
                detail=f"no {p.text_field!r} field",
            )
        elif not isinstance(text, str):
            self.add(
                doc_id=doc_id,
                text=json.dumps(text, ensure_ascii=False, default=str)[:10_000],
                source=src,
                extra=record,
                reject="non_string_text",
                detail=f"{p.text_field!r} is a {type(text).__name__}",
            )
        else:
            self.add(doc_id=doc_id, text=text, source=src, extra=record)

    def full(self) -> bool:
        return len(self) >= self.params.batch_docs or self.nbytes >= self.params.batch_bytes

    def flush(self) -> pa.Table:
        table = pa.table({k: _string_array(v) for k, v in self.cols.items()})
        self._reset()
        return table


def _string_array(values: list[str | None]) -> pa.Array:
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:  # a lone surrogate somewhere in the column
        return pa.array([v if v is None else _clean_surrogates(v) for v in values], pa.string())


def _clean_surrogates(text: str) -> str:
    # Lone surrogates (from JSON escapes such as "\ud800") cannot be encoded to UTF-8 for Parquet.
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def too_large(nbytes: int, limit: int) -> str:
    """The detail of a ``too_large`` row: the document's UTF-8 bytes against the limit, both in bytes."""
    return f"{nbytes} bytes exceed max_doc_bytes={limit}"


def quarantine_file(shard: Shard, reason: str, detail: str, params: SourceParams) -> pa.Table:
    """One row standing for a file (or its unreadable rest), so the event is counted and visible."""
    b = BatchBuilder(params)
    b.add(doc_id=f"{shard.key}#{reason}", text="", source=shard.key, reject=reason, detail=detail)
    return b.flush()
