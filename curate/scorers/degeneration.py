"""``degeneration_v1``: signals of degenerate (looping, collapsed, cut-off) generations.

Words are lowercased runs of ``\\w`` characters. Fields (one row each, never dropped):

* ``distinct_1``, ``distinct_2``: distinct word uni-/bigrams over all of them (Li et al. 2016); 1.0
  when the text has too few words to form one.
* ``repeated_4gram_frac``: fraction of word 4-gram positions whose 4-gram occurs more than once in the
  document (first occurrence included); 0.0 without a 4-gram.
* ``zlib_ratio``: UTF-8 bytes / zlib-compressed bytes (level 6); loops compress well (high ratio).
* ``repeated_opening_frac``: fraction of sentences whose first two words open another sentence of the
  same document too ("The ... The ..."); sentences end at ``.!?`` followed by space or at a line break;
  only sentences with two or more words count; 0.0 with fewer than two such sentences.
* ``truncated_ending``: the text (trailing space removed) does not end in ``. ! ? …`` or a closing
  quote or bracket: a generation cut off by the token limit.

Everything but zlib is vectorized: tokens are dictionary-encoded, n-grams hashed with numpy, and
repeats counted by sorting ``(document, n-gram)`` keys.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.select import Rule
from curate.core.stage import Scorer

_MULT = np.uint64(0x9E3779B97F4A7C15)
_END = r"[.!?…\"'”’»)\]]$"


def _flat_words(text: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Word ids (dictionary codes) and their document index, in document order."""
    words = pc.utf8_split_whitespace(pc.replace_substring_regex(pc.utf8_lower(text), r"[^\w]+", " "))
    flat = pc.list_flatten(words)
    doc = np.asarray(pc.list_parent_indices(words).to_numpy(zero_copy_only=False), dtype=np.int64)
    keep = np.asarray(pc.greater(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False), dtype=bool)
    codes = (
        pc.dictionary_encode(flat).combine_chunks().indices
        if isinstance(flat, pa.ChunkedArray)
        else pc.dictionary_encode(flat).indices
    )
    ids = np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.uint64)
    return ids[keep], doc[keep]


def ngram_keys(ids: np.ndarray, doc: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashed word n-grams that do not cross documents, with their document index."""
    if len(ids) < n:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    m = len(ids) - n + 1
    key = ids[:m].copy()
    with np.errstate(over="ignore"):
        for k in range(1, n):
            key = key * _MULT + ids[k : k + m] + np.uint64(k)
    same = doc[:m] == doc[n - 1 :]
    return key[same], doc[:m][same]


def group_counts(doc: np.ndarray, key: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document: total keys, distinct keys, and keys whose value occurs at least twice.

    One ``uint64`` sort of ``doc << 40 | key mod 2^40`` (documents < 2^24 per batch); two different
    n-grams of one document collide with probability ~ n^2 / 2^41 (below 1e-6 for 1,000 n-grams).
    """
    total = np.bincount(doc, minlength=n_docs)
    if len(key) == 0:
        zero = np.zeros(n_docs, np.int64)
        return total, zero, zero
    s = np.sort((doc.astype(np.uint64) << np.uint64(40)) | (key & np.uint64((1 << 40) - 1)))
    start = np.r_[True, s[1:] != s[:-1]]
    sizes = np.diff(np.r_[np.flatnonzero(start), len(s)])
    gdoc = (s[start] >> np.uint64(40)).astype(np.int64)
    distinct = np.bincount(gdoc, minlength=n_docs)
    repeated = np.bincount(gdoc, weights=np.where(sizes >= 2, sizes, 0), minlength=n_docs).astype(np.int64)
    return total, distinct, repeated


def _ratio(num: np.ndarray, den: np.ndarray, empty: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), empty)


def _openings(text: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A code for the first two words of every sentence with two or more words, and its document."""
    marked = pc.replace_substring_regex(text, r"([.!?]+)\s+", "\\1\n")
    sentences = pc.split_pattern(marked, "\n")
    flat = pc.list_flatten(sentences)
    doc = np.asarray(pc.list_parent_indices(sentences).to_numpy(zero_copy_only=False), dtype=np.int64)
    m = pc.extract_regex(pc.utf8_lower(flat), r"^\W*(?P<w1>\w+)[^\w]+(?P<w2>\w+)")
    valid = np.asarray(pc.is_valid(m).to_numpy(zero_copy_only=False), dtype=bool)
    opening = pc.binary_join_element_wise(pc.struct_field(m, "w1"), pc.struct_field(m, "w2"), " ")
    codes = pc.dictionary_encode(opening)
    codes = codes.combine_chunks() if isinstance(codes, pa.ChunkedArray) else codes
    ids = np.asarray(pc.fill_null(codes.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return ids[valid].astype(np.uint64), doc[valid]


def degeneration_signals(text: pa.Array | pa.ChunkedArray) -> dict[str, np.ndarray]:
    """All ``degeneration_v1`` fields for an Arrow string array (see the module docstring)."""
    text = pc.fill_null(text, "")
    n = len(text)
    ids, doc = _flat_words(text)
    out: dict[str, np.ndarray] = {}
    for k in (1, 2):
        keys, kdoc = ngram_keys(ids, doc, k)
        total, distinct, _ = group_counts(kdoc, keys, n_docs=n)
        out[f"distinct_{k}"] = _ratio(distinct, total, 1.0)
    keys, kdoc = ngram_keys(ids, doc, 4)
    total, _, repeated = group_counts(kdoc, keys, n_docs=n)
    out["repeated_4gram_frac"] = _ratio(repeated, total, 0.0)
    raw = [t.encode("utf-8") for t in text.to_pylist()]
    size = np.fromiter((len(b) for b in raw), np.float64, count=n)
    packed = np.fromiter((len(zlib.compress(b, 6)) for b in raw), np.float64, count=n)
    out["zlib_ratio"] = size / packed
    oid, odoc = _openings(text)
    total, _, repeated = group_counts(odoc, oid, n_docs=n)
    out["repeated_opening_frac"] = np.where(total >= 2, _ratio(repeated, total, 0.0), 0.0)
    ended = pc.match_substring_regex(pc.utf8_rtrim_whitespace(text), _END)
    out["truncated_ending"] = ~np.asarray(ended.to_numpy(zero_copy_only=False), dtype=bool)
    return out


@dataclass
class DegenerationParams:
    """Reference thresholds for ``filter:`` (None disables a check), checked in this order:
    ``max_repeated_4gram_frac``, ``max_zlib_ratio``, ``min_distinct_1``, ``max_repeated_opening_frac``,
    and ``reject_truncated`` (reject texts with a truncated ending). Defaults, measured on 1,500 docs
    each: they reject 2-3% of WebText and C4, 5% of Wikipedia (list-like stubs) and 39% of GLM-10B
    continuations (see benchmarks/RESULTS-scorers.md)."""

    max_repeated_4gram_frac: float | None = 0.3
    max_zlib_ratio: float | None = 4.0
    min_distinct_1: float | None = None
    max_repeated_opening_frac: float | None = 0.7
    reject_truncated: bool = False


@STAGES.add("degeneration_v1")
class Degeneration(Scorer):
    """Repetition, compressibility, lexical diversity, repeated openings and truncation of each text."""

    Params = DegenerationParams

    def output_fields(self) -> list[str]:
        return [
            "distinct_1",
            "distinct_2",
            "repeated_4gram_frac",
            "zlib_ratio",
            "repeated_opening_frac",
            "truncated_ending",
        ]

    def score(self, table: pa.Table) -> dict[str, Any]:
        sig = degeneration_signals(table.column(schema.TEXT))
        return {k: pa.array(v, pa.bool_() if v.dtype == bool else pa.float64()) for k, v in sig.items()}

    def reference_rules(self) -> list[Rule]:
        p: DegenerationParams = self.params
        col = lambda f: schema.column_name(self.label, f)  # noqa: E731
        rules = []
        if p.max_repeated_4gram_frac is not None:
            rules.append(
                Rule(col("repeated_4gram_frac"), max=p.max_repeated_4gram_frac, reason="repeated_ngrams")
            )
        if p.max_zlib_ratio is not None:
            rules.append(Rule(col("zlib_ratio"), max=p.max_zlib_ratio, reason="compressible"))
        if p.min_distinct_1 is not None:
            rules.append(Rule(col("distinct_1"), min=p.min_distinct_1, reason="low_distinct"))
        if p.max_repeated_opening_frac is not None:
            rules.append(
                Rule(
                    col("repeated_opening_frac"), max=p.max_repeated_opening_frac, reason="repeated_openings"
                )
            )
        if p.reject_truncated:
            rules.append(Rule(col("truncated_ending"), equals=False, reason="truncated"))
        return rules
