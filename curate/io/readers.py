"""Readers of files: JSON Lines (plain, .gz, .zst), Parquet, .txt folders; and :func:`read_table`.

Hugging Face datasets are read by :mod:`curate.io.hf_reader`, WARC files by :mod:`curate.io.warc_reader`.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core import schema
from curate.core.registry import SOURCES
from curate.io.sources import (
    DETAIL,
    BatchBuilder,
    Shard,
    Source,
    SourceError,
    SourceParams,
    files_to_shards,
    quarantine_file,
    too_large,
)
from curate.io.storage import open_input


def open_binary(path: str) -> IO[bytes]:
    """Open a possibly compressed file (a local path or a URL) for binary reading, by extension (.gz, .zst)."""
    if path.endswith(".gz"):
        if "://" in path:  # an object: the stream is not a file descriptor, closing it is not needed
            return gzip.GzipFile(fileobj=open_input(path), mode="rb")  # type: ignore[return-value]
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if path.endswith(".zst") or path.endswith(".zstd"):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(
            open_input(path), read_across_frames=True, closefd=True
        )
    return open_input(path)


def read_errors() -> tuple[type[BaseException], ...]:
    """The errors a truncated or corrupt (compressed) file raises while it is read."""
    errors: list[type[BaseException]] = [EOFError, OSError, zlib.error, gzip.BadGzipFile]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def _iter_lines(f: IO[bytes]) -> Iterator[bytes]:
    buffered = f if isinstance(f, io.BufferedIOBase) and hasattr(f, "readline") else io.BufferedReader(f)  # type: ignore[type-var]
    while True:
        line = buffered.readline()
        if not line:
            return
        yield line


def _add_line(b: BatchBuilder, raw: bytes, default_id: str, where: str, source: str) -> None:
    """One line of a JSON Lines file as a row: its record, or a quarantined row saying why not. A blank
    line is no document but is a line of the file: it is counted too (``blank_line``), with its place."""
    if not raw.strip():
        b.add(doc_id=default_id, text="", source=source, reject="blank_line", detail=f"{where} is blank")
        return
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        text = raw.decode("utf-8", "replace")
        b.add(doc_id=default_id, text=text, source=source, reject="invalid_utf8", detail=str(e))
        return
    try:
        record = json.loads(line)
    except ValueError as e:
        b.add(
            doc_id=default_id,
            text=line[:100_000],
            source=source,
            reject="malformed_json",
            detail=str(e)[:200],
        )
        return
    b.add_record(record, default_id=default_id, source=source)


@SOURCES.add("jsonl")
class JsonlSource(Source):
    """One JSON object per line; ``.gz`` and ``.zst`` are decompressed on the fly.

    Ids default to ``<file>:<line>`` (1-based) when the record has no ``id_field``.
    """

    extensions = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".json.gz", ".ndjson", ".jsonl.zstd")

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        p: SourceParams = self.params
        b = BatchBuilder(p)
        n = 0
        try:
            f = open_binary(shard.path)
        except OSError as e:
            yield from self._unreadable(shard, e)
            return
        lineno = 0
        try:
            with f:
                for lineno, raw in enumerate(_iter_lines(f), start=1):
                    if p.limit is not None and n >= p.limit:
                        break
                    n += 1
                    default_id = f"{shard.key}:{lineno}"
                    raw = raw.rstrip(b"\r\n")
                    _add_line(b, raw, default_id, f"{shard.key}: line {lineno}", shard.key)
                    if b.full():
                        yield b.flush()
        except read_errors() as e:
            if lineno == 0 and not len(b):
                yield from self._unreadable(shard, e)
                return
            # A truncated or corrupt compressed stream: keep what was read, count the loss.
            if len(b):
                yield b.flush()
            yield quarantine_file(
                shard, "truncated_file", f"{shard.path}: stopped after line {lineno}: {e}", p
            )
            return
        if len(b):
            yield b.flush()

    def _unreadable(self, shard: Shard, e: BaseException) -> Iterator[pa.Table]:
        if self.params.on_error == "quarantine":
            yield quarantine_file(shard, "unreadable_file", f"{shard.path}: {e}", self.params)
            return
        raise SourceError(
            f"{shard.path}: cannot read: {e} (set input.on_error: quarantine to count and skip it)"
        ) from e


def table_to_rows(table: pa.Table, shard: Shard, params: SourceParams, first_row: int) -> pa.Table:
    """Map an Arrow table with arbitrary columns to base columns, quarantining unusable rows."""
    n = table.num_rows
    names = table.column_names
    if params.text_field not in names:
        raise SourceError(
            f"{shard.path}: no column {params.text_field!r}; columns: {', '.join(names)} "
            f"(set input.text_field)"
        )
    text = table.column(params.text_field)
    reject: list[str | None] = [None] * n
    detail: list[str | None] = [None] * n
    if not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
        reject = ["quarantine:non_string_text"] * n
        detail = [f"{params.text_field!r} column is {text.type}"] * n
        text = (
            pc.cast(text, pa.string())
            if pa.types.is_integer(text.type) or pa.types.is_floating(text.type)
            else pa.array([json.dumps(v, default=str) for v in text.to_pylist()], pa.string())
        )
    text = text.cast(pa.string())
    if params.id_field and params.id_field in names:
        ids = pc.cast(table.column(params.id_field), pa.string())
    else:
        ids = pa.array([f"{shard.key}:{first_row + i}" for i in range(n)], pa.string())
    if params.source_field and params.source_field in names:
        src = pc.fill_null(pc.cast(table.column(params.source_field), pa.string()), shard.key)
    else:
        src = pa.array([shard.key] * n, pa.string())
    texts = text.to_pylist()
    limit = params.max_doc_bytes
    nbytes = pc.binary_length(text).to_pylist()  # UTF-8 bytes (null for a null text)
    for i, t in enumerate(texts):
        if reject[i]:
            continue
        if t is None:
            reject[i], detail[i] = "quarantine:missing_text", f"{params.text_field!r} is null"
        elif not t.strip():
            reject[i], detail[i] = "quarantine:empty_text", "text is empty or whitespace only"
        elif nbytes[i] > limit:
            reject[i], detail[i] = "quarantine:too_large", too_large(nbytes[i], limit)
    cols: dict[str, Any] = {schema.ID: ids, schema.TEXT: pc.fill_null(text, ""), schema.SOURCE: src}
    for k in params.keep_fields:
        if k in (schema.ID, schema.TEXT, schema.SOURCE):
            continue
        cols[k] = pc.cast(table.column(k), pa.string()) if k in names else pa.nulls(n, pa.string())
    cols[schema.REJECT] = pa.array(reject, pa.string())
    cols[DETAIL] = pa.array(detail, pa.string())
    return pa.table(cols)


@SOURCES.add("parquet")
class ParquetSource(Source):
    """Parquet files, read in record batches (memory stays bounded by ``batch_docs``)."""

    extensions = (".parquet",)

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        p: SourceParams = self.params
        try:
            f = pq.ParquetFile(open_input(shard.path) if "://" in shard.path else shard.path)
        except (OSError, pa.ArrowInvalid) as e:
            if p.on_error == "quarantine":
                yield quarantine_file(shard, "unreadable_file", f"{shard.path}: {e}", p)
                return
            raise SourceError(f"{shard.path}: cannot read Parquet: {e}") from e
        row = 0
        for batch in f.iter_batches(batch_size=p.batch_docs):
            table = pa.Table.from_batches([batch])
            if p.limit is not None:
                table = table.slice(0, max(0, p.limit - row))
            if table.num_rows == 0:
                break
            yield table_to_rows(table, shard, p, row)
            row += table.num_rows


@SOURCES.add("text")
class TextSource(Source):
    """A folder (or glob) of ``.txt`` files, one document per file; the id is the relative path."""

    extensions = (".txt",)

    def shards(self) -> list[Shard]:
        # Group small files so that a folder of 100k files is not 100k tasks.
        files = files_to_shards(self.params.path, self.extensions)
        per = max(1, self.params.batch_docs)
        return [
            Shard(
                i,
                files[i * per].path,
                files[i * per].key,
                extra=(("files", tuple((s.path, s.key) for s in files[i * per : (i + 1) * per])),),
            )
            for i in range((len(files) + per - 1) // per)
        ]

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        p: SourceParams = self.params
        b = BatchBuilder(p)
        files = dict(shard.extra)["files"]
        for path, key in files[: p.limit] if p.limit is not None else files:
            try:
                with open_input(path) as fh:
                    raw = fh.read()
            except OSError as e:
                if p.on_error != "quarantine":
                    raise SourceError(f"{path}: cannot read: {e}") from e
                b.add(doc_id=key, text="", source=key, reject="unreadable_file", detail=str(e))
                continue
            try:
                b.add(doc_id=key, text=raw.decode("utf-8"), source=key)
            except UnicodeDecodeError as e:
                b.add(
                    doc_id=key,
                    text=raw.decode("utf-8", "replace"),
                    source=key,
                    reject="invalid_utf8",
                    detail=str(e),
                )
            if b.full():
                yield b.flush()
        if len(b):
            yield b.flush()


def read_table(path: str, *, fmt: str = "jsonl", limit: int | None = None, **params: Any) -> pa.Table:
    """Read a whole (small) input into one table, quarantined rows included (tests, benchmarks, notebooks).

    Example: ``read_table("../shared/corpora/web/c4_en.jsonl.gz", limit=500)``.
    """
    from curate.core.registry import build_params

    cls = SOURCES.get(fmt)
    src = cls(build_params(cls.Params, {"path": path, "limit": limit, **params}, where=f"read_table({fmt})"))
    tables = [t for shard in src.shards() for t in src.read(shard)]
    if not tables:
        return pa.table(
            {
                schema.ID: pa.array([], pa.string()),
                schema.TEXT: pa.array([], pa.string()),
                schema.SOURCE: pa.array([], pa.string()),
            }
        )
    return pa.concat_tables(tables, promote_options="permissive")
