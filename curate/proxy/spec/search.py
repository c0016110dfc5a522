"""``proxy.search``: the search section parsed and checked (candidates, rungs), apart from running it
(:mod:`curate.proxy.design.search`), so the proxy config can validate a search without importing the phase."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from curate.proxy.errors import ProxyConfigError
from curate.proxy.spec.entries import Rung, fresh_seeds, parse_rungs

BOUNDS = ("min", "max", "min_quantile", "max_quantile")


KEYS = [
    "columns",
    "without_stages",
    "toggle_stages",
    "product",
    "sample",
    "seed",
    "objective",
    "eta",
    "rungs",
    "confirm_seeds",
]


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
    raw: dict[str, Any] = field(default_factory=dict)
    off: dict[str, list[str]] = field(default_factory=dict)

    def without(self, name: str) -> list[str]:
        """Every stage candidate ``name`` leaves out: its rows come back from rejected/."""
        return [*self.without_stages, *self.off.get(name, [])]


def _name(rules: list[dict[str, Any]], off: tuple[str, ...] = ()) -> str:
    """``search:<column>@<bound>=<value>+...-<stage>...``; ``search:kept`` for kept/ as it is."""
    parts = []
    for r in rules:
        bound = next(b for b in BOUNDS if b in r)
        parts.append(f"{r['column']}@{bound}={r[bound]:g}")
    name = "+".join(parts) + "".join(f"-{st}" for st in off)
    return "search:" + (name or "kept")


def _search_error(keys: tuple[str | int, ...], msg: str) -> Exception:
    """A :class:`ProxyConfigError` located under ``proxy.search``."""
    return ProxyConfigError(("search", *keys), msg)


def _column_options(cols: Any) -> list[list[dict[str, Any]]]:
    """Per column of ``proxy.search.columns``, its candidate rules (one per bound and value)."""
    bad = _search_error
    if not isinstance(cols, dict) or not cols:
        raise bad(("columns",), "expected a mapping {column: {min|max|min_quantile|max_quantile: [values]}}")
    options: list[list[dict[str, Any]]] = []
    for col, grid in cols.items():
        if not isinstance(grid, dict) or not grid or set(grid) - set(BOUNDS):
            raise bad(("columns", col), f"expected a mapping of {', '.join(BOUNDS)} to lists of values")
        opts = []
        for bound, values in grid.items():
            if not isinstance(values, list) or not values:
                raise bad(("columns", col, bound), "expected a non-empty list of numbers")
            for v in values:
                if not isinstance(v, int | float) or isinstance(v, bool):
                    raise bad(("columns", col, bound), f"expected numbers, got {v!r}")
                if "quantile" in bound and not 0 <= v <= 1:
                    raise bad(("columns", col, bound), f"a quantile is in [0, 1], got {v!r}")
                opts.append({"column": str(col), bound: float(v)})
        options.append(opts)
    return options


def parse_search(raw: Any, budget: int, seeds: list[int]) -> SearchSpec:
    """Validate ``proxy.search``; errors are :class:`ProxyConfigError` located under ``proxy.search``."""
    bad = _search_error
    if not isinstance(raw, dict):
        raise bad((), "expected a mapping with columns (and optionally rungs, eta, objective, ...)")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise bad((unknown[0],), f"unknown key; valid keys: {', '.join(KEYS)}")
    ws = raw.get("without_stages", [])
    if not isinstance(ws, list) or not all(isinstance(x, str) and x for x in ws):
        raise bad(("without_stages",), f"expected a list of stage names, got {ws!r}")
    toggles = raw.get("toggle_stages", [])
    if not isinstance(toggles, list) or not all(isinstance(x, str) and x for x in toggles):
        raise bad(("toggle_stages",), f"expected a list of stage names, got {toggles!r}")
    if set(toggles) & set(ws) or len(set(toggles)) < len(toggles):
        raise bad(("toggle_stages",), "a stage is listed twice (or is in without_stages too)")
    options = _column_options(raw.get("columns")) if "columns" in raw or not toggles else []
    combos = _combos(options, toggles, bool(raw.get("product")))
    seed = int(raw.get("seed", 0))
    n = raw.get("sample")
    if n is not None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise bad(("sample",), f"expected an integer >= 1, got {n!r}")
        import random

        combos = sorted(random.Random(seed).sample(combos, min(n, len(combos))), key=lambda c: _name(*c))
    objective = raw.get("objective", "multiplier")
    if objective not in ("multiplier", "goodput"):
        raise bad(("objective",), f"expected multiplier or goodput, got {objective!r}")
    eta = raw.get("eta", 3)
    if not isinstance(eta, int) or isinstance(eta, bool) or eta < 2:
        raise bad(("eta",), f"expected an integer >= 2, got {eta!r}")
    # by default a quarter-budget rung on one seed, then the full budget
    rungs = parse_rungs(
        raw.get("rungs"), ("search", "rungs"), [Rung(budget // 4, (seeds[0],)), Rung(budget, tuple(seeds))]
    )
    used = {s for r in rungs for s in r.seeds}
    confirm = fresh_seeds(raw.get("confirm_seeds", len(seeds)), used, ("search", "confirm_seeds"))
    return SearchSpec(
        candidates={_name(*c): c[0] for c in combos},
        off={_name(*c): list(c[1]) for c in combos if c[1]},
        rungs=rungs,
        eta=eta,
        objective=objective,
        confirm_seeds=confirm,
        seed=seed,
        raw=raw,
        without_stages=list(ws),
    )


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
