"""``from: kept``: the curated rows (kept/), optionally through ``select`` rules over stored scores
(absolute bounds, or quantiles of the rows it draws from), optionally with the rows some stages rejected
taken back (``without_stages``: an ablation of those stages); a ``sweep`` over one bound is one such
recipe per value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

from curate.core.params import Parse, RegistryError, bounds, build_params, invalid
from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register
from curate.proxy.kinds.scores import column_values, resolve_quantiles

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob


@dataclass(frozen=True)
class SelectRule:
    """One ``select`` rule of a recipe as written: bounds over a stored score column (absolute, or
    quantiles of the rows the recipe draws from); the recipe keeps the mapping as written."""

    column: str
    min: float | None = None
    max: float | None = None
    equals: Any = None
    reason: str | None = None
    exclusive: bool = False
    min_quantile: float | None = field(default=None, metadata=bounds(0, 1))
    max_quantile: float | None = field(default=None, metadata=bounds(0, 1))


def _rules(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``select``: each rule checked as a :class:`SelectRule`, kept as the mapping written."""
    for i, r in enumerate(value):
        try:
            build_params(SelectRule, r, where="", noun="key")
        except RegistryError as e:
            raise invalid((i, *e.keys), e.detail) from None
    return list(value)


@dataclass(frozen=True)
class Sweep:
    """``sweep``: one recipe per value of one bound of one column (``q@min=50``, ...)."""

    column: str
    min: list[int | float] = field(default_factory=list)
    max: list[int | float] = field(default_factory=list)


@dataclass(frozen=True)
class KeptEntry:
    """A ``from: kept`` entry as written."""

    select: Annotated[list[dict[str, Any]], Parse(_rules, written=list[dict[str, Any]])] = field(
        default_factory=list
    )
    without_stages: list[str] = field(default_factory=list)
    sweep: Sweep | None = None


@register
@dataclass
class Kept(Recipe):
    """kept/ (plus the rows ``without_stages`` rejected) through ``select`` rules."""

    select: list[dict[str, Any]] = field(default_factory=list)
    without_stages: list[str] = field(default_factory=list)

    KIND = "kept"
    USER = True
    Params = KeptEntry

    @classmethod
    def from_params(cls, name: str, params: KeptEntry) -> list[Recipe]:
        rules, without, sweep = list(params.select), list(params.without_stages), params.sweep
        if sweep is None:
            return [cls(name, rules, without)]
        return [
            cls(f"{name}@{bound}={v:g}", [*rules, {"column": sweep.column, bound: v}], list(without))
            for bound, values in (("min", sweep.min), ("max", sweep.max))
            for v in values
        ]

    @property
    def plain(self) -> bool:
        """kept/ as it is: no rules, no stage left out (the recipe the controls control by default)."""
        return not self.select and not self.without_stages

    def rules(self) -> list[dict[str, Any]]:
        return self.select

    def stages_left_out(self) -> list[str]:
        return self.without_stages

    def scores(self, files: RunFiles, column: str) -> np.ndarray:
        """The values of score ``column`` over the rows this recipe draws from before its rules."""
        return column_values(files.kept, files.rejected, column, stages=self.without_stages)

    def resolved(self, files: RunFiles) -> Kept:
        """This recipe with its quantile bounds resolved to absolute ones over the rows it draws from."""
        rules = [resolve_quantiles(lambda c: self.scores(files, c), r) for r in self.select]
        return Kept(self.name, rules, list(self.without_stages))

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        from curate.instrument.shards import ShardJob

        jobs = [
            ShardJob(src=str(f), out=str(out / f"kept-{i:05d}"), rules=self.select, **common)
            for i, f in enumerate(files.kept)
        ]
        if self.without_stages:
            jobs += [
                ShardJob(
                    src=str(f),
                    out=str(out / f"rejected-{i:05d}"),
                    rejected=True,
                    only_stages=self.without_stages,
                    rules=self.select,  # a recipe's select applies to the rows without_stages adds, too
                    **common,
                )
                for i, f in enumerate(files.rejected)
            ]
        return jobs

    def record(self) -> dict[str, Any]:
        return {**super().record(), "select": self.select, "without_stages": self.without_stages}
