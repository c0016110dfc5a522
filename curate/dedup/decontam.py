"""Evaluation-set decontamination: word n-gram overlap (GPT-3 style, 13-grams) with held-out items.

Why a :class:`GlobalStage` and not a row Transform: the matching itself is row-level (each worker loads
the eval n-grams once in ``setup`` and ``collect`` marks its documents), but the manifest must say which
eval items were hit and how often across the whole corpus, and that needs one place that sees all
hits: ``reduce`` aggregates the (small) per-part hit tables. No text and no corpus n-gram travels.

Eval items are read from JSON Lines files (``eval_paths`` globs): every string field, and every string
in a list field (``query``, ``context``, ``choices``, ``continuation``, ``answer``, ``context_options``,
...), prompt labels such as ``Question:`` removed. Words are lower-cased ``\\w+`` runs, so case,
punctuation and whitespace/line wrapping never hide a match. A field with fewer than ``ngram`` words
but at least ``min_words`` is matched as one whole-field gram; shorter fields are too generic to use.
"""

from __future__ import annotations

import glob
import gzip
import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.stage import GlobalStage, with_rejections
from curate.dedup import _common as c
from curate.io import scratch

if TYPE_CHECKING:
    from curate.core.engine import Engine

log = logging.getLogger(__name__)
ITEMS = "items"
SKIP_FIELDS = {"gold", "category", "aliases", "label", "id", "idx"}
BITMAP_BITS = 26
LABELS = re.compile(r"\b(?:Question|Passage|Context|Answer|Choices)\s*:", re.IGNORECASE)


@dataclass
class DecontamParams:
    """``eval_paths``: globs of eval JSON Lines files (e.g. ``../shared/corpora/eval/*.jsonl.gz``).
    ``ngram``: words per gram (13, as GPT-3). ``min_words``: shorter fields match whole, down to this.
    ``mode``: ``reject`` contaminated documents, or ``strip`` the matching spans.
    ``min_chars``: in strip mode, a document left shorter than this is rejected."""

    eval_paths: list[str] = field(default_factory=list)
    ngram: int = field(default=13, metadata=bounds(1))
    min_words: int = 8
    mode: Literal["reject", "strip"] = "reject"
    min_chars: int = 200
    seed: int = 0


def item_texts(record: dict[str, Any]) -> list[str]:
    """The text fields of one eval record (strings and lists of strings), prompt labels removed."""
    out: list[str] = []
    for key, value in record.items():
        if key in SKIP_FIELDS:
            continue
        values = value if isinstance(value, list) else [value]
        out.extend(LABELS.sub(" ", v) for v in values if isinstance(v, str))
    return out


def load_eval_items(patterns: list[str]) -> tuple[list[str], list[list[str]]]:
    """Item names (``<file stem>:<line>``) and their text fields, from every file matching ``patterns``."""
    from curate.io.sources import expand_paths
    from curate.io.storage import is_remote, local_copy

    files = sorted(
        {
            f
            for p in patterns
            for f in (
                [local_copy(u) for u in expand_paths(p)] if is_remote(p) else glob.glob(os.path.expanduser(p))
            )
        }
    )
    if not files:
        raise FileNotFoundError(f"decontaminate: no eval file matches {patterns} (set params.eval_paths)")
    names, fields = [], []
    for path in files:
        stem = os.path.basename(path).split(".")[0]
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    names.append(f"{stem}:{i}")
                    fields.append(item_texts(json.loads(line)))
    return names, fields


@STAGES.add("decontaminate_v1")
class Decontaminate(GlobalStage):
    """Rejects (or strips) documents sharing a word n-gram with an evaluation item."""

    Params = DecontamParams
    _unpicklable = ("_grams", "_items", "_names", "_lengths", "_bitmap")

    def setup(self) -> None:
        p: DecontamParams = self.params
        names, fields = load_eval_items(p.eval_paths)
        texts, owner = [], []
        for i, fs in enumerate(fields):
            texts.extend(fs)
            owner.extend([i] * len(fs))
        tokens, off = c.word_hashes(pa.array(texts, pa.string()), seed=p.seed)
        self._grams, self._items, self._lengths = c.gram_index(
            tokens, off, np.asarray(owner, dtype=np.int64), ngram=p.ngram, min_words=p.min_words
        )
        self._names = names
        self._bitmap = np.zeros(1 << BITMAP_BITS, dtype=bool)
        self._bitmap[self._grams >> np.uint64(64 - BITMAP_BITS)] = True
        log.info(
            "%s: %d eval items, %d distinct grams (lengths %s)",
            self.label,
            len(names),
            len(self._grams),
            self._lengths,
        )

    def _matches(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """(document index, eval item index) of every matching gram, distinct pairs."""
        tokens, off = c.word_hashes(texts, seed=self.params.seed)
        docs, items = [], []
        for k in self._lengths:
            h, hoff = c.ngram_hashes(tokens, off, k, short=False)
            # A bitmap on the top bits rules out almost every gram before the (cache-unfriendly) search.
            cand = np.flatnonzero(self._bitmap[h >> np.uint64(64 - BITMAP_BITS)])
            pos = np.minimum(np.searchsorted(self._grams, h[cand]), max(len(self._grams) - 1, 0))
            hit = self._grams[pos] == h[cand]
            doc = np.repeat(np.arange(len(off) - 1), np.diff(hoff))
            docs.append(doc[cand[hit]])
            items.append(self._items[pos[hit]])
        pairs = np.unique(np.stack([np.concatenate(docs), np.concatenate(items)], axis=1), axis=0)
        return pairs[:, 0], pairs[:, 1]

    def collect(self, table: pa.Table) -> pa.Table:
        self.ensure_setup()
        doc, item = self._matches(table.column(schema.TEXT))
        off = np.zeros(table.num_rows + 1, np.int32)
        np.cumsum(np.bincount(doc, minlength=table.num_rows), out=off[1:])
        return pa.table(
            {
                **c.base_keys(table),
                ITEMS: pa.ListArray.from_arrays(pa.array(off), pa.array(item.astype(np.int32))),
            }
        )

    def reduce(self, key_paths: list[str], engine: Engine) -> dict[str, Any]:
        self.ensure_setup()
        hits = engine.map(_read_hits, list(key_paths), desc=self.label)
        ids = [i for h in hits for i in h[0]]
        counts = np.bincount(
            np.concatenate([h[1] for h in hits]).astype(np.int64) if hits else [], minlength=len(self._names)
        )
        hit_items = {self._names[i]: int(counts[i]) for i in np.flatnonzero(counts)}
        by_set: dict[str, int] = {}
        for name in hit_items:
            by_set[name.split(":")[0]] = by_set.get(name.split(":")[0], 0) + 1
        facts = {
            "eval_items": len(self._names),
            "items_hit": len(hit_items),
            "docs_contaminated": len(ids),
            "items_hit_by_set": dict(sorted(by_set.items())),
            "hits": dict(sorted(hit_items.items())),
        }
        log.info("%s: %d documents contaminated, %d eval items hit", self.label, len(ids), len(hit_items))
        return {"ids": pa.array(ids, pa.string()), "facts": facts}

    def apply(self, table: pa.Table, state: dict[str, Any]) -> pa.Table:
        p: DecontamParams = self.params
        hit = pc.is_in(c.id_column(table), value_set=state["ids"]).to_numpy(zero_copy_only=False)
        reason = f"{self.label}:contaminated"
        if p.mode == "reject" or not hit.any():
            return with_rejections(table, c.reasons(hit, reason))
        self.ensure_setup()
        texts = table.column(schema.TEXT).to_pylist()
        rows = np.flatnonzero(hit)
        for r in rows:  # only contaminated documents (few) are rewritten
            texts[r] = self._strip(texts[r])
        new = pa.array(texts, pa.string())
        short = hit & (
            pc.utf8_length(pc.utf8_trim_whitespace(new)).to_numpy(zero_copy_only=False) < p.min_chars
        )
        out = table.set_column(table.column_names.index(schema.TEXT), schema.TEXT, new)
        return with_rejections(out, c.reasons(short, f"{self.label}:too_short_after_strip"))

    def _strip(self, text: str) -> str:
        spans = [m.span() for m in re.finditer(c.WORD_PATTERN, text.lower())]
        tokens, off = c.word_hashes(pa.array([text]), seed=self.params.seed)
        cut = np.zeros(len(spans) + 1, np.int64)
        for k in self._lengths:
            h, _ = c.ngram_hashes(tokens, off, k, short=False)
            pos = np.minimum(np.searchsorted(self._grams, h), max(len(self._grams) - 1, 0))
            for s in np.flatnonzero(self._grams[pos] == h):
                cut[s] += 1
                cut[s + k] -= 1
        covered = np.cumsum(cut)[: len(spans)] > 0
        pieces, last = [], 0
        for w in np.flatnonzero(covered):
            start, end = spans[w]
            pieces.append(text[last:start])
            last = end
        pieces.append(text[last:])
        return re.sub(r"[ \t]{2,}", " ", "".join(pieces))

    def summary(self, state: dict[str, Any]) -> dict[str, Any]:
        return dict(state["facts"])


def _read_hits(path: str) -> tuple[list[str], np.ndarray]:
    table = scratch.read_table(path, columns=[schema.ID, ITEMS])
    lens = pc.list_value_length(table.column(ITEMS)).to_numpy(zero_copy_only=False)
    ids = table.column(schema.ID).filter(pa.array(lens > 0)).to_pylist()
    return ids, pc.list_flatten(table.column(ITEMS)).to_numpy(zero_copy_only=False)
