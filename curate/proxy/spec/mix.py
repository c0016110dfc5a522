"""``proxy.mix``: the mixture search's section parsed and checked, apart from running it
(:mod:`curate.proxy.design.mix`), so the proxy config validates it without importing the phase.

```yaml
proxy:
  mix:
    by: source                 # the column whose values are the sources (default: the input source)
    sources: [blogs, news]     # default: every value of it in kept/ (held-out eval sources excluded)
    dirichlet: 12              # candidate mixtures drawn around the natural one ...
    concentration: 4.0         # ... from Dirichlet(concentration x K x natural weights)
    singles: true              # each source alone, where it stays within max_epochs (all: every source,
                               # over the limit too: measured for comparison, never chosen)
    max_epochs: 4              # repetition allowed per source at the horizon (Muennighoff et al. 2023)
    horizon: null              # training tokens the mixture is for; default: every source's tokens once
    model: linear              # the regression from weights to target bpb: linear or gbm
    n_boot: 200                # bootstrap resamples over mixtures (regression, rank correlation)
    seed: 0
    eta: 3                     # successive halving when rungs has more than one rung
    rungs: [{budget: 300000, seeds: 1}]      # default: the proxy budget on its first seed
    confirm_seeds: 3           # fresh seeds for the predicted best vs the natural mixture
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from curate.core.params import RegistryError, bounds, invalid
from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.entries import Rung, Rungs, SeedCount, built, fresh_seeds

MODELS = ("linear", "gbm")


@dataclass
class MixSpec:
    """A parsed ``proxy.mix`` section (see the module docstring), its rungs and confirmation seeds resolved."""

    rungs: list[Rung]
    confirm_seeds: tuple[int, ...]
    by: str = "source"
    sources: list[str] | None = None
    dirichlet: int = 12
    concentration: float = 4.0
    singles: bool | str = True
    max_epochs: float = 4.0
    horizon: int | None = None
    model: str = "linear"
    n_boot: int = 200
    seed: int = 0
    eta: int = 3


@dataclass(kw_only=True)
class MixSection:
    """``proxy.mix`` as written (the module docstring); :meth:`spec` gives its default rungs and
    confirmation seeds from the measurement's budget and seeds."""

    by: str = "source"
    sources: list[str] | None = None
    dirichlet: int = field(default=12, metadata=bounds(2))  # with natural: 3 to fit
    concentration: float = field(default=4.0, metadata=bounds(1e-3))
    singles: Literal[True, False, "all"] = True
    max_epochs: float = field(default=4.0, metadata=bounds(1))
    horizon: int | None = field(default=None, metadata=bounds(1))
    model: Literal["linear", "gbm"] = "linear"
    n_boot: int = field(default=200, metadata=bounds(10))
    seed: int = field(default=0, metadata=bounds(0))
    eta: int = field(default=3, metadata=bounds(2))
    rungs: Rungs | None = None
    confirm_seeds: SeedCount | None = None

    def validate(self) -> None:
        if not self.by:
            raise invalid("by", "expected a column name, got ''")
        if self.sources is not None and len(self.sources) < 2:
            raise invalid("sources", f"expected a list of at least two source names, got {self.sources!r}")

    def spec(self, budget: int, seeds: list[int]) -> MixSpec:
        """The mixture search; by default one rung at the proxy budget on its first seed, confirmed on as
        many fresh seeds as the measurement has."""
        rungs = self.rungs or [Rung(budget, (seeds[0],))]
        used = {s for r in rungs for s in r.seeds}
        confirm = self.confirm_seeds if self.confirm_seeds is not None else len(seeds)
        return MixSpec(
            rungs=rungs,
            confirm_seeds=fresh_seeds(confirm, used),
            by=self.by,
            sources=list(self.sources) if self.sources else None,
            dirichlet=self.dirichlet,
            concentration=self.concentration,
            singles=self.singles,
            max_epochs=self.max_epochs,
            horizon=self.horizon,
            model=self.model,
            n_boot=self.n_boot,
            seed=self.seed,
            eta=self.eta,
        )


def mix_written(value: Any) -> MixSection:
    """``proxy.mix``: a mapping, or ``true`` (or an empty key) for the defaults."""
    return built(MixSection, {} if value is None or value is True else value)


def parse_mix(raw: Any, budget: int, seeds: list[int]) -> MixSpec:
    """``proxy.mix`` from its mapping (the measurement's ``budget`` and ``seeds`` give the defaults); errors
    are :class:`ProxyConfigError` located under ``proxy.mix``."""
    try:
        return mix_written(raw).spec(budget, seeds)
    except RegistryError as e:
        raise ProxyConfigError(("mix", *e.keys), e.detail) from None
