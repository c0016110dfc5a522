"""``from: sample``: a random subset of another recipe's documents at a share of its tokens (``of``,
``fraction``): the yield a recipe would have with no skill at choosing, so a selection can be compared
with chance at its own yield. One fixed draw (by document id), the same at every seed.

```yaml
proxy:
  recipes:
    raw: {from: raw}
    half: {from: sample, of: raw, fraction: 0.5}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.core.errors import PhaseError
from curate.proxy.errors import check_keys
from curate.proxy.kinds.base import Recipe, Settings, register

SAMPLE_SEED = 0x73616D70  # "samp": which documents a sample draws (a function of the document id alone)


@register
@dataclass
class Sample(Recipe):
    """``fraction`` of recipe ``of``'s tokens, its documents drawn at random by id."""

    of: str = "raw"
    fraction: float = 0.5

    KIND = "sample"
    USER = True
    CURATED = False
    FROM_FILES = False

    @classmethod
    def from_spec(cls, name: str, spec: dict[str, Any], where: str) -> list[Recipe]:
        check_keys(spec, ["from", "of", "fraction"], where)
        of, fraction = spec.get("of", "raw"), spec.get("fraction")
        if not isinstance(of, str) or not of:
            raise PhaseError(f"{where}.of: expected the name of a recipe, got {of!r}")
        if not isinstance(fraction, int | float) or isinstance(fraction, bool) or not 0 < fraction < 1:
            raise PhaseError(f"{where}.fraction: expected a share of its tokens in (0, 1), got {fraction!r}")
        return [cls(name, of, float(fraction))]

    def requires(self) -> list[str]:
        return [self.of]

    def derive(
        self, cfg: Settings, pdir: Path, data: dict[str, dict[str, Any]], controlled: str | None
    ) -> dict[str, Any]:
        from curate.instrument.shards import subsample_shard

        return subsample_shard(
            pdir / "data" / self.of / "train",
            pdir / "data" / self.data_folder(cfg) / "train",
            tokens=round(self.fraction * data[self.of]["tokens"]),
            seed=SAMPLE_SEED,
        )

    def data_folder(self, cfg: Settings) -> str:
        """Named by what it samples, so another ``of`` or ``fraction`` never reuses its shard."""
        return f"{self.name}@{self.of}-{self.fraction:g}"

    def record(self) -> dict[str, Any]:
        return {**super().record(), "of": self.of, "fraction": self.fraction}
