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

from dataclasses import dataclass, field

from curate.core.params import bounds
from curate.proxy.statistics import sequential as seq


@dataclass(frozen=True)
class SequentialSpec:
    """The effect worth deciding (bpb) and the power aimed at for it; typed and checked by the machinery
    of stage parameters (:mod:`curate.core.params`) as ``proxy.sequential``."""

    effect: float = field(metadata=bounds(0, lo_open=True))
    power: float = field(default=0.8, metadata=bounds(0.5, 1, hi_open=True))

    def design(self, sd: float, pairs: int, alpha: float = 0.05) -> seq.Design:
        """The design for ``pairs`` decision pairs of per-seed spread ``sd`` (bpb)."""
        a = alpha / max(1, pairs)
        effect_sd = self.effect / sd
        n_fix = seq.fixed_seeds(alpha=a, power=self.power, effect=effect_sd)
        power = seq.fixed_power(n_fix, alpha=a, effect=effect_sd)
        # the controls are checked at the seeds the measurement stops at: never fewer than three
        return seq.design(seq.looks_for(n_fix, first=3), alpha=a, power=power, effect=effect_sd)
