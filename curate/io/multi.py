"""Several input sources read as one: ``input:`` as a list of sources.

Each entry of the list is a source of its own (``format``, ``path``, ``text_field``, ``id_field``, ...)
with a ``name``. :class:`MultiSource` lists every source's shards in the list's order, numbered as one
sequence, so a run has one work unit per shard of every source and the global input order
(``schema.ORDER``) that every dedup uses to choose survivors covers all of them: a document found in
two sources is kept in the earlier one.

Rows are labelled by their source: the ``source`` column holds the entry's ``name`` (whatever the file
holds under ``source_field``), and the ``id`` is ``<name>/<id>``, so ids from different sources never
collide. Every batch carries the union of the sources' ``keep_fields`` (null where a source has none),
so every part of the run has the same columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.io.sources import DETAIL, Shard, Source

# A name is kept in every row's ``source`` column and prefixes ids and shard keys.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SEP = "/"  # between a source's name and a row's id or a shard's key


@dataclass(frozen=True)
class Part:
    """One entry of a list ``input:``: its ``name``, registry ``format`` and built source params."""

    name: str
    format: str
    params: Any


@dataclass
class MultiParams:
    """The params of a list ``input:``: one :class:`Part` per source, in the list's order."""

    parts: list[Part] = field(default_factory=list)

    @property
    def keep_fields(self) -> list[str]:
        """The union of the sources' ``keep_fields``, in first-seen order."""
        out: list[str] = []
        for p in self.parts:
            out += [f for f in getattr(p.params, "keep_fields", []) if f not in out]
        return out


class MultiSource(Source):
    """Several sources as one: their shards in order, their rows labelled with the source's name."""

    name = "multi"
    Params = MultiParams

    def __init__(self, params: MultiParams, sources: list[Source]) -> None:
        super().__init__(params)
        self.sources = dict(zip((p.name for p in params.parts), sources, strict=True))
        self.costly_read = any(s.costly_read for s in sources)  # type: ignore[misc]
        self._shards: list[Shard] | None = None

    def shards(self) -> list[Shard]:
        """Every source's shards, in the list's order, numbered as one sequence; a shard's key is
        ``<name>/<key>`` and its ``extra`` holds the source's name and the source's own shard."""
        if self._shards is None:
            out: list[Shard] = []
            for name, src in self.sources.items():
                for s in src.shards():
                    extra = (("source", name), ("shard", s))
                    out.append(Shard(len(out), s.path, f"{name}{SEP}{s.key}", extra=extra))
            self._shards = out
        return self._shards

    @staticmethod
    def origin(shard: Shard) -> tuple[str, Shard]:
        """The source's name and its own shard behind one of this source's shards."""
        extra = dict(shard.extra)
        return extra["source"], extra["shard"]

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        name, inner = self.origin(shard)
        for table in self.sources[name].read(inner):
            yield self._labelled(table, name)

    def may_hold(self, shard: Shard, name: str) -> bool:
        """A shard holds rows of its own source's name only."""
        return self.origin(shard)[0] == name

    def fingerprint(self) -> list[dict[str, Any]]:
        """Each source's fingerprint entries, with its name."""
        return [{"source": n, **f} for n, src in self.sources.items() for f in src.fingerprint()]

    def _labelled(self, table: pa.Table, name: str) -> pa.Table:
        """``table`` with the ``source`` column set to ``name``, ids prefixed with it, and the union of
        the keep fields in one order (null where this source has none)."""
        n = table.num_rows
        ids = pc.binary_join_element_wise(
            pa.array([name] * n, pa.string()), table.column(schema.ID).cast(pa.string()), SEP
        )
        cols: dict[str, Any] = {
            schema.ID: ids,
            schema.TEXT: table.column(schema.TEXT),
            schema.SOURCE: pa.array([name] * n, pa.string()),
        }
        for k in self.params.keep_fields:
            if k not in cols:
                cols[k] = table.column(k) if k in table.column_names else pa.nulls(n, pa.string())
        for k in (schema.REJECT, DETAIL):
            cols[k] = table.column(k) if k in table.column_names else pa.nulls(n, pa.string())
        return pa.table(cols)


def each_source(source: Source) -> list[tuple[str | None, Source]]:
    """The sources behind ``source`` with their names: several for a list ``input:``, else itself
    (name None). For checks that look at every source's files (formats, fields)."""
    if isinstance(source, MultiSource):
        return list(source.sources.items())
    return [(None, source)]
