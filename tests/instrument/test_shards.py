"""Tokenizer, token shards and the model ladder."""

from __future__ import annotations

import numpy as np
import pytest

from curate.instrument.decoder import build_model
from curate.instrument.model_config import LADDER, ModelConfig
from curate.instrument.shards import concat_shards, read_shard, write_shard
from curate.instrument.tokenizer import ProxyTokenizer, train_bpe

TEXTS = [
    "Hello world, this is a test.",
    "Ünïcödé — ✓ 😀 and tabs\tand\nnewlines  ",
    "",
    "the quick brown fox jumps over the lazy dog " * 5,
]


def test_tokenizer_and_shards_round_trip(tmp_path):
    tok = train_bpe(TEXTS * 20, vocab_size=300)
    assert tok.vocab_size == 300
    assert tok.eos_id == 0
    assert tok.dtype == np.uint16
    tok.save(tmp_path / "tok")
    tok = ProxyTokenizer.load(tmp_path / "tok")
    meta = write_shard(TEXTS, tmp_path / "a", tok)
    assert meta == {
        "docs": 4,
        "tokens": meta["tokens"],
        "bytes": sum(len(t.encode()) for t in TEXTS),
        "dtype": "uint16",
    }
    tokens, idx, _ = read_shard(tmp_path / "a")
    assert len(idx) == 5
    assert idx[0] == 0
    assert idx[-1] == len(tokens) == meta["tokens"]
    for i, text in enumerate(TEXTS):
        doc = tokens[idx[i] : idx[i + 1]]
        assert doc[-1] == tok.eos_id
        assert tok.decode(doc[:-1]) == text
        assert int(tok.token_bytes[doc].sum()) == len(text.encode("utf-8"))  # EOS has no bytes
    write_shard(TEXTS[:2], tmp_path / "b", tok)
    m = concat_shards([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    t2, idx2, _ = read_shard(tmp_path / "ab")
    assert m["docs"] == 6
    assert idx2.tolist() == idx.tolist() + (idx[1:3] + idx[-1]).tolist()
    assert np.array_equal(t2[: len(tokens)], tokens)


def test_ladder_param_and_flop_counts_match_the_built_models():
    assert list(LADDER) == ["proxy_tiny", "proxy_1m", "proxy_5m", "proxy_14m", "proxy_30m", "proxy_90m"]
    for name in ("proxy_tiny", "proxy_1m"):
        cfg = ModelConfig.named(name)
        model = build_model(cfg)
        assert sum(p.numel() for p in model.parameters()) == cfg.param_counts()["params"]
    c = ModelConfig.named("proxy_1m", seq_len=256)
    assert (c.width, c.heads, c.mlp) == (128, 2, 352)
    assert c.flops_per_token() == 6 * 1_450_624 + 12 * 2 * 128 * 256
    with pytest.raises(ValueError, match="unknown model size 'proxy_2m'; valid sizes: proxy_tiny"):
        ModelConfig.named("proxy_2m")


def test_jobs_on_one_file_tokenize_each_document_once_and_write_the_same_shards(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.instrument.shards import ShardJob, shard_job, shard_jobs

    tok = train_bpe(TEXTS * 20, vocab_size=300)
    tok.save(tmp_path / "tok")
    texts = [f"document {i}: " + TEXTS[i % 4] for i in range(12)]
    pq.write_table(
        pa.table({"id": [f"d{i}" for i in range(12)], "text": texts, "score": [float(i) for i in range(12)]}),
        tmp_path / "kept.parquet",
    )

    def jobs(out: str) -> list[ShardJob]:
        common = {"src": str(tmp_path / "kept.parquet"), "tokenizer": str(tmp_path / "tok")}
        return [
            ShardJob(out=f"{tmp_path}/{out}/raw", **common),
            ShardJob(out=f"{tmp_path}/{out}/top", rules=[{"column": "score", "min": 6.0}], **common),
            ShardJob(out=f"{tmp_path}/{out}/planted", corrupt_fraction=0.5, corrupt_salt=3, **common),
        ]

    for j in jobs("alone"):
        shard_job(j)
    encoded: list[str] = []
    real = ProxyTokenizer.encode_batch

    def counted(self, batch):
        encoded.extend(batch)
        return real(self, batch)

    monkeypatch.setattr(ProxyTokenizer, "encode_batch", counted)
    metas = shard_jobs(jobs("grouped"))
    assert [m["docs"] for m in metas] == [12, 6, 12]
    assert 0 < metas[2]["corrupted"] < 12
    # raw's 12 documents once; "top" keeps 6 of them (none encoded again); planted only its shuffled ones
    assert len(encoded) == len(set(encoded)) == 12 + metas[2]["corrupted"]
    for name in ("raw", "top", "planted"):
        for suffix in (".bin", ".idx", ".hid", ".json"):
            alone = (tmp_path / "alone" / f"{name}{suffix}").read_bytes()
            assert (tmp_path / "grouped" / f"{name}{suffix}").read_bytes() == alone, name + suffix
