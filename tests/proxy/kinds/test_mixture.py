"""A mixture recipe: kept rows drawn per source at its weights, its shards built by the mixture search."""

from __future__ import annotations

from curate.proxy.kinds.mixture import Mixture


def test_a_mixture_is_kept_data_built_elsewhere():
    m = Mixture("natural", {"a": 0.25, "b": 0.75})
    assert (Mixture.FROM_FILES, Mixture.CURATED, Mixture.ROLE) == (False, True, "recipe")
    assert m.record() == {"name": "natural", "kind": "mixture", "weights": {"a": 0.25, "b": 0.75}}
    assert m.rules() == []
