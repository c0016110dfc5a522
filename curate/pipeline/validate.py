"""Checks that catch a wrong pipeline before any work, and a run that produced nothing after it.

Types and unknown keys are checked by the registry when the YAML is parsed; this module adds what needs
more than one key at a time:

* every ``select`` rule's column is produced by a stage before it (or kept from the input);
* the input files look like ``input.format`` (a Parquet file read as JSON lines quarantines every row);
* a finished run that kept nothing, or quarantined everything, is an error unless ``allow_empty: true``.
"""

from __future__ import annotations

import gzip
from typing import Any

from curate.core import schema
from curate.core.errors import closest

PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class EmptyRunError(RuntimeError):
    """A run kept no document, or quarantined every one (and ``allow_empty`` is off)."""


def check_select_columns(stages: list[Any], spec_index: list[int], input_fields: list[str], err: Any) -> None:
    """Every ``select:`` rule names a column that a stage before it adds, or an input field.

    ``stages`` are the built stages, ``spec_index[i]`` the ``stages:`` entry stage ``i`` came from. A
    column ``<label>.<field>`` is checked against the fields that stage declares
    (:meth:`~curate.core.stage.Scorer.output_fields`); stages that cannot say ahead are not checked.
    """
    from curate.core.select import Select
    from curate.core.stage import FilterStage, Scorer

    available = {schema.ID, schema.TEXT, schema.SOURCE, *input_fields}
    unknown_labels: set[str] = set()  # stages whose fields are not known ahead
    later: dict[str, int] = {}  # label -> entry of a stage that comes later
    for st, i in zip(stages, spec_index, strict=True):
        later.setdefault(st.label, i)
    for st, i in zip(stages, spec_index, strict=True):
        if isinstance(st, FilterStage):
            st = st.scorer  # a filter adds its scorer's columns; its own rules test them
        if isinstance(st, Scorer):
            fields = st.output_fields()
            if fields is None:
                unknown_labels.add(st.label)
            else:
                available.update(schema.column_name(st.label, f) for f in fields)
        elif isinstance(st, Select):
            for j, rule in enumerate(st.rules):
                col = rule.column
                prefix = col.split(".", 1)[0]
                if col in available or prefix in unknown_labels:
                    continue
                if prefix in later and later[prefix] > i:
                    msg = f"column {col!r} is added by stages[{later[prefix]}], after this select; move the select after it"
                elif any(c.startswith(prefix + ".") for c in available):
                    own = sorted(c for c in available if c.startswith(prefix + "."))
                    msg = f"{prefix} adds no column {col!r}{closest(col, own)}; its columns: {', '.join(own)}"
                else:
                    cols = sorted(available - {schema.ID, schema.TEXT, schema.SOURCE})
                    msg = (
                        f"no stage before this select adds column {col!r}{closest(col, cols)}; "
                        f"columns available: {', '.join(cols) or '(none)'}"
                    )
                raise err(("stages", i, "select", j, "column"), msg)


def sniff(path: str) -> bytes:
    """The first bytes of ``path`` (a local path or a URL), decompressed when it is gzip or zstd."""
    from curate.io.storage import open_input

    with open_input(path) as f:
        head = f.read(4096)
    try:
        if head.startswith(GZIP_MAGIC):
            with open_input(path) as f, gzip.GzipFile(fileobj=f, mode="rb") as g:
                return g.read(4096)
        if head.startswith(ZSTD_MAGIC):
            import zstandard

            with open_input(path) as f, zstandard.ZstdDecompressor().stream_reader(f) as z:
                return z.read(4096)
    except (OSError, EOFError, ImportError):
        return head  # a truncated or undecodable file: the reader quarantines it with the reason
    return head


def looks_like(head: bytes) -> str | None:
    """The format a file's first bytes show: ``parquet``, ``jsonl``, ``warc``, or None (unclear)."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith(b"WARC/"):
        return "warc"
    if head.lstrip()[:1] == b"{":
        return "jsonl"
    return None


def check_input_content(fmt: str, paths: list[str], *, limit: int = 3) -> None:
    """Raise ValueError when the first files clearly hold another format than ``input.format``."""
    if fmt not in ("jsonl", "parquet", "warc"):
        return
    for path in paths[:limit]:
        try:
            seen = looks_like(sniff(path))
        except OSError:
            continue  # unreadable: the reader reports it with on_error's policy
        if seen is not None and seen != fmt:
            raise ValueError(
                f"{path} looks like {seen}, but input.format is {fmt}; "
                f"set input.format: {seen} (or --set input.format={seen})"
            )
        if seen is None and fmt == "parquet":
            raise ValueError(
                f"{path} is not a Parquet file (no PAR1 header), but input.format is parquet; "
                "check input.path and input.format"
            )


def check_input_fields(source: Any, hint: str = "input", *, rows: int = 20) -> None:
    """Raise ValueError when the first file of ``source`` has no ``text_field`` (nor a set ``id_field``).

    Parquet and Hugging Face folders are checked on their columns, JSON lines on the keys of the first
    ``rows`` records (an error only when none of them has the field: a few rows without it are quarantined
    by the reader and counted). ``hint``: the config key the fix goes under (``input``, ``input[1]``).
    """
    fmt = source.name
    if fmt not in ("jsonl", "parquet", "hf"):
        return
    shards = source.shards()
    if not shards:
        return
    path = shards[0].path
    try:
        columns = _first_columns(source, shards[0], rows)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return  # unreadable or corrupt: the reader reports it with on_error's policy
    if columns is None:
        return
    p = source.params
    what = "field" if fmt == "jsonl" else "column"
    where = f" in its first {rows} records" if fmt == "jsonl" else ""
    for key, value, default in (("text_field", p.text_field, "text"), ("id_field", p.id_field, "id")):
        if value is None or value in columns or (key == "id_field" and value == default):
            continue  # an id field left at its default may be absent: ids are then <file>:<row>
        have = ", ".join(columns) or "none"
        raise ValueError(
            f"{path} has no {what} {value!r}{where} ({what}s: {have}){closest(value, columns)}; "
            f"set {hint}.{key}"
        )


def _first_columns(source: Any, shard: Any, rows: int) -> list[str] | None:
    """The column names of ``shard`` (the keys of its first ``rows`` JSON records, in first-seen order);
    None when they cannot be told (no JSON object among them)."""
    import json

    if source.name == "parquet":
        import pyarrow.parquet as pq

        from curate.io.storage import open_input

        with open_input(shard.path) as f:
            return list(pq.read_schema(f).names)
    if source.name == "hf":
        try:
            ds = source._load()
        except Exception:  # datasets raises many types: the reader reports a folder it cannot load
            return None
        return list(ds.column_names)
    from curate.io.readers import open_binary, read_errors

    seen: dict[str, None] = {}
    objects = 0
    lines: list[bytes] = []
    try:
        with open_binary(shard.path) as f:
            for _, line in zip(range(rows), f, strict=False):
                lines.append(line)
    except read_errors():
        pass  # a truncated file: the lines before the cut (the reader quarantines the rest, counted)
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a broken line is quarantined by the reader
        if isinstance(rec, dict):
            objects += 1
            seen.update(dict.fromkeys(rec))
    return list(seen) if objects else None


def check_not_empty(manifest: dict[str, Any], out: str) -> None:
    """Raise :class:`EmptyRunError` when a run kept no document or quarantined every one."""
    a = manifest["accounting"]
    reasons = manifest.get("removed_by_reason", {})
    top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    why = ", ".join(f"{r} {c:,}" for r, c in top)
    fix = "or set allow_empty: true (--set allow_empty=true) to accept an empty result"
    if a["input"] == 0:
        raise EmptyRunError(f"{out}: the input held no documents; check input.path, {fix}")
    if a["quarantined"] == a["input"]:
        inp = manifest["config"]["input"]
        fmts = [s.get("format") for s in (inp if isinstance(inp, list) else [inp])]
        if top and top[0][0] == "quarantine:missing_text":
            question = "is input.text_field right for these files?"
        else:
            question = f"is input.format ({', '.join(map(str, fmts))}) right for these files?"
        raise EmptyRunError(
            f"{out}: all {a['input']:,} documents were quarantined ({why}): {question} "
            f"See `curate inspect {out} --reason quarantine`, {fix}"
        )
    if a["kept"] == 0:
        raise EmptyRunError(
            f"{out}: kept 0 of {a['input']:,} documents ({why}); see `curate inspect {out}`, "
            f"loosen the thresholds, {fix}"
        )
