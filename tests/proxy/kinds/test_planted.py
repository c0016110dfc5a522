"""The ``planted`` control: drawn as the null is (the same documents per seed), from raw with its share of
documents word-shuffled, in a folder named by that share."""

from __future__ import annotations

import numpy as np

from curate.proxy.kinds.null import Null, draw_prefix
from curate.proxy.kinds.planted import PLANTED_SALT, Planted
from curate.proxy.kinds.raw import Raw
from curate.proxy.spec.config import parse


def test_the_planted_control_is_drawn_as_the_null_is_even_when_the_null_is_not_trained(tmp_path):
    """``controls: [planted]``: no null is built, yet the planted control's shard at each seed holds the
    documents the null would draw at that seed (at the controlled recipe's token count), corrupted where
    ``unit_hash(id, PLANTED_SALT) < planted``; measure trains each seed on its own draw."""
    from curate.instrument.shards import corrupted_mask, id_hashes, read_hids, shuffle_words, write_shard
    from tests.instrument.stream_docs import CharTok as _Tok
    from tests.instrument.stream_docs import docs as _docs

    cfg = parse(
        {
            "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}},
            "controls": ["planted"],
            "seeds": 3,
        }
    )
    ids, texts = _docs(80)
    hit = corrupted_mask(id_hashes(ids), 0.4, PLANTED_SALT)
    corrupted = [
        shuffle_words(t, int(h), PLANTED_SALT) if c else t
        for t, h, c in zip(texts, id_hashes(ids), hit, strict=True)
    ]
    write_shard(texts, tmp_path / "data" / "raw" / "train", _Tok(), ids=ids)
    write_shard(corrupted, tmp_path / "data" / "planted@0.4" / "train", _Tok(), ids=ids)
    data = {"curated": {"tokens": 900}}
    r = Planted("planted")
    planted = r.derive(cfg, tmp_path, data, "curated")
    assert sorted(planted["draws"]) == ["0", "1", "2"]
    assert not (tmp_path / "data" / "null").exists()  # no null built
    null = Null("null").derive(cfg, tmp_path, data, "curated")  # what the null would be
    for s in (0, 1, 2):
        prefix = r.train_prefix(cfg, tmp_path, s)
        assert prefix == tmp_path / "data" / "planted@0.4" / f"seed{s}" / "train"
        assert read_hids(prefix).tolist() == read_hids(draw_prefix(tmp_path, "null", s)).tolist()
        assert planted["draws"][str(s)]["docs"] == null["draws"][str(s)]["docs"]
        assert planted["draws"][str(s)]["corrupted"] == int(
            hit[np.isin(id_hashes(ids), read_hids(prefix))].sum()
        )
    assert r.run_folder(cfg) == "planted"
    assert r.data_folder(cfg) == "planted@0.4"


def test_another_share_or_draw_family_trains_beside_the_default_and_needs_a_raw_baseline():
    cfg = parse({"planted": 0.2, "null_draw": 3})
    assert Planted("planted").run_folder(cfg) == "planted@0.2-draw3"
    assert Planted("planted").requirement(Raw("raw")) is None
    from curate.proxy.kinds.kept import Kept

    assert Planted("planted").requirement(Kept("curated")) == "the baseline 'curated' is not from: raw"
    assert Planted.ROLE == "control"


def test_a_stronger_corruption_is_its_own_folder_and_its_own_shard_jobs(tmp_path):
    """``planted_corruption: letters`` (each word's letters shuffled): shards and runs in a folder named by
    it, never mixed with word-shuffled ones; the jobs carry it; an unknown corruption is refused at load."""
    import pytest

    from curate.proxy.errors import ProxyConfigError
    from curate.proxy.kinds.base import RunFiles

    cfg = parse({"planted_corruption": "letters"})
    r = Planted("planted")
    assert r.data_folder(cfg) == "planted@letters-0.4"
    assert r.run_folder(cfg) == "planted@letters-0.4"
    assert r.run_folder(parse({"planted_noise": {"sd": 0.04, "dof": 10}})) == "planted"  # a spread: same data
    jobs = r.file_jobs(
        cfg, RunFiles(kept=[tmp_path / "k.parquet"], rejected=[]), tmp_path, {"tokenizer": "t"}
    )
    assert [(j.corrupt_mode, j.corrupt_fraction) for j in jobs] == [("letters", 0.4)]
    with pytest.raises(ProxyConfigError, match=r"^proxy\.planted_corruption: "):
        parse({"planted_corruption": "chars"})
