"""The ``null`` control: raw's documents drawn afresh per seed at the controlled recipe's token count."""

from __future__ import annotations

from curate.proxy.kinds.kept import Kept
from curate.proxy.kinds.null import Null, draw_prefix
from curate.proxy.kinds.raw import Raw
from curate.proxy.spec.config import parse


def test_one_draw_per_seed_of_every_point_subsampled_from_the_baseline(tmp_path):
    from curate.instrument.shards import read_hids, read_shard, write_shard
    from tests.instrument.stream_docs import CharTok as _Tok
    from tests.instrument.stream_docs import docs as _docs

    cfg = parse({"seeds": 2, "ladder": [{"model": "proxy_tiny", "budget": 8192, "seeds": [5]}]})
    ids, texts = _docs(80)
    write_shard(texts, tmp_path / "data" / "raw" / "train", _Tok(), ids=ids)
    meta = Null("null").derive(cfg, tmp_path, {"curated": {"tokens": 900}}, "curated")
    assert sorted(meta["draws"]) == ["0", "1", "5"]  # the main point's seeds and the ladder's
    all_ids = set(read_hids(tmp_path / "data" / "raw" / "train").tolist())
    draws = [set(read_hids(draw_prefix(tmp_path, "null", s)).tolist()) for s in (0, 1, 5)]
    assert all(d < all_ids for d in draws)
    assert draws[0] != draws[1]  # a fresh draw per seed
    for s in (0, 1, 5):
        toks, _, _ = read_shard(draw_prefix(tmp_path, "null", s))
        assert meta["draws"][str(s)]["tokens"] == toks.size >= 900
    r = Null("null")
    assert r.train_prefix(cfg, tmp_path, 1) == tmp_path / "data" / "null" / "seed1" / "train"
    assert r.run_folder(cfg) == "null"
    assert r.run_folder(parse({"null_draw": 2})) == "null-draw2"
    assert r.report_fields({"draws": {"0": 1}}, "raw") == {"subsample_of": "raw", "draws": {"0": 1}}
    assert (Null.CURATED, Null.FROM_FILES, Null.ROLE) == (False, False, "control")
    assert r.requirement(Raw("raw")) is None
    assert r.requirement(Kept("k")) == "the baseline 'k' is not from: raw"
