"""Which eval sets a document shares a word 13-gram with, against an index
:func:`curate.instrument.evalsets.build_gram_index` wrote (decontamination: :mod:`curate.instrument.shards`,
:mod:`curate.targeting`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def gram_hits(texts: list[str], index_path: str) -> np.ndarray:
    """``(n_docs, n_sets)`` booleans: which eval sets each document shares a gram with."""
    from curate.dedup import _common as c

    z = np.load(index_path)
    grams, owner, n_sets = z["grams"], z["owner"], len(z["names"])
    hits = np.zeros((len(texts), n_sets), dtype=bool)
    if not texts or not len(grams):
        return hits
    tokens, off = c.word_hashes(pa.array(texts, pa.string()))
    for k in z["lengths"].tolist():
        h, hoff = c.ngram_hashes(tokens, off, int(k), short=False)
        pos = np.minimum(np.searchsorted(grams, h), len(grams) - 1)
        hit = grams[pos] == h
        doc = np.repeat(np.arange(len(off) - 1), np.diff(hoff))
        hits[doc[hit], owner[pos[hit]]] = True
    return hits
