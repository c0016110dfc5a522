"""The ``proxy:`` section's entries as typed dataclasses (seeds, rungs, ladder points, eval sets, the
tokenizer, the calibrated noise) and its recipes, each parsed by its kind: every one built by the machinery
of stage parameters (:func:`curate.core.params.build_params`), so a wrong value is refused with its key
path. :mod:`curate.proxy.spec.section` assembles the section from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from curate.core.params import OneOf, Parse, RegistryError, bounds, build_params, invalid, one_of
from curate.instrument.evalsets import EvalSpec
from curate.instrument.model_config import LADDER
from curate.proxy.kinds import Recipe, kind, user_kinds

DEFAULT_SEEDS = (0, 1, 2)


def count_or_list(value: Any) -> int | tuple[int, ...]:
    """Seeds as a pipeline writes them, kept as written: a count (``3``) or a list of distinct integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"expected a count of at least 1, got {value!r}")
        return value
    ok = isinstance(value, list | tuple) and value and all(type(x) is int for x in value)
    if not ok:
        raise ValueError(f"expected a count (e.g. 3) or a list of seeds (e.g. [0, 1, 2]), got {value!r}")
    if len(set(value)) < len(value):
        raise ValueError(f"a seed is listed twice in {list(value)}")
    return tuple(value)


def seeds_of(value: Any) -> tuple[int, ...]:
    """Seeds: a count (``3``: seeds 0, 1, 2) or a list of distinct integers (``[0, 1, 2]``)."""
    seeds = count_or_list(value)
    return tuple(range(seeds)) if isinstance(seeds, int) else seeds


# The two typed forms of "a count or a list": seeds as they run (every ``seeds`` key), and a count kept as
# written where what it counts from is known later (``confirm_seeds``: that many after the rungs' seeds).
Seeds = Annotated[tuple[int, ...], Parse(seeds_of)]
SeedCount = Annotated[int | tuple[int, ...], Parse(count_or_list)]
Model = Annotated[str, OneOf(LADDER)]


def fresh_seeds(value: int | tuple[int, ...], used: set[int]) -> tuple[int, ...]:
    """``confirm_seeds`` (:data:`SeedCount`): a count (that many seeds after the largest one ``used``) or a
    list of seeds, none of them ``used``: a confirmation on seeds that chose nothing."""
    seeds = tuple(range(max(used) + 1, max(used) + 1 + value)) if isinstance(value, int) else value
    if set(seeds) & used:
        raise invalid("confirm_seeds", "confirmation seeds must be fresh: none of the rungs' seeds")
    return seeds


@dataclass(frozen=True)
class Rung:
    """One rung of a search: its budget and seeds (a count or a list; default one seed)."""

    budget: int = field(metadata=bounds(1))
    seeds: Seeds = (0,)


def rungs_written(value: list[Rung]) -> list[Rung]:
    """``rungs``: a non-empty list of ``{budget, seeds}``."""
    if not value:
        raise ValueError("expected a non-empty list of {budget, seeds}")
    return value


Rungs = Annotated[list[Rung], Parse(rungs_written, written=list[Rung])]


@dataclass(frozen=True)
class LadderPoint:
    """A (model, budget, seeds) point of the scale ladder."""

    model: str
    budget: int
    seeds: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.model}@{self.budget}"


@dataclass(frozen=True)
class LadderEntry:
    """``proxy.ladder`` entry as written: ``seeds`` a count or a list (default: as many as the main
    point's)."""

    model: Model
    budget: int = field(metadata=bounds(1))
    seeds: SeedCount | None = None

    def point(self, main: tuple[int, ...], used: dict[int, str] | None = None) -> LadderPoint:
        """The point, its seeds resolved. ``used`` (``proxy.disjoint_seeds``): each seed the main point and
        the entries before this one run, with the point that runs it; a count is then that many seeds after
        the largest of them, and a list naming one of them is refused (a :class:`RegistryError` at
        ``seeds``). Without ``used`` a count ``n`` is seeds ``0 .. n-1``, shared with every other point that
        counts from 0."""
        n = len(main) if self.seeds is None else self.seeds
        if used is None:
            return LadderPoint(self.model, self.budget, tuple(range(n)) if isinstance(n, int) else n)
        if isinstance(n, int):
            return LadderPoint(self.model, self.budget, tuple(range(max(used) + 1, max(used) + 1 + n)))
        shared = sorted(set(n) & set(used))
        if shared:
            where = "; ".join(f"seed {s} already runs at {used[s]}" for s in shared)
            raise invalid(
                "seeds",
                f"{where}; proxy.disjoint_seeds gives every point seeds of its own: list others, or give a "
                "count (that many after the largest seed in use)",
            )
        return LadderPoint(self.model, self.budget, n)


@dataclass(frozen=True)
class EvalEntry:
    """A ``proxy.eval`` entry (or a suite's) as written; ``kind`` defaults to ``heldout`` when ``holdout``
    is given, else ``text`` (:class:`curate.instrument.evalsets.EvalSpec`)."""

    name: str
    kind: Literal["text", "choice", "heldout"] | None = None
    holdout: float | None = field(default=None, metadata=bounds(0, 1, lo_open=True, hi_open=True))
    path: str | None = None
    source: str | None = None
    max_docs: int | None = field(default=None, metadata=bounds(1))
    max_items: int | None = field(default=None, metadata=bounds(1))
    format: str = "jsonl"

    @property
    def kind_of(self) -> str:
        return self.kind or ("heldout" if self.holdout is not None else "text")

    def validate(self) -> None:
        """Exactly one of ``holdout``, ``path``, ``source``, the one its kind reads."""
        given = [k for k in ("holdout", "path", "source") if getattr(self, k) is not None]
        need = {"heldout": ["holdout"], "text": ["path", "source"], "choice": ["path"]}[self.kind_of]
        if len(given) != 1 or given[0] not in need:
            raise invalid(
                (), f"a {self.kind_of} eval set needs exactly one of {', '.join(need)}; got {given or 'none'}"
            )

    def spec(self) -> EvalSpec:
        return EvalSpec(
            name=self.name,
            kind=self.kind_of,
            holdout=self.holdout,
            path=self.path,
            source=self.source,
            max_docs=self.max_docs,
            max_items=self.max_items,
            format=self.format,
        )


@dataclass(frozen=True)
class TokenizerSpec:
    """``proxy.tokenizer``: a file (``path``, optionally pinned by ``sha256``) or how to train one."""

    path: str | None = None
    sha256: str | None = None
    vocab_size: int = field(default=2048, metadata=bounds(1))
    sample_chars: int = field(default=2_000_000, metadata=bounds(1))
    seed: int = 0

    def validate(self) -> None:
        if self.sha256 is not None and not self.path:
            raise invalid("sha256", "pins a tokenizer file: give tokenizer.path too")


def parse_recipes(raw: Mapping[str, Any]) -> list[Recipe]:
    """``proxy.recipes``: each entry's ``from:`` names a recipe kind a pipeline may write (default
    ``kept``), which parses the rest of the entry (:meth:`curate.proxy.kinds.base.Recipe.from_spec`). The
    recipes' names are distinct, and a recipe derived from another names one read from the run's files.
    Errors are located under the mapping (``hq.select[0].minimum``)."""
    out: list[Recipe] = []
    for name, entry in raw.items():
        entry = {} if entry is None else entry
        if not isinstance(entry, Mapping):
            raise invalid((name,), f"expected a mapping, got {type(entry).__name__} {entry!r}")
        source = entry.get("from", "kept")
        if source not in user_kinds():
            raise invalid((name, "from"), one_of(source, user_kinds()))
        try:
            out += kind(source).from_spec(str(name), entry)
        except RegistryError as e:
            raise invalid((name, *e.keys), e.detail) from None
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        raise invalid((), f"duplicate names in {names}")
    for r in out:
        for need in r.requires():
            src = next((x for x in out if x.name == need), None)
            if src is None or not src.FROM_FILES:
                built = [x.name for x in out if x.FROM_FILES]
                raise invalid(
                    (r.name,),
                    f"{need!r} is not a recipe read from the run's files; recipes: {', '.join(built)}",
                )
    return out


def built(cls: type[Any], raw: Any, keys: tuple[str | int, ...] = ()) -> Any:
    """``cls`` from ``raw`` by the machinery, its errors located under ``keys``."""
    try:
        return build_params(cls, raw, where="", noun="key")
    except RegistryError as e:
        raise invalid((*keys, *e.keys), e.detail) from None
