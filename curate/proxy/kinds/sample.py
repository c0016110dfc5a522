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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.core.params import bounds, invalid
from curate.proxy.kinds.base import Recipe, Settings, register

SAMPLE_SEED = 0x73616D70  # "samp": which documents a sample draws (a function of the document id alone)


@dataclass(frozen=True)
class SampleEntry:
    """A ``from: sample`` entry as written: the recipe drawn from (``of``) and the share of its tokens."""

    fraction: float = field(metadata=bounds(0, 1, lo_open=True, hi_open=True))
    of: str = "raw"

    def validate(self) -> None:
        if not self.of:
            raise invalid("of", "expected the name of a recipe, got ''")


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

    Params = SampleEntry

    @classmethod
    def from_params(cls, name: str, params: SampleEntry) -> list[Recipe]:
        return [cls(name, params.of, params.fraction)]

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
