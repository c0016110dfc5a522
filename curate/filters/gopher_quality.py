"""Gopher quality heuristics (Rae et al. 2021, table A1), as datatrove 0.10's ``GopherQualityFilter``.

Columns (``gopher_quality_v1.<field>``): ``word_count`` (words with a non-punctuation character),
``avg_word_length`` (their mean length), ``hash_ratio`` and ``ellipsis_ratio`` (``#`` and ``...``/``…``
per word, all words), ``bullet_lines_ratio``, ``end_ellipsis_lines_ratio``, ``alpha_words_ratio``
(words with a letter, over all words) and ``stop_words`` (distinct stop words present).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Scorer
from curate.filters._text import PY_SPACE, SPLITLINES_SEP, doc_frame, splitlines_count
from curate.filters.words import Splitter, split_words
from curate.filters.words_en import spacy_english

STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]


FIELDS = (
    "word_count",
    "avg_word_length",
    "hash_ratio",
    "ellipsis_ratio",
    "bullet_lines_ratio",
    "end_ellipsis_lines_ratio",
    "alpha_words_ratio",
    "stop_words",
)


@dataclass
class GopherQualityParams:
    """Thresholds as datatrove's defaults; ``None`` switches a check off.

    Attributes:
        min_doc_words: fewest words (with a non-punctuation character) a document may have.
        max_doc_words: most such words.
        min_avg_word_length: lowest mean length of those words.
        max_avg_word_length: highest mean length.
        max_symbol_word_ratio: most ``#`` (and, separately, ``...``/``…``) per word.
        max_bullet_lines_ratio: largest share of lines starting with ``•`` or ``-``.
        max_ellipsis_lines_ratio: largest share of lines ending with ``...`` or ``…``.
        max_non_alpha_words_ratio: smallest share of words with a letter (datatrove's name kept).
        min_stop_words: fewest distinct stop words present.
        stop_words: the stop words (case-sensitive, as datatrove).
        splitter: word splitter, ``en`` (datatrove parity) or ``generic`` (see curate.filters.words).
    """

    min_doc_words: int | None = field(default=50, metadata=bounds(0))
    max_doc_words: int | None = 100000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = field(default=0.1, metadata=bounds(0, 1))
    max_bullet_lines_ratio: float | None = field(default=0.9, metadata=bounds(0, 1))
    max_ellipsis_lines_ratio: float | None = field(default=0.3, metadata=bounds(0, 1))
    max_non_alpha_words_ratio: float | None = field(default=0.8, metadata=bounds(0, 1))
    min_stop_words: int | None = 2
    stop_words: list[str] = field(default_factory=lambda: list(STOP_WORDS))
    splitter: Splitter = "en"


@STAGES.add("gopher_quality_v1")
class GopherQuality(Scorer):
    """Gopher's document quality heuristics: word counts and lengths, symbols, bullets, stop words."""

    Params = GopherQualityParams

    def setup(self) -> None:
        if self.params.splitter == "en":
            spacy_english()

    def output_fields(self) -> list[str]:
        return list(FIELDS)

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        p: GopherQualityParams = self.params
        docs = doc_frame(table)
        n = docs.height
        words = split_words(docs, p.splitter)
        doc = words.get_column("doc").to_numpy()
        flags = words.get_column("flags").to_numpy()
        nonsym = (flags & 1).astype(np.float64)
        # distinct stop words per doc: stop-word rows only, one per (doc, word)
        stops = (
            words.lazy()
            .filter(pl.col("word").is_in(p.stop_words))
            .group_by("doc")
            .agg(stop_words=pl.col("word").n_unique())
            .collect()
        )
        n_stop = np.zeros(n, dtype=np.int64)
        n_stop[stops.get_column("doc").to_numpy()] = stops.get_column("stop_words").to_numpy()
        per_word = {
            "n_words": np.bincount(doc, minlength=n).astype(np.float64),
            "word_count": np.bincount(doc, weights=nonsym, minlength=n),
            "len_sum": np.bincount(doc, weights=nonsym * words.get_column("chars").to_numpy(), minlength=n),
            "n_alpha": np.bincount(doc, weights=(flags >> 1).astype(np.float64), minlength=n),
        }
        t = pl.col("text")
        norm = t.str.replace_all(SPLITLINES_SEP, "\n")
        not_nl = f"[{PY_SPACE}--\\n]"
        per_doc = docs.lazy().select(
            "doc",
            hashes=t.str.count_matches("#", literal=True),
            ellipses=t.str.count_matches("...", literal=True) + t.str.count_matches("…", literal=True),
            bullets=norm.str.count_matches(f"(?m)^{not_nl}*[•-]"),
            end_ellipses=norm.str.count_matches(f"(?m)(?:\\.\\.\\.|…){not_nl}*$"),
            lines=splitlines_count(t),
        )
        out = per_doc.collect()
        assert out.height == n  # one row per doc, in doc order (a projection of docs)
        f = {c: out.get_column(c).to_numpy().astype(np.float64) for c in out.columns} | per_word
        with np.errstate(divide="ignore", invalid="ignore"):
            n_words = f["n_words"]
            lines = f["lines"]
            return {
                "word_count": pa.array(f["word_count"].astype(np.int64)),
                "avg_word_length": pa.array(f["len_sum"] / f["word_count"]),
                "hash_ratio": pa.array(f["hashes"] / n_words),
                "ellipsis_ratio": pa.array(f["ellipses"] / n_words),
                "bullet_lines_ratio": pa.array(f["bullets"] / lines),
                "end_ellipsis_lines_ratio": pa.array(f["end_ellipses"] / lines),
                "alpha_words_ratio": pa.array(f["n_alpha"] / n_words),
                "stop_words": pa.array(n_stop),
            }

    def reference_rules(self) -> list[Rule]:
        """datatrove's checks, in its order, with its reason names (without the ``gopher_`` prefix)."""
        p: GopherQualityParams = self.params
        c = self.label
        spec = [
            ("word_count", "min", p.min_doc_words, "short_doc"),
            ("word_count", "max", p.max_doc_words, "long_doc"),
            ("avg_word_length", "min", p.min_avg_word_length, "below_avg_threshold"),
            ("avg_word_length", "max", p.max_avg_word_length, "above_avg_threshold"),
            ("hash_ratio", "max", p.max_symbol_word_ratio, "too_many_hashes"),
            ("ellipsis_ratio", "max", p.max_symbol_word_ratio, "too_many_ellipsis"),
            ("bullet_lines_ratio", "max", p.max_bullet_lines_ratio, "too_many_bullets"),
            ("end_ellipsis_lines_ratio", "max", p.max_ellipsis_lines_ratio, "too_many_end_ellipsis"),
            ("alpha_words_ratio", "min", p.max_non_alpha_words_ratio, "below_alpha_threshold"),
            ("stop_words", "min", p.min_stop_words, "enough_stop_words"),
        ]
        # datatrove skips a check whose threshold is falsy (None or 0).
        return [
            Rule(column=f"{c}.{col}", **{bound: float(v)}, reason=reason)  # type: ignore[arg-type]
            for col, bound, v, reason in spec
            if v
        ]
