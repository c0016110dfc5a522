"""``curate proxy/ablate/search/mix --set KEY=VALUE``: the pipeline's one override parser, relative to the
``proxy:`` section (list items by index), and an error in a value a ``--set`` wrote names that ``--set``."""

from __future__ import annotations

import argparse

import pytest

from curate.core.errors import ConfigError
from curate.proxy.cli import _parse, _raw_section
from curate.proxy.spec.config import ProxyConfigError

CONFIG = {"proxy": {"budget": 40960, "ladder": [{"model": "proxy_tiny", "budget": 81920}]}}


def _args(*sets: str) -> argparse.Namespace:
    return argparse.Namespace(section=None, set=list(sets))


def test_a_set_addresses_list_items_by_index_and_leaves_the_run_s_section_as_it_was() -> None:
    raw, written = _raw_section(_args("ladder.0.seeds=5", "train.lr=0.001", "seeds=[7, 8]"), CONFIG)
    assert raw["ladder"] == [{"model": "proxy_tiny", "budget": 81920, "seeds": 5}]
    assert raw["train"] == {"lr": 0.001}
    assert written == {
        ("ladder", 0, "seeds"): "--set ladder.0.seeds=5",
        ("train", "lr"): "--set train.lr=0.001",
        ("seeds",): "--set seeds=[7, 8]",
    }
    cfg = _parse(raw, written)
    assert (cfg.seeds, cfg.ladder[0].seeds, cfg.train.lr) == ([7, 8], (0, 1, 2, 3, 4), 0.001)
    assert CONFIG["proxy"]["ladder"] == [{"model": "proxy_tiny", "budget": 81920}]  # a copy was changed


def test_a_set_that_cannot_be_applied_or_writes_a_bad_value_is_named_as_written() -> None:
    with pytest.raises(
        ConfigError, match=r"^--set ladder.3.seeds=5: ladder is a list of 1 \(indexes 0 to 0\); '3' is not"
    ):
        _raw_section(_args("ladder.3.seeds=5"), CONFIG)
    with pytest.raises(ConfigError, match=r"^--set 'seeds': expected KEY=VALUE"):
        _raw_section(_args("seeds"), CONFIG)
    with pytest.raises(ConfigError, match=r"^--set seeds=0: expected a count of at least 1, got 0$"):
        _parse(*_raw_section(_args("seeds=0"), CONFIG))
    with pytest.raises(
        ConfigError,
        match=r"^--set ladder.0={model: tiny, budget: 8}: ladder.0.model: expected one of 'proxy_tiny'",
    ):
        _parse(*_raw_section(_args("ladder.0={model: tiny, budget: 8}"), CONFIG))
    # a value no --set wrote: its key path
    with pytest.raises(ProxyConfigError, match=r"^proxy.ladder\[0\].budget: budget 8 tokens < 4 steps"):
        _parse(
            *_raw_section(
                _args("budget=20480"), {"proxy": {"ladder": [{"model": "proxy_tiny", "budget": 8}]}}
            )
        )
