"""``proxy.sequential``: seeds until decided (:mod:`curate.proxy.statistics.sequential`), its section parsed.

```yaml
proxy:
  noise: {sd: 0.027, dof: 40, source: seeds 1000-1059}   # required: the design is built on it
  sequential:
    effect: 0.045          # bpb: the smallest effect worth deciding (a pair with it is called 80% of the time)
    power: 0.8
```

The looks follow from them: the fixed design's seeds for that power at that effect (Bonferroni over the
decision's recipes), at most 1.2 times as many, looked at after 25 to 100% of them (from 3 seeds, which
the controls need);
``proxy.seeds`` is then the seeds drawn from, in order (default 0, 1, 2, ...), and must hold the last look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curate.proxy.errors import ProxyConfigError, check_keys
from curate.proxy.statistics import sequential as seq


@dataclass(frozen=True)
class SequentialSpec:
    """The effect worth deciding (bpb) and the power aimed at for it."""

    effect: float
    power: float = 0.8

    def design(self, sd: float, pairs: int, alpha: float = 0.05) -> seq.Design:
        """The design for ``pairs`` decision pairs of per-seed spread ``sd`` (bpb)."""
        a = alpha / max(1, pairs)
        effect_sd = self.effect / sd
        n_fix = seq.fixed_seeds(alpha=a, power=self.power, effect=effect_sd)
        power = seq.fixed_power(n_fix, alpha=a, effect=effect_sd)
        # the controls are checked at the seeds the measurement stops at: never fewer than three
        return seq.design(seq.looks_for(n_fix, first=3), alpha=a, power=power, effect=effect_sd)


def parse_sequential(raw: Any) -> SequentialSpec:
    """Validate ``proxy.sequential``; errors are located under it."""
    s = check_keys(raw, ["effect", "power"], "proxy.sequential")
    effect, power = s.get("effect"), s.get("power", 0.8)
    if not isinstance(effect, int | float) or isinstance(effect, bool) or not effect > 0:
        raise ProxyConfigError(
            ("sequential", "effect"), f"expected the effect worth deciding in bpb > 0, got {effect!r}"
        )
    if not isinstance(power, int | float) or isinstance(power, bool) or not 0.5 <= power < 1:
        raise ProxyConfigError(("sequential", "power"), f"expected a power in [0.5, 1), got {power!r}")
    return SequentialSpec(float(effect), float(power))
