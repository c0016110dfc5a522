"""Gopher repetition heuristics (Rae et al. 2021, table A1), as datatrove 0.10's ``GopherRepetitionFilter``.

Columns (``gopher_repetition_v1.<field>``): ``length`` (characters), ``dup_para_frac``,
``dup_para_char_frac``, ``dup_line_frac``, ``dup_line_char_frac``, ``top_<n>_gram_char_frac`` and
``dup_<n>_gram_char_frac``, all as fractions of the document as datatrove computes them.

N-grams are compared by 64-bit hashes of their word sequences (collisions are negligible). The
duplicated-n-gram scan of datatrove skips the words of a found duplicate; we replay that scan exactly,
but only at positions whose n-gram occurred earlier in the document (the others cannot change it).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from curate.filters._text import PY_SPACE_CHARS, doc_frame, duplicate_stats
from curate.filters.words import Splitter, spacy_english, split_words
from curate.registry import STAGES
from curate.select import Rule
from curate.stage import Scorer

_MIX = np.uint64(0x9E3779B97F4A7C15)
_MULT = np.uint64(0xBF58476D1CE4E5B9)


@dataclass
class GopherRepetitionParams:
    """Thresholds as datatrove's defaults (fractions; ``None`` switches a check off).

    Attributes:
        dup_line_frac: most duplicate lines over lines.
        dup_para_frac: most duplicate paragraphs over paragraphs.
        dup_line_char_frac: most characters in duplicate lines over characters.
        dup_para_char_frac: most characters in duplicate paragraphs over characters.
        top_n_grams: ``[n, max fraction]`` pairs for the most frequent n-gram's characters.
        dup_n_grams: ``[n, max fraction]`` pairs for characters in duplicated n-grams.
        splitter: word splitter, ``en`` (datatrove parity) or ``generic``.
    """

    dup_line_frac: float | None = 0.3
    dup_para_frac: float | None = 0.3
    dup_line_char_frac: float | None = 0.2
    dup_para_char_frac: float | None = 0.2
    top_n_grams: list[list[float]] = field(default_factory=lambda: [[2, 0.2], [3, 0.18], [4, 0.16]])
    dup_n_grams: list[list[float]] = field(
        default_factory=lambda: [[5, 0.15], [6, 0.14], [7, 0.13], [8, 0.12], [9, 0.11], [10, 0.10]]
    )
    splitter: Splitter = "en"


@STAGES.add("gopher_repetition_v1")
class GopherRepetition(Scorer):
    """Gopher's repetition heuristics: duplicate lines/paragraphs and repeated n-grams."""

    Params = GopherRepetitionParams

    def setup(self) -> None:
        if self.params.splitter == "en":
            spacy_english()

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        p: GopherRepetitionParams = self.params
        docs = doc_frame(table)
        n = docs.height
        length = docs.get_column("text").str.len_chars().to_numpy().astype(np.float64)
        t = pl.col("text")
        paras = (
            docs.select(
                "doc", piece=t.str.strip_chars(PY_SPACE_CHARS).str.extract_all(r"[^\n]+(?:\n[^\n]+)*")
            )
            .explode("piece")
            .drop_nulls("piece")
        )
        pstats = duplicate_stats(paras, n)
        # re.split("\n+", text): split on "\n", drop empty pieces except the first and the last.
        lines = (
            docs.select("doc", piece=t.str.split("\n"))
            .explode("piece")
            .with_columns(
                keep=(pl.col("piece").str.len_bytes() > 0)
                | (pl.int_range(pl.len()).over("doc") == 0)
                | (pl.int_range(pl.len()).over("doc") == pl.len().over("doc") - 1)
            )
            .filter("keep")
        )
        lstats = duplicate_stats(lines, n)
        out: dict[str, np.ndarray] = {"length": length}
        with np.errstate(divide="ignore", invalid="ignore"):
            n_paras = np.maximum(pstats.get_column("n").to_numpy(), 1).astype(np.float64)
            out["dup_para_frac"] = pstats.get_column("dup_count").to_numpy() / n_paras
            out["dup_para_char_frac"] = pstats.get_column("dup_chars").to_numpy() / length
            out["dup_line_frac"] = (
                lstats.get_column("dup_count").to_numpy() / lstats.get_column("n").to_numpy()
            )
            out["dup_line_char_frac"] = lstats.get_column("dup_chars").to_numpy() / length
            words = split_words(docs, p.splitter).select(
                "doc", h=pl.col("word").hash(seed=7), ln=pl.col("word").str.len_chars()
            )
            doc = words.get_column("doc").to_numpy().astype(np.int64)
            h = words.get_column("h").to_numpy()
            ln = words.get_column("ln").to_numpy().astype(np.int64)
            for k, _ in p.top_n_grams:
                out[f"top_{int(k)}_gram_char_frac"] = _top_ngram_chars(doc, h, ln, int(k), n) / length
            for k, _ in p.dup_n_grams:
                out[f"dup_{int(k)}_gram_char_frac"] = _dup_ngram_chars(doc, h, ln, int(k), n) / length
        return {k: pa.array(v) for k, v in out.items()}

    def reference_rules(self) -> list[Rule]:
        """datatrove's checks in its order, with its reason names."""
        p: GopherRepetitionParams = self.params
        c = self.label
        rules = [Rule(column=f"{c}.length", min=1, reason="empty")]
        for col, v in [
            ("dup_para_frac", p.dup_para_frac),
            ("dup_para_char_frac", p.dup_para_char_frac),
            ("dup_line_frac", p.dup_line_frac),
            ("dup_line_char_frac", p.dup_line_char_frac),
        ]:
            if v:
                rules.append(Rule(column=f"{c}.{col}", max=float(v), reason=col))
        for k, v in p.top_n_grams:
            rules.append(
                Rule(column=f"{c}.top_{int(k)}_gram_char_frac", max=float(v), reason=f"top_{int(k)}_gram")
            )
        for k, v in p.dup_n_grams:
            rules.append(
                Rule(
                    column=f"{c}.dup_{int(k)}_gram_char_frac",
                    max=float(v),
                    reason=f"duplicated_{int(k)}_n_grams",
                )
            )
        return rules


def _ngrams(doc: np.ndarray, h: np.ndarray, ln: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Start positions, hashes (doc mixed in) and joined-without-separator lengths of all k-grams."""
    m = len(h) - k + 1
    if m <= 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.astype(np.uint64), e
    g = h[:m].copy()
    for j in range(1, k):
        g = g * _MULT + h[j : j + m]
    g ^= doc[:m].astype(np.uint64) * _MIX
    valid = doc[:m] == doc[k - 1 : k - 1 + m]
    csum = np.concatenate([[0], np.cumsum(ln)])
    chars = csum[k : k + m] - csum[:m]
    pos = np.nonzero(valid)[0]
    return pos, g[pos], chars[pos]


def _top_ngram_chars(doc: np.ndarray, h: np.ndarray, ln: np.ndarray, k: int, n_docs: int) -> np.ndarray:
    """Per doc: characters of the most frequent k-gram (" "-joined) times its count; first seen wins ties.

    Docs with fewer than k words get 0 (datatrove skips the check for them)."""
    pos, g, chars = _ngrams(doc, h, ln, k)
    out = np.zeros(n_docs, dtype=np.float64)
    if len(pos) == 0:
        return out
    _, inverse, counts = np.unique(g, return_inverse=True, return_counts=True)
    cnt = counts[inverse]
    gdoc = doc[pos]
    starts = np.flatnonzero(np.r_[True, gdoc[1:] != gdoc[:-1]])
    seg_max = np.maximum.reduceat(cnt, starts)
    seg_id = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(gdoc)]))
    # Positions are in text order, so the first position holding a most frequent k-gram is that k-gram's
    # first occurrence, and it comes before the first occurrence of any other equally frequent one.
    hits = np.flatnonzero(cnt == seg_max[seg_id])
    _, first_hit = np.unique(seg_id[hits], return_index=True)
    top = hits[first_hit]
    out[gdoc[top]] = (chars[top] + (k - 1)) * cnt[top]
    return out


def _dup_ngram_chars(doc: np.ndarray, h: np.ndarray, ln: np.ndarray, k: int, n_docs: int) -> np.ndarray:
    """datatrove's ``find_all_duplicate``: characters of k-grams seen before, skipping past each one."""
    pos, g, chars = _ngrams(doc, h, ln, k)
    out = np.zeros(n_docs, dtype=np.float64)
    if len(pos) == 0:
        return out
    _, first_idx, inverse = np.unique(g, return_index=True, return_inverse=True)
    is_first = np.zeros(len(g), dtype=bool)
    is_first[first_idx] = True
    cand = np.nonzero(~is_first)[0]
    if len(cand) == 0:
        return out
    first_pos = pos[first_idx][inverse]  # position of each k-gram's first occurrence (same doc: hash has doc)
    cand_doc = doc[pos[cand]]
    bounds = np.nonzero(np.diff(cand_doc))[0] + 1
    for group in np.split(cand, bounds):
        d = int(doc[pos[group[0]]])
        out[d] = _replay(
            pos[group].tolist(), g[group].tolist(), first_pos[group].tolist(), chars[group].tolist(), k
        )
    return out


def _replay(cpos: list[int], cg: list[int], cfirst: list[int], cchars: list[int], k: int) -> int:
    """Replay datatrove's scan over the candidate positions (k-grams with an earlier occurrence)."""
    next_idx = -1
    starts: list[int] = []
    added: set[int] = set()
    repeated = 0
    for p, gg, f, ch in zip(cpos, cg, cfirst, cchars, strict=True):
        if p < next_idx:
            continue  # inside the words skipped after a duplicate: never visited, never added
        j = bisect_left(starts, f) - 1
        first_visited = not (j >= 0 and starts[j] < f < starts[j] + k)
        if first_visited or gg in added:
            repeated += ch
            starts.append(p)
            next_idx = p + k
        else:
            added.add(gg)
    return repeated
