"""Tokenizer, token shards and the model ladder."""

from __future__ import annotations

import numpy as np
import pytest

from curate.proxy.model import LADDER, ModelConfig
from curate.proxy.shards import concat_shards, read_shard, write_shard
from curate.proxy.tokenizer import ProxyTokenizer, train_bpe

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
        model = cfg.build()
        assert sum(p.numel() for p in model.parameters()) == cfg.param_counts()["params"]
    c = ModelConfig.named("proxy_1m")
    assert (c.width, c.heads, c.mlp) == (128, 2, 352)
    assert c.flops_per_token() == 6 * 1_450_624 + 12 * 2 * 128 * 256
    with pytest.raises(ValueError, match="unknown model size 'proxy_2m'; valid sizes: proxy_tiny"):
        ModelConfig.named("proxy_2m")
