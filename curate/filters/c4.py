"""C4's heuristics (Raffel et al. 2020), as datatrove 0.10's ``C4QualityFilter``.

* ``c4_quality_v1`` (score/filter) decides per document: ``lorem_ipsum`` and ``curly_bracket`` are 1 when
  the first surviving line that settles the document has "lorem ipsum" or a ``{`` (datatrove stops at that
  line), and ``sentences`` counts the sentences (spaCy's sentencizer rules) of the lines C4 keeps.
* ``c4_lines_v1`` (transform) removes the lines C4 drops (a word over 1000 characters, no terminal
  punctuation or a final ``...``, under 3 words, "javascript", policy/cookie phrases), strips
  Wikipedia-style citations, records ``lines_removed`` and ``chars_removed`` and rejects documents left
  empty (reason ``c4_lines_v1:empty``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.rules import Rule
from curate.core.stage import Scorer, Transform, with_rejections
from curate.filters import native as N
from curate.filters._spacy import import_spacy
from curate.filters._text import PY_SPACE, PY_SPACE_CHARS, SPLITLINES_SEP, char_class, doc_frame
from curate.filters.words_en import chunk_tokens, spacy_english

CITATION = r"\[\d*]|\[edit]|\[citation needed]"
END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY_SUBSTRINGS = [
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
]


@dataclass
class C4Params:
    """C4's switches and limits, as datatrove's defaults (``-1`` disables a limit).

    Attributes:
        remove_citations: strip ``[1]``, ``[edit]``, ``[citation needed]`` from lines.
        filter_no_terminal_punct: drop lines not ending in ``. ? ! " '`` (or ending in ``...``).
        min_num_sentences: reject documents with fewer sentences in their kept lines.
        min_words_per_line: drop lines with fewer whitespace-separated words.
        max_word_length: drop lines with a longer word.
        filter_lorem_ipsum: reject documents with "lorem ipsum".
        filter_javascript: drop lines mentioning "javascript".
        filter_curly_bracket: reject documents with ``{``.
        filter_policy: drop lines with terms-of-use / privacy / cookie phrases.
    """

    remove_citations: bool = True
    filter_no_terminal_punct: bool = True
    min_num_sentences: int = 5
    min_words_per_line: int = 3
    max_word_length: int = 1000
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True


def c4_lines(docs: pl.DataFrame, p: C4Params) -> pl.DataFrame:
    """One row per line of ``str.splitlines()``: ``doc, line, survives, kept, event``.

    ``line`` is stripped and citation-free; ``survives`` passes the line checks before "lorem ipsum";
    ``kept`` is a line C4 keeps; ``event`` is ``lorem_ipsum``/``curly_bracket`` where the line settles
    the whole document.
    """
    t = pl.col("text")
    lines = (
        docs.lazy()
        .select("doc", raw=t.str.replace_all(SPLITLINES_SEP, "\n").str.split("\n"))
        .explode("raw")
        .with_columns(raw=pl.col("raw").str.strip_chars(PY_SPACE_CHARS))
    )
    raw = pl.col("raw")
    line = raw.str.replace_all(CITATION, "") if p.remove_citations else raw
    lines = lines.with_columns(line=line)
    ln = pl.col("line")
    low = ln.str.to_lowercase()
    drop = pl.lit(False)
    if p.max_word_length != -1:
        # Only lines longer than the limit can hold such a word: the others are searched as "".
        long = pl.when(raw.str.len_bytes() > p.max_word_length).then(raw).otherwise(pl.lit(""))
        drop = drop | long.str.contains(f"[^{PY_SPACE}]{{{p.max_word_length + 1}}}")
    if p.filter_no_terminal_punct:
        ends = pl.any_horizontal(ln.str.ends_with(e) for e in END_PUNCTUATION)
        drop = drop | ~ends | ln.str.ends_with("...")
    if p.min_words_per_line > 0:
        # The line is stripped, so it has n words when n-1 whitespace runs separate non-space characters;
        # the search stops at the n-th word instead of counting them all.
        n_words = f"^(?:[^{PY_SPACE}]+[{PY_SPACE}]+){{{p.min_words_per_line - 1}}}[^{PY_SPACE}]"
        drop = drop | ~raw.str.contains(n_words)
    lorem = low.str.contains("lorem ipsum", literal=True) if p.filter_lorem_ipsum else pl.lit(False)
    js = low.str.contains("javascript", literal=True) if p.filter_javascript else pl.lit(False)
    curly = ln.str.contains("{", literal=True) if p.filter_curly_bracket else pl.lit(False)
    policy = low.str.contains_any(POLICY_SUBSTRINGS) if p.filter_policy else pl.lit(False)
    return lines.select(
        "doc",
        "line",
        survives=~drop,
        kept=~drop & ~lorem & ~js & ~curly & ~policy,
        event=pl.when(~drop & lorem)
        .then(pl.lit("lorem_ipsum"))
        .when(~drop & ~js & curly)
        .then(pl.lit("curly_bracket")),
    ).collect()


def sentence_counts(lines: pl.Series) -> np.ndarray:
    """``len(split_into_sentences(line))`` for each line: spaCy-en tokens and the sentencizer's rule.

    spaCy's sentencizer starts a sentence at a token that is neither punctuation nor one of its
    ``punct_chars`` when such a ``punct_chars`` token (``.``, ``!``, ``?``...) came since the last sentence
    start. With tokens classed ``P`` (a ``punct_chars`` token), ``Q`` (other punctuation) and ``W``
    (anything else, including a whitespace run other than one space, which spaCy keeps as a token), and
    the ``Q`` dropped (they never change the state), a line has 1 sentence plus one per ``W`` right after
    a ``P``. Only chunks holding a ``punct_chars`` character need spaCy's tokens (once per distinct chunk);
    any other chunk is one ``W`` if it has a character outside ``\\p{P}``, else nothing.
    """
    if len(lines) == 0:
        return np.zeros(0, dtype=np.int64)
    return _sentence_counts_native(lines) if N.enabled() else sentence_counts_polars(lines)


def sentence_counts_polars(lines: pl.Series) -> np.ndarray:
    """:func:`sentence_counts` by polars expressions (the path where the native module is not built)."""
    if len(lines) == 0:
        return np.zeros(0, dtype=np.int64)
    c = pl.col("chunk")
    # A whitespace run other than one space becomes its own chunk, a stand-in that classes as W.
    spaced = pl.col("text").str.replace_all(f"[{PY_SPACE}]{{2,}}|[{PY_SPACE}--\\x20]", f" {_WS_TOKEN} ")
    pieces = (
        pl.DataFrame({"text": lines})
        .with_row_index("line")
        .lazy()
        .select("line", chunk=spaced.str.split(" "))
        .explode("chunk")
        .with_columns(has_p=c.str.contains(_punct_chars()))
        .collect()
    )
    classes = _chunk_classes(pieces.filter("has_p").get_column("chunk").unique(maintain_order=True))
    simple = pl.when(c.str.contains(r"[^\p{P}]")).then(pl.lit(_W)).otherwise(pl.lit(0, dtype=pl.Int8))
    rows = (
        pieces.lazy()
        .join(classes.lazy(), on="chunk", how="left", maintain_order="left")
        .select(
            "line",
            first=pl.when("has_p").then("first").otherwise(simple),
            last=pl.when("has_p").then("last").otherwise(simple),
            inner=pl.col("inner").fill_null(0),
        )
        .filter(pl.col("first") != 0)
        .collect()
    )
    line = rows.get_column("line").to_numpy().astype(np.int64)
    first, last = rows.get_column("first").to_numpy(), rows.get_column("last").to_numpy()
    cross = (last[:-1] == _P) & (first[1:] == _W) & (line[:-1] == line[1:])
    out = 1 + np.bincount(line, weights=rows.get_column("inner").to_numpy(), minlength=len(lines))
    out += np.bincount(line[1:][cross], minlength=len(lines))
    return out.astype(np.int64)


_P, _W = 1, 2
_WS_TOKEN = "\ue000"


def _sentence_counts_native(lines: pl.Series) -> np.ndarray:
    """:func:`sentence_counts` by the native module (curate/filters/_native.c): the same classes and
    rule over the same spaCy-en tokens, from the per-process chunk cache the word split fills."""
    native = spacy_english().native
    assert native is not None
    return native.sentences(lines.fill_null(""), _sentence_tables())


@functools.cache
def _sentence_tables() -> Any:
    """The native tables for sentence counts: spaCy's sentencizer ``punct_chars`` and the characters of
    polars' ``\\p{P}`` (the class the polars path tests), over every code point."""
    import_spacy()  # without torch
    from spacy.pipeline import Sentencizer

    codes = np.arange(0x110000, dtype="<u4")
    codes = codes[(codes < 0xD800) | (codes > 0xDFFF)]  # no surrogates in a str
    every = codes.tobytes().decode("utf-32-le")
    punct = pl.Series([every]).str.extract_all(r"\p{P}").explode()
    return N.module().sentence_tables(
        sorted(ord(ch) for ch in Sentencizer.default_punct_chars), sorted(ord(ch) for ch in punct)
    )


@functools.cache
def _punct_chars() -> str:
    """A regex class of spaCy's sentencizer ``punct_chars`` (all single characters)."""
    import_spacy()  # without torch
    from spacy.pipeline import Sentencizer

    return char_class(Sentencizer.default_punct_chars)


def _chunk_classes(chunks: pl.Series) -> pl.DataFrame:
    """``chunk, first, last, inner`` for distinct chunks: the class (``_P``/``_W``; 0 when only ``Q``) of
    the first and last non-``Q`` token and the number of ``W`` right after a ``P`` inside the chunk."""
    tok = pl.col("tok")
    return (
        chunk_tokens(pl.DataFrame({"chunk": chunks}))
        .lazy()
        .select("chunk", tok=pl.col("words"))
        .explode("tok")
        .drop_nulls("tok")
        .select(
            "chunk",
            cls=pl.when(tok.str.contains(f"^{_punct_chars()}$"))
            .then(pl.lit("P"))
            .when(tok.str.contains(r"^\p{P}+$"))
            .then(pl.lit(""))
            .otherwise(pl.lit("W")),
        )
        .group_by("chunk")
        .agg(pl.col("cls").str.join(""))
        .select(
            "chunk",
            first=_class_code(pl.col("cls").str.head(1)),
            last=_class_code(pl.col("cls").str.tail(1)),
            inner=pl.col("cls").str.count_matches("PW", literal=True).cast(pl.Float64),
        )
        .collect()
    )


def _class_code(letter: pl.Expr) -> pl.Expr:
    return pl.when(letter == "P").then(pl.lit(_P, pl.Int8)).when(letter == "W").then(pl.lit(_W, pl.Int8))


@STAGES.add("c4_quality_v1")
class C4Quality(Scorer):
    """C4's document-level decision: lorem ipsum, curly brackets, too few sentences in kept lines."""

    Params = C4Params

    def setup(self) -> None:
        spacy_english()

    def output_fields(self) -> list[str]:
        return ["lorem_ipsum", "curly_bracket", "sentences"]

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        p: C4Params = self.params
        docs = doc_frame(table)
        n = docs.height
        lines = c4_lines(docs, p)
        events = lines.filter(pl.col("event").is_not_null()).group_by("doc").agg(pl.col("event").first())
        ev = np.full(n, None, dtype=object)
        ev[events.get_column("doc").to_numpy()] = events.get_column("event").to_numpy()
        kept = lines.filter("kept")
        sentences = np.zeros(n, dtype=np.int64)
        if p.min_num_sentences != -1:
            counts = sentence_counts(kept.get_column("line"))
            np.add.at(sentences, kept.get_column("doc").to_numpy().astype(np.int64), counts)
        return {
            "lorem_ipsum": pa.array((ev == "lorem_ipsum").astype(np.int8)),
            "curly_bracket": pa.array((ev == "curly_bracket").astype(np.int8)),
            "sentences": pa.array(sentences),
        }

    def reference_rules(self) -> list[Rule]:
        """datatrove's reasons: the line that settles a document first, then the sentence count."""
        c = self.label
        rules = [
            Rule(column=f"{c}.lorem_ipsum", max=0, reason="lorem_ipsum"),
            Rule(column=f"{c}.curly_bracket", max=0, reason="curly_bracket"),
        ]
        if self.params.min_num_sentences != -1:
            rules.append(
                Rule(column=f"{c}.sentences", min=self.params.min_num_sentences, reason="too_few_sentences")
            )
        return rules


@STAGES.add("c4_lines_v1")
class C4Lines(Transform):
    """Removes the lines C4 drops; rejects documents left empty; records what each document lost."""

    Params = C4Params

    def process(self, table: pa.Table) -> pa.Table:
        p: C4Params = self.params
        docs = doc_frame(table)
        lines = c4_lines(docs, p)
        # Lines that only settle a whole document (lorem ipsum, "{") stay: c4_quality_v1 judges them.
        keep = pl.col("survives") & ~(
            (pl.col("line").str.to_lowercase().str.contains("javascript", literal=True) & p.filter_javascript)
            | (pl.col("line").str.to_lowercase().str.contains_any(POLICY_SUBSTRINGS) & p.filter_policy)
        )
        agg = lines.group_by("doc", maintain_order=True).agg(
            total=pl.len(),
            kept_n=keep.sum(),
            text=pl.col("line").filter(keep).str.join("\n"),
        )
        base = docs.select("doc", old="text").join(agg, on="doc", how="left", maintain_order="left")
        base = base.with_columns(
            text=pl.col("text").fill_null("").str.strip_chars(PY_SPACE_CHARS),
            total=pl.col("total").fill_null(0),
            kept_n=pl.col("kept_n").fill_null(0),
        )
        # str.splitlines() gives no line for "" and none after a final line break.
        n_lines = base.select(
            n=pl.col("old").str.replace_all(SPLITLINES_SEP, "\n").str.count_matches("\n", literal=True)
            + 1
            - pl.col("old").str.replace_all(SPLITLINES_SEP, "\n").str.ends_with("\n").cast(pl.UInt32)
        ).get_column("n")
        n_lines = pl.Series(
            np.where(base.get_column("old").str.len_bytes().to_numpy() == 0, 0, n_lines.to_numpy())
        )
        new_text = base.get_column("text")
        removed_lines = (n_lines - base.get_column("kept_n")).clip(lower_bound=0).cast(pl.Int64)
        removed_chars = (base.get_column("old").str.len_chars() - new_text.str.len_chars()).cast(pl.Int64)
        reasons = pl.when(new_text.str.len_bytes() == 0).then(pl.lit(f"{self.label}:empty"))
        reason_arr = pl.select(reasons.otherwise(None)).to_series().to_arrow()
        out = table.set_column(table.column_names.index(schema.TEXT), schema.TEXT, new_text.to_arrow())
        return with_rejections(
            out,
            reason_arr,
            **{
                schema.column_name(self.label, "lines_removed"): removed_lines.to_arrow(),
                schema.column_name(self.label, "chars_removed"): removed_chars.to_arrow(),
            },
        )
