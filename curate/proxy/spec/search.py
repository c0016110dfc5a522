"""``proxy.search``: the search section parsed and checked (candidates, rungs), apart from running it
(:mod:`curate.proxy.design.search`), so the proxy config can validate a search without importing the phase."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from curate.core.params import RegistryError, bounds, invalid
from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.entries import Rung, Rungs, SeedCount, built, fresh_seeds

BOUNDS = ("min", "max", "min_quantile", "max_quantile")
Bound = Literal["min", "max", "min_quantile", "max_quantile"]


@dataclass
class SearchSpec:
    """A parsed ``proxy.search`` section; ``candidates`` maps a name to its select rules, ``off`` a
    name to the ``toggle_stages`` it leaves out (besides ``without_stages``, which every candidate
    leaves out)."""

    candidates: dict[str, list[dict[str, Any]]]
    rungs: list[Rung]
    eta: int = 3
    objective: str = "multiplier"
    confirm_seeds: tuple[int, ...] = ()
    seed: int = 0
    without_stages: list[str] = field(default_factory=list)
    off: dict[str, list[str]] = field(default_factory=dict)

    def without(self, name: str) -> list[str]:
        """Every stage candidate ``name`` leaves out: its rows come back from rejected/."""
        return [*self.without_stages, *self.off.get(name, [])]


@dataclass(kw_only=True)
class SearchSection:
    """``proxy.search`` as written: ``columns`` (a grid of bounds per score column), stages always left out
    (``without_stages``) or toggled (``toggle_stages``), every combination (``product``) or a ``sample`` of
    them (by ``seed``), the ``objective``, successive halving's ``eta`` and ``rungs``, ``confirm_seeds``.
    :meth:`spec` makes its candidates and, from the measurement's budget and seeds, its default rungs and
    confirmation seeds."""

    columns: dict[str, dict[Bound, list[float]]] | None = None
    without_stages: list[str] = field(default_factory=list)
    toggle_stages: list[str] = field(default_factory=list)
    product: bool = False
    sample: int | None = field(default=None, metadata=bounds(1))
    seed: int = 0
    objective: Literal["multiplier", "goodput", "data_limited"] = "multiplier"
    eta: int = field(default=3, metadata=bounds(2))
    rungs: Rungs | None = None
    confirm_seeds: SeedCount | None = None

    def validate(self) -> None:
        """Stage names are names, a toggled stage is listed once; columns are a grid of values (quantiles
        in [0, 1]), required unless stages are toggled."""
        for key in ("without_stages", "toggle_stages"):
            if not all(getattr(self, key)):
                raise invalid(key, f"expected a list of stage names, got {getattr(self, key)!r}")
        toggles = self.toggle_stages
        if set(toggles) & set(self.without_stages) or len(set(toggles)) < len(toggles):
            raise invalid("toggle_stages", "a stage is listed twice (or is in without_stages too)")
        if self.columns is None and toggles:
            return
        if not self.columns:
            raise invalid(
                "columns", "expected a mapping {column: {min|max|min_quantile|max_quantile: [values]}}"
            )
        for col, grid in self.columns.items():
            if not grid:
                raise invalid(
                    ("columns", col), f"expected a mapping of {', '.join(BOUNDS)} to lists of values"
                )
            for bound, values in grid.items():
                if not values:
                    raise invalid(("columns", col, bound), "expected a non-empty list of numbers")
                for i, v in enumerate(values):
                    if "quantile" in bound and not 0 <= v <= 1:
                        raise invalid(
                            ("columns", col, bound, i), f"expected a value in [0, 1] (a quantile), got {v!r}"
                        )

    def spec(self, budget: int, seeds: list[int]) -> SearchSpec:
        """The search: its candidates, and by default a quarter-budget rung on one seed, then the full
        budget; confirmation on as many fresh seeds as the measurement has."""
        options = [
            [{"column": str(col), bound: v} for bound, values in grid.items() for v in values]
            for col, grid in (self.columns or {}).items()
        ]
        combos = _combos(options, self.toggle_stages, self.product)
        if self.sample is not None:
            picked = random.Random(self.seed).sample(combos, min(self.sample, len(combos)))
            combos = sorted(picked, key=lambda c: _name(*c))
        rungs = self.rungs or [Rung(budget // 4, (seeds[0],)), Rung(budget, tuple(seeds))]
        used = {s for r in rungs for s in r.seeds}
        confirm = self.confirm_seeds if self.confirm_seeds is not None else len(seeds)
        return SearchSpec(
            candidates={_name(*c): c[0] for c in combos},
            off={_name(*c): list(c[1]) for c in combos if c[1]},
            rungs=rungs,
            eta=self.eta,
            objective=self.objective,
            confirm_seeds=fresh_seeds(confirm, used),
            seed=self.seed,
            without_stages=list(self.without_stages),
        )


def _name(rules: list[dict[str, Any]], off: tuple[str, ...] = ()) -> str:
    """``search:<column>@<bound>=<value>+...-<stage>...``; ``search:kept`` for kept/ as it is."""
    parts = []
    for r in rules:
        bound = next(b for b in BOUNDS if b in r)
        parts.append(f"{r['column']}@{bound}={r[bound]:g}")
    name = "+".join(parts) + "".join(f"-{st}" for st in off)
    return "search:" + (name or "kept")


def parse_search(raw: Any, budget: int, seeds: list[int]) -> SearchSpec:
    """``proxy.search`` from its mapping (the measurement's ``budget`` and ``seeds`` give the defaults);
    errors are :class:`ProxyConfigError` located under ``proxy.search``."""
    try:
        section: SearchSection = built(SearchSection, raw)
        return section.spec(budget, seeds)
    except RegistryError as e:
        raise ProxyConfigError(("search", *e.keys), e.detail) from None


def _combos(
    options: list[list[dict[str, Any]]], toggles: list[str], product: bool
) -> list[tuple[list[dict[str, Any]], tuple[str, ...]]]:
    """Candidates as (rules, stages left out). Without ``product``: each column option alone, then, when
    stages are toggled, kept/ as it is and kept/ without each toggled stage. With it: every combination
    of one option per column and every subset of the toggled stages."""
    if not product:
        out: list[tuple[list[dict[str, Any]], tuple[str, ...]]] = [
            ([o], ()) for opts in options for o in opts
        ]
        if toggles:
            out += [([], ()), *(([], (st,)) for st in toggles)]
        return out
    subsets = [tuple(c) for k in range(len(toggles) + 1) for c in itertools.combinations(toggles, k)]
    return [(list(rules), off) for rules in itertools.product(*options) for off in subsets]


def candidate_recipe(spec: SearchSpec, name: str) -> dict[str, Any]:
    """The proxy recipe of candidate ``name``: kept/, plus the rows of the stages it leaves out, through
    its select rules."""
    without, rules = spec.without(name), spec.candidates[name]
    return {
        "from": "kept",
        **({"without_stages": without} if without else {}),
        **({"select": rules} if rules else {}),
    }
