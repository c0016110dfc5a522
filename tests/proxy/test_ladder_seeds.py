"""``proxy.disjoint_seeds``: every ladder point runs seeds no other point runs (a count is taken after the
largest seed in use, a list sharing one is refused at its key); without it a count is seeds 0 .. n-1."""

from __future__ import annotations

import pytest

from curate.core.errors import ConfigError
from curate.pipeline.config import parse_pipeline
from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.config import parse

TOP = {"model": "proxy_5m", "budget": 1638400}
MID = {"model": "proxy_1m", "budget": 1179648}


def _seeds(section):
    return [p.seeds for p in parse(section).points()]


def test_counts_take_fresh_seeds_after_every_earlier_point():
    section = {"seeds": 4, "disjoint_seeds": True, "ladder": [{**MID, "seeds": 4}, {**TOP, "seeds": 6}]}
    assert _seeds(section) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11, 12, 13)]
    # no count: as many as the main point's, fresh; a list of fresh seeds is kept as written
    section = {"seeds": [3, 9], "disjoint_seeds": True, "ladder": [MID, {**TOP, "seeds": [1, 0]}]}
    assert _seeds(section) == [(3, 9), (10, 11), (1, 0)]


def test_without_it_every_point_counts_from_zero():
    assert _seeds({"seeds": 3, "ladder": [MID, {**TOP, "seeds": 4}]}) == [(0, 1, 2), (0, 1, 2), (0, 1, 2, 3)]
    assert _seeds({"seeds": 3, "disjoint_seeds": False, "ladder": [{**MID, "seeds": [0, 1]}]}) == [
        (0, 1, 2),
        (0, 1),
    ]


def test_a_list_that_shares_a_seed_is_refused_naming_the_key_the_seed_and_the_point():
    section = {"seeds": 4, "disjoint_seeds": True, "ladder": [{**MID, "seeds": 2}, {**TOP, "seeds": [5, 2]}]}
    with pytest.raises(ProxyConfigError) as e:
        parse(section)
    assert str(e.value) == (
        "proxy.ladder[1].seeds: seed 2 already runs at the main point proxy_tiny@300000; seed 5 already runs "
        "at proxy_1m@1179648; proxy.disjoint_seeds gives every point seeds of its own: list others, or give a "
        "count (that many after the largest seed in use)"
    )


def test_a_pipeline_file_is_refused_at_the_line_of_the_shared_seeds():
    text = """\
name: t
input: {path: data/*.jsonl, format: jsonl}
stages:
  - transform: normalize_v1
proxy:
  model: proxy_1m
  budget: 294912
  seeds: 4
  disjoint_seeds: true
  ladder:
    - {model: proxy_1m, budget: 1179648, seeds: [0, 4, 5, 6]}
"""
    with pytest.raises(ConfigError) as e:
        parse_pipeline(text, path="p.yaml")
    assert str(e.value).startswith(
        "p.yaml:11: proxy.ladder[0].seeds: seed 0 already runs at the main point proxy_1m@294912; "
    )
    fresh = parse_pipeline(text.replace("[0, 4, 5, 6]", "4"), path="p.yaml").proxy
    assert [p.seeds for p in fresh.points()] == [(0, 1, 2, 3), (4, 5, 6, 7)]
