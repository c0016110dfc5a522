"""``proxy.data_limited``: the data-limited arm (:mod:`curate.proxy.kinds.limited`), its section parsed.

```yaml
proxy:
  data_limited:
    k: [1, 4]                       # compute-to-data ratios: raw's pool is T / k tokens, repeated k times
    repetition: [1, 2, 4, 8, 16]    # epochs of raw's pool for the repetition curve ([]: none)
```

Each ``k`` trains raw's pool, each recipe's share of it and the arm's null (a random subset of the pool at
the controlled recipe's share) on every seed of the main point; each ``repetition`` epoch count trains raw's
pool of ``T / e`` tokens (a ``k`` already listed is not trained twice).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from curate.core.params import invalid


@dataclass(frozen=True)
class DataLimitedSpec:
    """The compute-to-data ratios measured (``k``) and the epochs of the repetition curve."""

    k: list[float] = field(default_factory=lambda: [1.0, 4.0])
    repetition: list[float] = field(default_factory=lambda: [1.0, 2.0, 4.0, 8.0, 16.0])

    def validate(self) -> None:
        for key, values in (("k", self.k), ("repetition", self.repetition)):
            for i, v in enumerate(values):
                if not v >= 1:
                    raise invalid((key, i), f"expected a ratio >= 1 (compute / data), got {v!r}")
            if len(set(values)) != len(values):
                raise invalid((key,), f"repeated values in {values}")
        if not self.k:
            raise invalid(("k",), "expected at least one compute-to-data ratio")

    def raw_ratios(self) -> list[float]:
        """Every ratio raw's pool is trained at: the comparison's and the repetition curve's."""
        return sorted(set(self.k) | set(self.repetition))
