"""Gopher repetition heuristics (Rae et al. 2021, table A1), as datatrove 0.10's ``GopherRepetitionFilter``.

Columns (``gopher_repetition_v1.<field>``): ``length`` (characters), ``dup_para_frac``,
``dup_para_char_frac``, ``dup_line_frac``, ``dup_line_char_frac``, ``top_<n>_gram_char_frac`` and
``dup_<n>_gram_char_frac``, all as fractions of the document as datatrove computes them.

N-grams are compared by 64-bit hashes of their word sequences (collisions are negligible), grouped one
size at a time (2, 3, ... 10) by one hash grouping each, and each size only over the positions whose shorter
n-gram repeats (a k-gram can only repeat where its (k-1)-gram does). The duplicated-n-gram scan of
datatrove skips the words of a found duplicate; we replay that scan exactly, but only at positions whose
n-gram occurred earlier in the document (the others cannot change it).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Scorer
from curate.filters import native as N
from curate.filters._text import PY_SPACE_CHARS, doc_frame, duplicate_stats
from curate.filters.words import Splitter, split_words
from curate.filters.words_en import spacy_english

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

    dup_line_frac: float | None = field(default=0.3, metadata=bounds(0, 1))
    dup_para_frac: float | None = field(default=0.3, metadata=bounds(0, 1))
    dup_line_char_frac: float | None = field(default=0.2, metadata=bounds(0, 1))
    dup_para_char_frac: float | None = field(default=0.2, metadata=bounds(0, 1))
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

    def output_fields(self) -> list[str]:
        p: GopherRepetitionParams = self.params
        fixed = ["length", "dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac"]
        tops = [f"top_{int(k)}_gram_char_frac" for k, _ in p.top_n_grams]
        return fixed + tops + [f"dup_{int(k)}_gram_char_frac" for k, _ in p.dup_n_grams]

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        p: GopherRepetitionParams = self.params
        docs = doc_frame(table)
        n = docs.height
        length = docs.get_column("text").str.len_chars().to_numpy().astype(np.float64)
        pstats, lstats = piece_stats(docs)
        out: dict[str, np.ndarray] = {"length": length}  # the fields output_fields() names
        with np.errstate(divide="ignore", invalid="ignore"):
            n_paras = np.maximum(pstats["n"], 1).astype(np.float64)
            out["dup_para_frac"] = pstats["dup_count"] / n_paras
            out["dup_para_char_frac"] = pstats["dup_chars"] / length
            out["dup_line_frac"] = lstats["dup_count"] / lstats["n"]
            out["dup_line_char_frac"] = lstats["dup_chars"] / length
            words = split_words(docs, p.splitter).select("doc", h=pl.col("word").hash(seed=7), ln="chars")
            doc = words.get_column("doc").to_numpy()
            h = words.get_column("h").to_numpy()
            ln = words.get_column("ln").to_numpy()
            tops, dups = [int(k) for k, _ in p.top_n_grams], [int(k) for k, _ in p.dup_n_grams]
            grams = ngram_chars(doc, h, ln, tops, dups, n)
            for k in tops:
                out[f"top_{k}_gram_char_frac"] = grams[("top", k)] / length
            for k in dups:
                out[f"dup_{k}_gram_char_frac"] = grams[("dup", k)] / length
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


def piece_stats(docs: pl.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Paragraph and line statistics of every doc (``doc, text``; doc is the row index): two dicts of
    ``n``, ``dup_count`` and ``dup_chars`` arrays, as :func:`curate.filters._text.duplicate_stats` gives them.

    Paragraphs are ``re.split(r"\\n{2,}", text.strip())``'s non-empty pieces, lines ``re.split("\\n+", text)``'s
    (empty pieces only first or last). By the native module where the filters take it (one pass per text),
    else by polars.
    """
    keys = ("n", "dup_count", "dup_chars")
    native = N.active()
    if native is not None:
        arr = N.large_strings(docs.get_column("text").to_arrow())
        counts = native.dup_pieces(N.offsets(arr), N.data(arr))
        table = np.frombuffer(counts, np.int64).reshape(docs.height, 6)
        return (
            {k: table[:, i] for i, k in enumerate(keys)},
            {k: table[:, 3 + i] for i, k in enumerate(keys)},
        )
    n = docs.height
    t = pl.col("text")
    paras = (
        docs.select("doc", piece=t.str.strip_chars(PY_SPACE_CHARS).str.extract_all(r"[^\n]+(?:\n[^\n]+)*"))
        .explode("piece")
        .drop_nulls("piece")
    )
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
    pstats, lstats = duplicate_stats(paras, n), duplicate_stats(lines, n)
    return (
        {k: pstats.get_column(k).to_numpy().astype(np.int64) for k in keys},
        {k: lstats.get_column(k).to_numpy().astype(np.int64) for k in keys},
    )


def ngram_chars(
    doc: np.ndarray, h: np.ndarray, ln: np.ndarray, tops: list[int], dups: list[int], n_docs: int
) -> dict[tuple[str, int], np.ndarray]:
    """:func:`_ngram_chars`, by the native module's kernel where the filters take it, else by numpy.

    The kernel takes the same hashes, levels and replay one document at a time in C; numpy groups the
    grams of the whole batch by their hash, the document mixed in. The numbers are the same unless two
    different grams of two documents share a 64-bit hash."""
    native = N.active()
    if native is None or max([*tops, *dups], default=0) < 2:
        return _ngram_chars(doc.astype(np.int64), h, ln.astype(np.int64), tops, dups, n_docs)
    arrays = native.ngram_chars(
        np.ascontiguousarray(doc, np.uint32),
        np.ascontiguousarray(h, np.uint64),
        np.ascontiguousarray(ln, np.uint32),
        n_docs,
        tops,
        dups,
    )
    values = [np.frombuffer(a, np.float64) for a in arrays]
    keys = [("top", k) for k in tops] + [("dup", k) for k in dups]
    return dict(zip(keys, values, strict=True))


def _ngram_chars(
    doc: np.ndarray, h: np.ndarray, ln: np.ndarray, tops: list[int], dups: list[int], n_docs: int
) -> dict[tuple[str, int], np.ndarray]:
    """Per doc, for every k in ``tops`` the top k-gram's characters and for every k in ``dups`` the
    duplicated k-gram characters: ``{("top", k): array, ("dup", k): array}``.

    k-grams are grouped size by size (k = 2, 3, ...), each size only over the positions whose
    (k-1)-gram and the (k-1)-gram one word later both occur at least twice in the document: every
    occurrence of a repeated k-gram starts with a repeated (k-1)-gram and ends with one, so counts and
    first occurrences >= 2 stay exact while the arrays shrink fast. A k-gram left out of a level occurs
    once in its document.
    """
    out: dict[tuple[str, int], np.ndarray] = {}
    k_max = max([*tops, *dups], default=0)
    n_words = len(h)
    words_per_doc = np.bincount(doc, minlength=n_docs)
    doc_start = np.zeros(n_docs, dtype=np.int64)
    np.cumsum(words_per_doc[:-1], out=doc_start[1:])
    csum = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(ln, out=csum[1:])
    g = h ^ (doc.astype(np.uint64) * _MIX)  # the doc is part of every k-gram's hash
    # Level 2 over all positions whose next word is in the same document (plain slices, no gathers).
    same_next = doc[1:] == doc[:-1]
    pos = np.flatnonzero(same_next)
    g = g[:-1][same_next] * _MULT + h[1:][same_next]
    rep_at = np.zeros(n_words + 1, dtype=bool)  # the (k-1)-gram starting at a position repeats
    for k in range(2, k_max + 1):
        if k > 2:  # extend a repeated (k-1)-gram by one word where the (k-1)-gram after it repeats too
            ok = rep_at[pos + 1]  # (so that one lies in the same document, and so does the k-gram)
            rep_at[pos] = False
            pos, g = pos[ok], g[ok] * _MULT + h[pos[ok] + (k - 1)]
        # Each k-gram's count and, for duplicated n-grams, its first position (rows are in text order), by
        # one hash grouping (3-9x cheaper than sorting the hashes).
        groups = {"cnt": pl.len().over("g")}
        if k in dups:
            groups["first"] = pl.col("pos").first().over("g")
        grouped = pl.DataFrame({"g": g, "pos": pos}).select(**groups)
        cnt = grouped.get_column("cnt").to_numpy().astype(np.int64)
        repeated = cnt >= 2
        if k in tops or k in dups:
            chars = csum[pos + k] - csum[pos]
        if k in tops:
            out[("top", k)] = _top_chars(doc, pos, cnt, chars, k, words_per_doc, doc_start, csum)
        if k in dups:
            first = grouped.get_column("first").to_numpy().astype(np.int64)
            out[("dup", k)] = _dup_chars(doc, pos, g, first, chars, k, n_docs)
        pos, g = pos[repeated], g[repeated]
        rep_at[pos] = True
    return out


def _top_chars(
    doc: np.ndarray,
    pos: np.ndarray,
    cnt: np.ndarray,
    chars: np.ndarray,
    k: int,
    words_per_doc: np.ndarray,
    doc_start: np.ndarray,
    csum: np.ndarray,
) -> np.ndarray:
    """Per doc: characters of the most frequent k-gram (" "-joined) times its count; first seen wins ties.

    Docs with fewer than k words get 0 (datatrove skips the check for them). Where every k-gram occurs
    once, the first k-gram of the document is the top one."""
    n_docs = len(words_per_doc)
    out = np.zeros(n_docs, dtype=np.float64)
    has = np.flatnonzero(words_per_doc >= k)
    s = doc_start[has]
    out[has] = csum[s + k] - csum[s] + (k - 1)
    rep = np.flatnonzero(cnt >= 2)
    if len(rep) == 0:
        return out
    rcnt, rdoc = cnt[rep], doc[pos[rep]]
    seg = np.flatnonzero(np.r_[True, rdoc[1:] != rdoc[:-1]])
    seg_max = np.maximum.reduceat(rcnt, seg)
    seg_id = np.repeat(np.arange(len(seg)), np.diff(np.r_[seg, len(rdoc)]))
    # Positions are in text order, so the first position holding a most frequent k-gram is that k-gram's
    # first occurrence, and it comes before the first occurrence of any other equally frequent one.
    hits = np.flatnonzero(rcnt == seg_max[seg_id])
    first_hit = hits[np.flatnonzero(np.r_[True, np.diff(seg_id[hits]) != 0])]
    top = rep[first_hit]
    out[doc[pos[top]]] = (chars[top] + (k - 1)) * cnt[top]
    return out


def _dup_chars(
    doc: np.ndarray,
    pos: np.ndarray,
    g: np.ndarray,
    first: np.ndarray,
    chars: np.ndarray,
    k: int,
    n_docs: int,
) -> np.ndarray:
    """datatrove's ``find_all_duplicate``: characters of k-grams seen before, skipping past each one."""
    out = np.zeros(n_docs, dtype=np.float64)
    cand = np.flatnonzero(first != pos)
    if len(cand) == 0:
        return out
    cand_doc = doc[pos[cand]]
    bounds = np.flatnonzero(np.diff(cand_doc)) + 1
    for group in np.split(cand, bounds):
        d = int(doc[pos[group[0]]])
        out[d] = _replay(
            pos[group].tolist(), g[group].tolist(), first[group].tolist(), chars[group].tolist(), k
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
