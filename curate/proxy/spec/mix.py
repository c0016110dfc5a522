"""``proxy.mix``: the mixture search's section parsed and checked, apart from running it
(:mod:`curate.proxy.design.mix`), so the proxy config validates it without importing the phase.

```yaml
proxy:
  mix:
    by: source                 # the column whose values are the sources (default: the input source)
    sources: [blogs, news]     # default: every value of it in kept/ (held-out eval sources excluded)
    runs: null                 # candidates spread over the simplex (RegMix); default 6 per source, >= 16
    strength: [0.3, 10.0]      # ... each from Dirichlet(s x natural^temperature), s log-uniform in it,
    temperature: 0.5
    min_weight: 0.01           # ... weights under it set to 0 (sparse mixtures)
    dirichlet: 0               # further candidates around the natural mixture ...
    concentration: 4.0         # ... from Dirichlet(concentration x K x natural weights)
    singles: true              # each source alone, where it stays within max_epochs (all: every source,
                               # over the limit too: measured for comparison, never chosen)
    max_epochs: 4              # repetition allowed per source at the horizon (Muennighoff et al. 2023)
    horizon: null              # training tokens the mixture is for; default: every source's tokens once
    model: auto                # weights -> target bpb: auto (loglinear or gbm, by held-out error),
                               # loglinear (Olmix), gbm (LightGBM, RegMix) or linear
    folds: 10                  # k-fold cross-validation for the held-out predictions
    n_boot: 200                # bootstrap resamples (each refits)
    n_perm: 200                # permutations of the measured bpb (each refits) for the p-value
    split: null                # mixtures measured on a second seed (the noise ceiling); default a third
    seed: 0
    eta: 3                     # successive halving when rungs has more than one rung
    rungs: [{budget: 49152, seeds: 1}]       # default: half the proxy budget on its first seed
    confirm_seeds: 3           # fresh seeds for the chosen mixture vs the natural one, at the proxy budget
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from curate.core.params import RegistryError, bounds, invalid
from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.entries import Rung, Rungs, SeedCount, built, fresh_seeds

MODELS = ("auto", "linear", "gbm", "loglinear")


@dataclass
class MixSpec:
    """A parsed ``proxy.mix`` section (see the module docstring), its rungs, confirmation seeds and
    split seed resolved."""

    rungs: list[Rung]
    confirm_seeds: tuple[int, ...]
    split_seed: int = 1
    by: str = "source"
    sources: list[str] | None = None
    runs: int | None = None
    strength: tuple[float, float] = (0.3, 10.0)
    temperature: float = 0.5
    min_weight: float = 0.01
    dirichlet: int = 0
    concentration: float = 4.0
    singles: bool | str = True
    max_epochs: float = 4.0
    horizon: int | None = None
    model: str = "auto"
    folds: int = 10
    n_boot: int = 200
    n_perm: int = 200
    split: int | None = None
    seed: int = 0
    eta: int = 3


@dataclass(kw_only=True)
class MixSection:
    """``proxy.mix`` as written (the module docstring); :meth:`spec` gives its default rungs, confirmation
    seeds and split seed from the measurement's budget and seeds."""

    by: str = "source"
    sources: list[str] | None = None
    runs: int | None = field(default=None, metadata=bounds(0))
    strength: list[float] = field(default_factory=lambda: [0.3, 10.0], metadata=bounds(1e-3))
    temperature: float = field(default=0.5, metadata=bounds(0, 1))
    min_weight: float = field(default=0.01, metadata=bounds(0, 0.5, hi_open=True))
    dirichlet: int = field(default=0, metadata=bounds(0))
    concentration: float = field(default=4.0, metadata=bounds(1e-3))
    singles: Literal[True, False, "all"] = True
    max_epochs: float = field(default=4.0, metadata=bounds(1))
    horizon: int | None = field(default=None, metadata=bounds(1))
    model: Literal["auto", "linear", "gbm", "loglinear"] = "auto"
    folds: int = field(default=10, metadata=bounds(2))
    n_boot: int = field(default=200, metadata=bounds(10))
    n_perm: int = field(default=200, metadata=bounds(10))
    split: int | None = field(default=None, metadata=bounds(0))
    seed: int = field(default=0, metadata=bounds(0))
    eta: int = field(default=3, metadata=bounds(2))
    rungs: Rungs | None = None
    confirm_seeds: SeedCount | None = None

    def validate(self) -> None:
        if not self.by:
            raise invalid("by", "expected a column name, got ''")
        if self.sources is not None and len(self.sources) < 2:
            raise invalid("sources", f"expected a list of at least two source names, got {self.sources!r}")
        if len(self.strength) != 2 or self.strength[0] > self.strength[1]:
            raise invalid("strength", f"expected [low, high] with low <= high, got {self.strength!r}")
        if self.runs == 0 and self.dirichlet == 0 and self.singles is False:
            raise invalid("runs", "runs, dirichlet and singles leave no candidate beside the natural mixture")

    def spec(self, budget: int, seeds: list[int]) -> MixSpec:
        """The mixture search; by default one rung at half the proxy budget on its first seed (many cheap
        runs), confirmed at the proxy budget on as many fresh seeds as the measurement has; the split seed
        (the noise ceiling's second seed) is the one after every rung and confirmation seed."""
        rungs = self.rungs or [Rung(max(1, budget // 2), (seeds[0],))]
        used = {s for r in rungs for s in r.seeds}
        confirm = fresh_seeds(self.confirm_seeds if self.confirm_seeds is not None else len(seeds), used)
        return MixSpec(
            rungs=rungs,
            confirm_seeds=confirm,
            split_seed=max(used | set(confirm)) + 1,
            by=self.by,
            sources=list(self.sources) if self.sources else None,
            runs=self.runs,
            strength=(float(self.strength[0]), float(self.strength[1])),
            temperature=self.temperature,
            min_weight=self.min_weight,
            dirichlet=self.dirichlet,
            concentration=self.concentration,
            singles=self.singles,
            max_epochs=self.max_epochs,
            horizon=self.horizon,
            model=self.model,
            folds=self.folds,
            n_boot=self.n_boot,
            n_perm=self.n_perm,
            split=self.split,
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
