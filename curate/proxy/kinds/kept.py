"""``from: kept``: the curated rows (kept/), optionally through ``select`` rules over stored scores
(absolute bounds, or quantiles of the rows it draws from), optionally with the rows some stages rejected
taken back (``without_stages``: an ablation of those stages); a ``sweep`` over one bound is one such
recipe per value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.proxy.errors import check_keys
from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register
from curate.proxy.kinds.scores import column_values, resolve_quantiles

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob

RULE_KEYS = ["column", "min", "max", "equals", "reason", "exclusive", "min_quantile", "max_quantile"]


@register
@dataclass
class Kept(Recipe):
    """kept/ (plus the rows ``without_stages`` rejected) through ``select`` rules."""

    select: list[dict[str, Any]] = field(default_factory=list)
    without_stages: list[str] = field(default_factory=list)

    KIND = "kept"
    USER = True

    @classmethod
    def from_spec(cls, name: str, spec: dict[str, Any], where: str) -> list[Recipe]:
        check_keys(spec, ["from", "select", "without_stages", "sweep"], where)
        rules = list(spec.get("select") or [])
        for i, r in enumerate(rules):
            check_keys(r, RULE_KEYS, f"{where}.select[{i}]")
        without = list(spec.get("without_stages") or [])
        sweep = spec.get("sweep")
        if sweep is None:
            return [cls(name, rules, without)]
        sweep = check_keys(sweep, ["column", "min", "max"], f"{where}.sweep")
        return [
            cls(f"{name}@{bound}={v:g}", [*rules, {"column": sweep["column"], bound: v}], list(without))
            for bound in ("min", "max")
            for v in sweep.get(bound) or []
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
