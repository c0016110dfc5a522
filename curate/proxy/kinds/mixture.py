"""A mixture of sources (``curate mix``): the run's kept rows drawn per source at given weights. Its
shards are built by the mixture search (:mod:`curate.proxy.data.mixtures`), one per budget and document draw, and
handed to its runs; as a recipe it is kept data like any selection (curation cost counts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from curate.proxy.kinds.base import Recipe, register


@register
@dataclass
class Mixture(Recipe):
    """kept/ rows drawn per source at ``weights`` (the run's shards: :mod:`curate.proxy.data.mixtures`)."""

    weights: dict[str, float] = field(default_factory=dict)

    KIND = "mixture"
    FROM_FILES = False

    def record(self) -> dict[str, Any]:
        return {**super().record(), "weights": self.weights}
