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
from typing import Any

from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.entries import Rung, fresh_seeds, parse_rungs

KEYS = [
    "by",
    "sources",
    "dirichlet",
    "concentration",
    "singles",
    "max_epochs",
    "horizon",
    "model",
    "n_boot",
    "seed",
    "eta",
    "rungs",
    "confirm_seeds",
]
MODELS = ("linear", "gbm")


@dataclass
class MixSpec:
    """A parsed ``proxy.mix`` section (see the module docstring)."""

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
    raw: dict[str, Any] = field(default_factory=dict)


def _bad(keys: tuple[str | int, ...], msg: str) -> Exception:
    return ProxyConfigError(("mix", *keys), msg)


def _number(raw: dict[str, Any], key: str, default: float, *, low: float, integer: bool = False) -> Any:
    v = raw.get(key, default)
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v >= low
    if not ok or (integer and not isinstance(v, int)):
        kind = "an integer" if integer else "a number"
        raise _bad((key,), f"expected {kind} >= {low:g}, got {v!r}")
    return int(v) if integer else float(v)


def parse_mix(raw: Any, budget: int, seeds: list[int]) -> MixSpec:
    """Validate ``proxy.mix``; errors are :class:`ProxyConfigError` located under ``proxy.mix``."""
    if raw is None or raw is True:
        raw = {}
    if not isinstance(raw, dict):
        raise _bad((), "expected a mapping (by, sources, dirichlet, rungs, ...) or true")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise _bad((unknown[0],), f"unknown key; valid keys: {', '.join(KEYS)}")
    by = raw.get("by", "source")
    if not isinstance(by, str) or not by:
        raise _bad(("by",), f"expected a column name, got {by!r}")
    sources = raw.get("sources")
    if sources is not None and (
        not isinstance(sources, list) or len(sources) < 2 or not all(isinstance(s, str) for s in sources)
    ):
        raise _bad(("sources",), f"expected a list of at least two source names, got {sources!r}")
    model = raw.get("model", "linear")
    if model not in MODELS:
        raise _bad(("model",), f"expected one of {', '.join(MODELS)}, got {model!r}")
    singles = raw.get("singles", True)
    if not isinstance(singles, bool) and singles != "all":
        raise _bad(("singles",), f"expected true, false or all, got {singles!r}")
    horizon = raw.get("horizon")
    if horizon is not None:
        horizon = _number(raw, "horizon", 0, low=1, integer=True)
    rungs = parse_rungs(raw.get("rungs"), ("mix", "rungs"), [Rung(budget, (seeds[0],))])
    used = {s for r in rungs for s in r.seeds}
    confirm = fresh_seeds(raw.get("confirm_seeds", len(seeds)), used, ("mix", "confirm_seeds"))
    return MixSpec(
        rungs=rungs,
        confirm_seeds=confirm,
        by=by,
        sources=list(sources) if sources else None,
        dirichlet=_number(raw, "dirichlet", 12, low=2, integer=True),  # with natural: 3 to fit
        concentration=_number(raw, "concentration", 4.0, low=1e-3),
        singles=singles,
        max_epochs=_number(raw, "max_epochs", 4.0, low=1.0),
        horizon=horizon,
        model=model,
        n_boot=_number(raw, "n_boot", 200, low=10, integer=True),
        seed=_number(raw, "seed", 0, low=0, integer=True),
        eta=_number(raw, "eta", 3, low=2, integer=True),
        raw=raw,
    )
