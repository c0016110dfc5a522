"""FineWeb quality heuristics, as datatrove 0.10's ``FineWebQualityFilter``.

Columns (``fineweb_quality_v1.<field>``): ``lines`` (non-blank lines), ``line_punct_ratio`` (lines ending
in terminal punctuation), ``short_line_ratio`` (lines of at most ``short_line_length`` characters),
``char_dup_ratio`` (characters in duplicate lines over characters other than newlines) and
``list_ratio`` (newlines per word).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Scorer
from curate.filters._text import PY_SPACE, TERMINAL_PUNCT_END, doc_frame, duplicate_stats
from curate.filters.words import Splitter, split_words
from curate.filters.words_en import spacy_english


@dataclass
class FineWebQualityParams:
    """Thresholds as datatrove's defaults.

    Attributes:
        line_punct_thr: smallest share of lines ending in terminal punctuation.
        line_punct_exclude_zero: keep documents where no line ends in punctuation (datatrove's switch).
        short_line_thr: largest share of short lines.
        short_line_length: a line of at most this many characters is short.
        char_duplicates_ratio: largest share of characters in duplicate lines.
        new_line_ratio: most newlines per word.
        splitter: word splitter, ``en`` (datatrove parity) or ``generic``.
    """

    line_punct_thr: float = field(default=0.12, metadata=bounds(0, 1))
    line_punct_exclude_zero: bool = False
    short_line_thr: float = field(default=0.67, metadata=bounds(0, 1))
    short_line_length: int = 30
    char_duplicates_ratio: float = field(default=0.01, metadata=bounds(0, 1))
    new_line_ratio: float = field(default=0.3, metadata=bounds(0, 1))
    splitter: Splitter = "en"


@STAGES.add("fineweb_quality_v1")
class FineWebQuality(Scorer):
    """FineWeb's line-level quality heuristics: punctuation, short lines, duplicate lines, lists."""

    Params = FineWebQualityParams

    def setup(self) -> None:
        if self.params.splitter == "en":
            spacy_english()

    def output_fields(self) -> list[str]:
        return ["lines", "line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"]

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        p: FineWebQualityParams = self.params
        docs = doc_frame(table)
        n = docs.height
        t = pl.col("text")
        lines = (
            docs.lazy()
            .select("doc", piece=t.str.split("\n"))
            .explode("piece")
            .filter(pl.col("piece").str.contains(f"[^{PY_SPACE}]"))
            .collect()
        )
        per_line = (
            lines.lazy()
            .group_by("doc")
            .agg(
                lines=pl.len(),
                punct=pl.col("piece").str.contains(TERMINAL_PUNCT_END).sum(),
                short=(pl.col("piece").str.len_chars() <= p.short_line_length).sum(),
            )
            .collect()
        )
        dups = duplicate_stats(lines, n)
        per_doc = docs.select(
            "doc",
            newlines=t.str.count_matches("\n", literal=True),
            chars=t.str.len_chars() - t.str.count_matches("\n", literal=True),
        )
        words = split_words(docs, p.splitter).group_by("doc").agg(n_words=pl.len())
        out = (
            per_doc.join(per_line, on="doc", how="left", maintain_order="left")
            .join(words, on="doc", how="left", maintain_order="left")
            .fill_null(0)
        )
        f = {c: out.get_column(c).to_numpy().astype(np.float64) for c in out.columns}
        with np.errstate(divide="ignore", invalid="ignore"):
            punct = f["punct"] / f["lines"]
            if p.line_punct_exclude_zero:
                punct = np.where(punct == 0, np.inf, punct)
            return {
                "lines": pa.array(out.get_column("lines").to_numpy().astype(np.int64)),
                "line_punct_ratio": pa.array(punct),
                "short_line_ratio": pa.array(f["short"] / f["lines"]),
                "char_dup_ratio": pa.array(dups.get_column("dup_chars").to_numpy() / f["chars"]),
                "list_ratio": pa.array(f["newlines"] / f["n_words"]),
            }

    def reference_rules(self) -> list[Rule]:
        """datatrove's checks in its order, with its reason names."""
        p: FineWebQualityParams = self.params
        c = self.label
        return [
            Rule(column=f"{c}.lines", min=1, reason="empty"),
            Rule(column=f"{c}.line_punct_ratio", min=p.line_punct_thr, reason="line_punct_ratio"),
            Rule(column=f"{c}.short_line_ratio", max=p.short_line_thr, reason="short_line_ratio"),
            Rule(column=f"{c}.char_dup_ratio", max=p.char_duplicates_ratio, reason="char_dup_ratio"),
            Rule(column=f"{c}.list_ratio", max=p.new_line_ratio, reason="list_ratio"),
        ]
