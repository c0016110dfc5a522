"""semantic_dedup_v1: paraphrases removed with the earliest kept, distinct texts kept, clusters and
blocks give the same answer, the embedding, and its name in a pipeline."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from curate.core.registry import STAGES
from curate.dedup._embed import HashEmbedder
from curate.dedup.semantic import SemanticDedup, SemanticParams, _earliest_similar, kmeans
from curate.pipeline.config import build_stages, parse_pipeline
from tests.dedup.dedup_helpers import column, run_global, split
from tests.dedup.semantic_texts import BASE, OTHER_SAME_TOPIC, REORDERED, SYNONYMS, UNRELATED
from tests.helpers import make_table

TEXTS = [UNRELATED, BASE, OTHER_SAME_TOPIC, REORDERED, SYNONYMS, ""]


def test_registered() -> None:
    assert STAGES.get("semantic_dedup_v1") is SemanticDedup


@pytest.mark.parametrize("sizes", [[6], [2, 4], [1, 1, 1, 1, 1, 1]])
def test_paraphrases_removed_earliest_kept(sizes: list[int], inline_engine, tmp_path) -> None:
    stage = SemanticDedup(SemanticParams(threshold=0.75, clusters=1))
    parts, state = run_global(stage, split(make_table(TEXTS), sizes), inline_engine, tmp_path)
    reason = "semantic_dedup_v1:semantic_duplicate"
    assert column(parts, "__reject__") == [None, None, None, reason, reason, None]
    assert column(parts, "duplicate_of") == [None, None, None, "d1", "d1", None]
    assert state.facts["drops"] == 2


def test_embedding_cosines() -> None:
    emb = HashEmbedder(dim=256, buckets=16384, seed=0)(pa.array(TEXTS))
    cos = emb @ emb.T
    assert cos[1, 3] > 0.99  # word order does not matter
    assert 0.75 < cos[1, 4] < 0.99  # five synonyms in a short text cost a little
    assert cos[1, 2] < 0.5
    assert cos[0, 1] < 0.3
    assert np.allclose(np.linalg.norm(emb[:5], axis=1), 1, atol=1e-5)
    assert not emb[5].any()


def test_blocks_and_chains() -> None:
    """Blocks of any size give the same answer; a chain a~b~c points each at its first similar row."""
    # 0, 10 and 20 degrees in one plane, and one orthogonal row
    x = np.array([[1, 0, 0], [0.985, 0.174, 0], [0.940, 0.342, 0], [0, 0, 1]], np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for block in (1, 2, 3, 64):
        assert _earliest_similar(x, 0.95, block).tolist() == [-1, 0, 1, -1]


def test_more_clusters_than_groups_and_partitions(inline_engine, tmp_path) -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    bases = [" ".join(rng.choice(words, 60)) for _ in range(40)]
    texts = bases + [b + " extra" for b in bases]  # each base once more, slightly changed
    stage = SemanticDedup(SemanticParams(clusters=4, num_partitions=3, block=7))
    parts, state = run_global(stage, split(make_table(texts), [30, 30, 20]), inline_engine, tmp_path)
    assert column(parts, "duplicate_of") == [None] * 40 + [f"d{i}" for i in range(40)]
    assert state.facts["clusters"] == 4


def test_kmeans_numpy_finds_separated_groups() -> None:
    x = np.array([[1, 0], [0.99, 0.14], [0, 1], [0.14, 0.99]], np.float32)
    cent = kmeans(x / np.linalg.norm(x, axis=1, keepdims=True), 2, iters=5, seed=0)
    assert sorted(np.argmax(x @ cent.T, axis=1).tolist()) in ([0, 0, 1, 1],)


def test_model_must_be_a_local_directory(tmp_path) -> None:
    with pytest.raises(ValueError, match="not a local directory"):
        SemanticDedup(SemanticParams(model=str(tmp_path / "missing"))).validate()


def test_pipeline_finds_it_by_name() -> None:
    cfg = parse_pipeline(
        "name: t\ninput: {path: x.jsonl, format: jsonl}\nstages:\n"
        "  - dedup: semantic_dedup_v1\n    params: {threshold: 0.9}\n"
    )
    (stage,) = build_stages(cfg)
    assert isinstance(stage, SemanticDedup)
    assert stage.params.threshold == 0.9


@pytest.mark.ray
def test_ray_matches_inline(ray_engine, inline_engine, tmp_path) -> None:
    texts = TEXTS * 3
    inline = SemanticDedup(SemanticParams(threshold=0.75))
    a, _ = run_global(inline, split(make_table(texts), [6, 6, 6]), inline_engine, tmp_path / "a")
    stage = SemanticDedup(SemanticParams(threshold=0.75, num_partitions=3))
    b, _ = run_global(stage, split(make_table(texts), [6, 6, 6]), ray_engine, tmp_path / "b")
    assert column(a, "duplicate_of") == column(b, "duplicate_of")
    # UNRELATED, BASE, OTHER_SAME_TOPIC once each; the empty text (no words: no embedding) three times
    assert column(b, "__reject__").count(None) == 6


def test_in_a_pipeline_with_its_summary(tmp_path) -> None:
    import json

    from curate.api import run

    lines = [{"id": f"x{i}", "text": t} for i, t in enumerate(TEXTS) if t]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    (tmp_path / "p.yaml").write_text(
        f"name: t\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl, batch_docs: 2}}\n"
        "stages:\n  - dedup: semantic_dedup_v1\n    params: {threshold: 0.75}\n"
    )
    manifest = run(str(tmp_path / "p.yaml"), output=str(tmp_path / "out"), engine="inline", phases=False)
    (row,) = [s for s in manifest["stages"] if s["name"] == "semantic_dedup_v1"]
    assert row["removed"] == {"semantic_dedup_v1:semantic_duplicate": 2}
    assert row["summary"]["documents"] == 5
    assert manifest["accounting"]["kept"] == 3


@pytest.mark.slow
def test_a_users_local_encoder(tmp_path) -> None:
    """``model:`` a local Hugging Face directory (here a tiny random BERT saved on the spot)."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "the",
        "harbour",
        "town",
        "fire",
        "plants",
        "light",
    ]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    BertModel(config).save_pretrained(tmp_path)
    stage = SemanticDedup(SemanticParams(model=str(tmp_path)))
    stage.validate()
    emb = stage.embed(pa.array(["the harbour town fire", "the harbour town fire", "plants light"]))
    assert emb.shape == (3, 16)
    assert np.allclose(emb[0], emb[1])
    assert np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)


def test_tiles_equal_brute_force() -> None:
    rng = np.random.default_rng(1)
    base = rng.standard_normal((12, 8)).astype(np.float32)
    x = np.concatenate([base, base[rng.integers(0, 12, 30)] + 0.2 * rng.standard_normal((30, 8))])
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    sims = x @ x.T
    want = [next((i for i in range(j) if sims[j, i] >= 0.9), -1) for j in range(len(x))]
    for block in (1, 5, 16, 100):
        assert _earliest_similar(x, 0.9, block).tolist() == want
