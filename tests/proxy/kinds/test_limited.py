"""The data-limited arm's streams: raw's pool of T / k tokens per seed, a recipe's rows of the pool's
documents, the arm's null inside the pool, their epochs at T and the order their common documents share."""

from __future__ import annotations

import numpy as np

from curate.instrument.shards import read_hids, read_shard, write_shard
from curate.instrument.streams import DocStream
from curate.proxy.kinds.limited import Limited, arm_name
from curate.proxy.spec.config import parse
from tests.instrument.stream_docs import CharTok, docs

T = 2000  # the main point's budget in the test's settings


def _cfg():
    return parse(
        {
            "model": "proxy_tiny",
            "budget": T,
            "seeds": [0, 1],
            "train": {"seq_len": 16, "batch_size": 4},
            "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}},
        }
    )


def _build(tmp_path):
    ids, texts = docs(400)
    raw = write_shard(texts, tmp_path / "data" / "raw" / "train", CharTok(), ids=ids)
    keep = [i for i in range(len(ids)) if i % 2 == 0]  # the recipe keeps every other document
    kept = write_shard(
        [texts[i] for i in keep],
        tmp_path / "data" / "curated" / "train",
        CharTok(),
        ids=[ids[i] for i in keep],
    )
    return raw, kept, max(len(t) for t in texts) + 1


def _ids(prefix):
    return set(read_hids(prefix).tolist())


def test_raws_pool_holds_t_over_k_tokens_a_recipes_arm_its_rows_of_the_pool_and_the_null_a_subset(tmp_path):
    cfg = _cfg()
    raw_meta, kept_meta, longest = _build(tmp_path)
    assert raw_meta["tokens"] > T  # raw holds more than the budget: the pool is a real cap
    data = {"raw": raw_meta, "curated": kept_meta}
    for k in (1.0, 4.0):
        pool = Limited(arm_name("raw", k), of="raw", k=k, source="raw")
        rec = Limited(arm_name("curated", k), of="curated", k=k, source="curated")
        null = Limited(f"null~k{k:g}", of="raw", k=k, source="raw", null_of=rec.name)
        for arm in (pool, rec, null):
            data[arm.name] = arm.derive(cfg, tmp_path, data, "curated")
        for s in (0, 1):
            p_ids, r_ids, n_ids = (_ids(a.train_prefix(cfg, tmp_path, s)) for a in (pool, rec, null))
            got = data[pool.name]["draws"][str(s)]["tokens"]
            assert T / k <= got < T / k + longest  # whole documents up to T / k
            assert r_ids == p_ids & _ids(tmp_path / "data" / "curated" / "train")  # the recipe's rows of it
            assert n_ids < p_ids  # the null: raw's own documents, inside the pool
            want = data[rec.name]["draws"][str(s)]["tokens"]
            assert want <= data[null.name]["draws"][str(s)]["tokens"] < want + longest
            for a in (pool, rec, null):
                d = data[a.name]["draws"][str(s)]
                toks, _, _ = read_shard(a.train_prefix(cfg, tmp_path, s))
                assert d["tokens"] == toks.size
                assert d["epochs_at_T"] == round(T / toks.size, 4)
        assert _ids(pool.train_prefix(cfg, tmp_path, 0)) != _ids(
            pool.train_prefix(cfg, tmp_path, 1)
        )  # per seed
    # k = 4: the recipe keeps about half of the pool, so it is repeated about 2k times
    ep = data[arm_name("curated", 4.0)]["draws"]["0"]["epochs_at_T"]
    assert 5.0 < ep < 11.0
    assert 3.0 < data[arm_name("raw", 4.0)]["draws"]["0"]["epochs_at_T"] <= 4.0


def test_the_arms_of_one_seed_read_their_common_documents_in_one_order(tmp_path):
    cfg = _cfg()
    raw_meta, kept_meta, _ = _build(tmp_path)
    data = {"raw": raw_meta, "curated": kept_meta}
    pool = Limited("raw~k2", of="raw", k=2.0, source="raw")
    rec = Limited("curated~k2", of="curated", k=2.0, source="curated")
    for arm in (pool, rec):
        data[arm.name] = arm.derive(cfg, tmp_path, data, "curated")

    def order(prefix, seed, epoch):
        toks, idx, _ = read_shard(prefix)
        s = DocStream(toks, idx, read_hids(prefix), seq_len=16, seed=seed)
        return [int(h) for h in s.doc_hids[s.order(epoch)]]

    for seed in (0, 1):
        mine = order(rec.train_prefix(cfg, tmp_path, seed), seed, 0)
        raws = order(pool.train_prefix(cfg, tmp_path, seed), seed, 0)
        assert mine == [h for h in raws if h in set(mine)]  # raw's order with the other documents deleted
        assert order(rec.train_prefix(cfg, tmp_path, seed), seed, 1) != mine  # each epoch a new order


def test_an_arm_trains_at_the_main_point_only_and_records_what_it_is():
    arm = Limited("curated~k4", of="curated", k=4.0, source="curated")
    cfg = _cfg()
    assert (Limited.ROLE, Limited.MAIN_ONLY, Limited.CURATED, Limited.FROM_FILES) == (
        "arm",
        True,
        False,
        False,
    )
    assert arm.run_folder(cfg) == "limited/curated~k4"
    assert arm.requires() == ["curated"]
    assert arm.record() == {"name": "curated~k4", "kind": "limited", "of": "curated", "k": 4.0}
    assert np.isclose(4.0, arm.k)
