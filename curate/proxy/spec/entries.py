"""The ``proxy:`` section's entries: recipes, eval sets and ladder points, as dataclasses, and the parsers
that validate them (unknown keys name the valid ones). :mod:`curate.proxy.spec.config` parses the whole section
with them and re-exports the dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curate.core.errors import PhaseError
from curate.instrument.evalsets import EvalSpec
from curate.instrument.model_config import LADDER
from curate.proxy.errors import ProxyConfigError, check_keys
from curate.proxy.kinds import Recipe, kind, user_kinds

EVAL_KEYS = ["name", "kind", "holdout", "path", "source", "max_docs", "max_items", "format"]
EVAL_KINDS = ("text", "choice", "heldout")
LADDER_KEYS = ["model", "budget", "seeds"]


DEFAULT_SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class Rung:
    """One rung of a search: its budget and seeds."""

    budget: int
    seeds: tuple[int, ...]


def parse_seeds(value: Any, keys: tuple[str | int, ...]) -> tuple[int, ...]:
    """Seeds as a pipeline writes them: a count (``3``: seeds 0, 1, 2) or a list of distinct integers;
    the one parser of every ``seeds`` and ``confirm_seeds`` key (errors located at ``keys``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ProxyConfigError(keys, f"expected a count of at least 1, got {value!r}")
        return tuple(range(value))
    ok = isinstance(value, list | tuple) and value and all(type(x) is int for x in value)
    if not ok:
        raise ProxyConfigError(
            keys, f"expected a count (e.g. 3) or a list of seeds (e.g. [0, 1, 2]), got {value!r}"
        )
    if len(set(value)) < len(value):
        raise ProxyConfigError(keys, f"a seed is listed twice in {list(value)}")
    return tuple(value)


def fresh_seeds(value: Any, used: set[int], keys: tuple[str | int, ...]) -> tuple[int, ...]:
    """``confirm_seeds``: a count (that many seeds after the largest one ``used``) or a list of seeds, none
    of them ``used``: a confirmation on seeds that chose nothing."""
    seeds = (
        tuple(range(max(used) + 1, max(used) + 1 + value))
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1
        else parse_seeds(value, keys)
    )
    if set(seeds) & used:
        raise ProxyConfigError(keys, "confirmation seeds must be fresh: none of the rungs' seeds")
    return seeds


def parse_rungs(raw: Any, keys: tuple[str | int, ...], default: list[Rung]) -> list[Rung]:
    """``rungs``: a non-empty list of ``{budget, seeds}`` (``seeds`` default 1); ``default`` when absent."""
    if raw is None:
        return default
    if not isinstance(raw, list) or not raw:
        raise ProxyConfigError(keys, "expected a non-empty list of {budget, seeds}")
    rungs = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or set(r) - {"budget", "seeds"} or "budget" not in r:
            raise ProxyConfigError((*keys, i), "expected {budget, seeds}")
        b = r["budget"]
        if not isinstance(b, int) or isinstance(b, bool) or b <= 0:
            raise ProxyConfigError((*keys, i, "budget"), f"expected a positive integer, got {b!r}")
        rungs.append(Rung(b, parse_seeds(r.get("seeds", 1), (*keys, i, "seeds"))))
    return rungs


@dataclass(frozen=True)
class LadderPoint:
    """A (model, budget, seeds) point of the scale ladder."""

    model: str
    budget: int
    seeds: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.model}@{self.budget}"


def parse_recipes(raw: dict[str, Any]) -> list[Recipe]:
    """``proxy.recipes``: each entry's ``from:`` names a recipe kind a pipeline may write (default
    ``kept``), which parses the rest of the entry (:mod:`curate.proxy.kinds`)."""
    out: list[Recipe] = []
    for name, spec in raw.items():
        where = f"proxy.recipes.{name}"
        spec = spec or {}
        if not isinstance(spec, dict):
            raise PhaseError(f"{where}: expected a mapping, got {type(spec).__name__} {spec!r}")
        source = spec.get("from", "kept")
        if source not in user_kinds():
            raise PhaseError(f"{where}.from: {source!r}; valid: {', '.join(user_kinds())}")
        out += kind(source).from_spec(name, spec, where)
    return out


def parse_eval_specs(raw: dict[str, Any]) -> list[EvalSpec]:
    from curate.instrument.suites import suite

    entries: list[tuple[tuple[str | int, ...], Any]] = []
    if "eval_suite" in raw:
        try:
            entries += [(("eval_suite",), e) for e in suite(str(raw["eval_suite"]))]
        except KeyError as err:
            raise ProxyConfigError(("eval_suite",), str(err.args[0])) from None
    if "eval" in raw:
        if not isinstance(raw["eval"], list):
            raise ProxyConfigError(("eval",), "expected a list of eval sets")
        entries += [(("eval", i), e) for i, e in enumerate(raw["eval"])]
    if not entries:
        return [EvalSpec(name="heldout", kind="heldout", holdout=0.02)]
    evs, seen = [], set()
    for keys, entry in entries:
        where = "proxy" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys)
        e = dict(check_keys(entry, EVAL_KEYS, where))
        if "name" not in e:
            raise ProxyConfigError(keys, "an eval set needs a name")
        kind = e.get("kind") or ("heldout" if e.get("holdout") is not None else "text")
        if kind not in EVAL_KINDS:
            raise ProxyConfigError(
                (*keys, "kind"), f"unknown eval kind {kind!r}; valid kinds: {', '.join(EVAL_KINDS)}"
            )
        e["kind"] = kind
        given = [k for k in ("holdout", "path", "source") if e.get(k) is not None]
        need = {"heldout": ["holdout"], "text": ["path", "source"], "choice": ["path"]}[kind]
        if len(given) != 1 or given[0] not in need:
            raise ProxyConfigError(
                keys, f"a {kind} eval set needs exactly one of {', '.join(need)}; got {given or 'none'}"
            )
        if kind == "heldout" and not 0 < float(e["holdout"]) < 1:
            raise ProxyConfigError((*keys, "holdout"), f"expected a fraction in (0, 1), got {e['holdout']!r}")
        if e["name"] in seen:
            raise ProxyConfigError(keys, f"eval set {e['name']!r} is defined twice")
        seen.add(e["name"])
        evs.append(EvalSpec(**e))
    return evs


def parse_ladder(raw: Any, seeds: list[int]) -> list[LadderPoint]:
    if not isinstance(raw, list):
        raise ProxyConfigError(("ladder",), "expected a list of {model, budget[, seeds]}")
    out = []
    for i, p in enumerate(raw):
        p = check_keys(p, LADDER_KEYS, f"proxy.ladder[{i}]")
        if p.get("model") not in LADDER:
            raise ProxyConfigError(
                ("ladder", i, "model"), f"{p.get('model')!r}; valid sizes: {', '.join(LADDER)}"
            )
        b = p.get("budget")
        if not isinstance(b, int) or isinstance(b, bool) or b <= 0:
            raise ProxyConfigError(("ladder", i, "budget"), f"expected a positive integer, got {b!r}")
        out.append(
            LadderPoint(p["model"], b, parse_seeds(p.get("seeds", len(seeds)), ("ladder", i, "seeds")))
        )
    return out
