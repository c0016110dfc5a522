"""Boilerplate removal: lines (or paragraphs) repeated in many documents of the corpus.

A corpus-wide count is needed, so this is a global stage that *rewrites* text: ``collect`` hashes the
distinct normalized lines of each document (lower-cased, whitespace collapsed; blank lines never
count), ``reduce`` counts, through a shuffle on the line hash, in how many documents each line occurs,
and ``apply`` removes the lines found in at least ``min_docs`` documents (optionally keeping them in
the first document, in input order, that has them). Documents left shorter than ``min_chars`` after a
removal are rejected as ``line_dedup_v1:too_short``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.stage import GlobalStage, with_rejections
from curate.dedup import _common as c

if TYPE_CHECKING:
    from curate.core.engine import Engine

log = logging.getLogger(__name__)
LINES = "lines"
SEPARATORS = {"line": "\n", "paragraph": "\n\n"}


@dataclass
class LineDedupParams:
    """``min_docs``: a line is boilerplate when it occurs in at least this many documents.
    ``unit``: ``line`` (split on newlines) or ``paragraph`` (split on blank lines).
    ``keep_first``: keep the line in the first document (input order) that has it.
    ``min_line_chars``: shorter lines (after normalization) are never counted nor removed.
    ``min_chars``: a document left shorter than this after removals is rejected (``too_short``)."""

    min_docs: int = 3
    unit: Literal["line", "paragraph"] = "line"
    keep_first: bool = False
    min_line_chars: int = 2
    min_chars: int = 50
    seed: int = 0
    num_partitions: int | None = None


@dataclass
class LineState:
    """Sorted hashes of boilerplate lines, and (``keep_first``) the id of the first document of each."""

    hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    first_ids: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    doc_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    facts: dict[str, Any] = field(default_factory=dict)


def _reduce_lines(min_docs: int) -> Any:
    def reduce(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if c.empty_reduce_input(table):
            return np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
        df = pl.DataFrame(pl.from_arrow(table.select([c.KEY, c.ORDER])))
        g = df.group_by(c.KEY).agg(pl.len().alias("n"), pl.col(c.ORDER).min().alias("first"))
        g = g.filter(pl.col("n") >= min_docs).sort(c.KEY)
        return g[c.KEY].to_numpy(), g["first"].to_numpy(), g["n"].to_numpy().astype(np.int64)

    return reduce


@STAGES.add("line_dedup_v1")
class LineDedup(GlobalStage):
    """Removes lines repeated across at least ``min_docs`` documents (menus, cookie banners, footers).

    Adds ``<label>.lines_removed`` and ``<label>.chars_removed``; rejects documents left too short.
    """

    Params = LineDedupParams

    def _lines(self, table: pa.Table) -> pl.DataFrame:
        """One row per line: ``doc`` index, raw ``line``, its normalized ``hash`` and ``count`` flag."""
        p: LineDedupParams = self.params
        sep = SEPARATORS[p.unit]
        df = pl.DataFrame({"t": pl.Series(table.column(schema.TEXT)).fill_null("")}).with_row_index("doc")
        df = df.select("doc", pl.col("t").str.split(sep).alias("line")).explode("line")
        norm = pl.col("line").fill_null("").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
        df = df.with_columns(norm.alias("norm"))
        df = df.with_columns(
            pl.col("norm").hash(seed=p.seed).alias("hash"),
            (pl.col("norm").str.len_chars() >= max(1, p.min_line_chars)).alias("counts"),
        )
        return df.drop("norm")

    def collect(self, table: pa.Table) -> pa.Table:
        df = self._lines(table).filter(pl.col("counts")).select("doc", "hash").unique(maintain_order=True)
        lens = (
            np.bincount(df["doc"].to_numpy(), minlength=table.num_rows)
            if len(df)
            else np.zeros(table.num_rows, np.int64)
        )
        off = np.zeros(table.num_rows + 1, np.int32)
        np.cumsum(lens, out=off[1:])
        values = pa.array(df["hash"].to_numpy().astype(np.uint64), pa.uint64())
        return pa.table({**c.base_keys(table), LINES: pa.ListArray.from_arrays(pa.array(off), values)})

    def reduce(self, key_paths: list[str], engine: Engine) -> LineState:
        p: LineDedupParams = self.params
        long = c.explode_keys(key_paths, engine, key_col=LINES, suffix=f"{self.label}.lines")
        parts = c.shuffle_groups(
            long, engine, _reduce_lines(p.min_docs), num_partitions=p.num_partitions, desc=self.label
        )
        hashes = np.concatenate([r[0] for r in parts]).astype(np.uint64)
        first = np.concatenate([r[1] for r in parts]).astype(np.uint64)
        counts = np.concatenate([r[2] for r in parts])
        idx = np.argsort(hashes)
        hashes, first, counts = hashes[idx], first[idx], counts[idx]
        first_ids = pa.array([], pa.string())
        if p.keep_first and len(first):
            uniq, inv = np.unique(first, return_inverse=True)
            first_ids = (
                c.lookup(key_paths, uniq, engine).column(schema.ID).combine_chunks().take(pa.array(inv))
            )
        facts = {
            "boilerplate_lines": len(hashes),
            "min_docs": p.min_docs,
            "max_docs_per_line": int(counts.max()) if len(counts) else 0,
        }
        log.info("%s: %s", self.label, facts)
        return LineState(hashes=hashes, first_ids=first_ids, doc_counts=counts, facts=facts)

    def apply(self, table: pa.Table, state: LineState) -> pa.Table:
        p: LineDedupParams = self.params
        sep = SEPARATORS[p.unit]
        n = table.num_rows
        df = self._lines(table)
        h = df["hash"].to_numpy().astype(np.uint64)
        pos = np.searchsorted(state.hashes, h)
        pos_c = np.minimum(pos, max(len(state.hashes) - 1, 0))
        hit = (
            (state.hashes[pos_c] == h) & df["counts"].to_numpy()
            if len(state.hashes)
            else np.zeros(len(h), bool)
        )
        if p.keep_first and hit.any():
            ids = np.asarray(c.id_column(table).to_pylist(), dtype=object)
            doc = df["doc"].to_numpy()
            first = np.asarray(state.first_ids.to_pylist(), dtype=object)
            hit &= ids[doc] != first[pos_c]
        doc = df["doc"].to_numpy()
        removed = np.bincount(doc[hit], minlength=n)
        kept = (
            df.filter(pl.Series(~hit)).group_by("doc", maintain_order=True).agg(pl.col("line").str.join(sep))
        )
        text = np.full(n, "", dtype=object)
        new = kept["line"].to_numpy()
        text[kept["doc"].to_numpy()] = new
        changed = removed > 0
        old = table.column(schema.TEXT).to_numpy(zero_copy_only=False)
        rebuilt = pl.Series(text[changed].astype(str)).str.replace_all(r"\n{3,}", "\n\n").str.strip_chars()
        final = old.astype(object)
        final[changed] = rebuilt.to_numpy()
        final_arr = pa.array(final, pa.string())
        chars = pc.subtract(
            pc.utf8_length(table.column(schema.TEXT).combine_chunks()), pc.utf8_length(final_arr)
        )
        short = changed & (pc.utf8_length(pc.utf8_trim_whitespace(final_arr)).to_numpy() < p.min_chars)
        out = table.set_column(table.column_names.index(schema.TEXT), schema.TEXT, final_arr)
        out = with_rejections(out, c.reasons(short, f"{self.label}:too_short"))
        for name, arr in (
            (f"{self.label}.lines_removed", pa.array(removed.astype(np.int64))),
            (f"{self.label}.chars_removed", chars.cast(pa.int64())),
        ):
            out = (
                out.append_column(name, arr)
                if name not in out.column_names
                else out.set_column(out.column_names.index(name), name, arr)
            )
        return out

    def summary(self, state: LineState) -> dict[str, Any]:
        return dict(state.facts)
