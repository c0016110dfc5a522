"""``from: sample``: a random subset of another recipe at a share of its tokens, one fixed draw."""

from __future__ import annotations

import pytest

from curate.core.errors import PhaseError
from curate.proxy.kinds.sample import Sample
from curate.proxy.spec.config import parse


def test_a_sample_draws_its_share_of_the_recipe_it_names_once_for_every_seed(tmp_path):
    from curate.instrument.shards import read_hids, read_shard, write_shard
    from tests.instrument.stream_docs import CharTok as _Tok
    from tests.instrument.stream_docs import docs as _docs

    cfg = parse(
        {"recipes": {"raw": {"from": "raw"}, "half": {"from": "sample", "of": "raw", "fraction": 0.5}}}
    )
    (half,) = cfg.recipes[1:]
    assert half == Sample("half", "raw", 0.5)
    ids, texts = _docs(80)
    raw_meta = write_shard(texts, tmp_path / "data" / "raw" / "train", _Tok(), ids=ids)
    meta = half.derive(cfg, tmp_path, {"raw": raw_meta}, None)
    prefix = half.train_prefix(cfg, tmp_path, 0)
    assert prefix == half.train_prefix(cfg, tmp_path, 7) == tmp_path / "data" / "half@raw-0.5" / "train"
    toks, _, _ = read_shard(prefix)
    assert meta["tokens"] == toks.size
    assert raw_meta["tokens"] / 2 <= meta["tokens"] < raw_meta["tokens"] / 2 + max(len(t) for t in texts) + 1
    assert set(read_hids(prefix).tolist()) < set(read_hids(tmp_path / "data" / "raw" / "train").tolist())
    assert half.derive(cfg, tmp_path, {"raw": raw_meta}, None) == meta  # drawn once, reused
    assert (Sample.CURATED, Sample.FROM_FILES, half.requires()) == (False, False, ["raw"])
    assert half.record() == {"name": "half", "kind": "sample", "of": "raw", "fraction": 0.5}


def test_a_sample_names_a_recipe_read_from_files_and_a_share_in_0_1():
    with pytest.raises(
        PhaseError, match=r"^proxy.recipes.s: 'nope' is not a recipe read from the run's files; recipes: raw$"
    ):
        parse({"recipes": {"raw": {"from": "raw"}, "s": {"from": "sample", "of": "nope", "fraction": 0.5}}})
    with pytest.raises(
        PhaseError, match=r"^proxy.recipes.s.fraction: expected a value in \(0, 1\), got 1.5$"
    ):
        parse({"recipes": {"raw": {"from": "raw"}, "s": {"from": "sample", "fraction": 1.5}}})
    with pytest.raises(
        PhaseError, match=r"^proxy.recipes.s.select: unknown key; valid keys: fraction, from, of$"
    ):
        parse({"recipes": {"raw": {"from": "raw"}, "s": {"from": "sample", "fraction": 0.5, "select": []}}})
