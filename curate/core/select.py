"""The ``select:`` stage: rejects rows that fail any of its typed rules (:mod:`curate.core.rules`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from curate.core.registry import STAGES
from curate.core.rules import Rule, first_failing
from curate.core.stage import RowStage, with_rejections

__all__ = ["Rule", "Select", "SelectParams"]  # Rule lives in curate.core.rules; imported from here too


@dataclass
class SelectParams:
    rules: list[dict[str, Any]] = field(default_factory=list)


@STAGES.add("select")
class Select(RowStage):
    """Rejects rows that fail any rule; the reason is the first failing rule's.

    ``prefix`` makes reasons read ``<prefix>:<reason>``; a pipeline's ``select:`` uses its label.
    """

    kind = "select"
    Params = SelectParams

    def __init__(
        self,
        params: Any = None,
        *,
        label: str | None = None,
        rules: list[Rule] | None = None,
        prefix: str | None = None,
    ) -> None:
        super().__init__(params, label=label)
        self.rules = rules if rules is not None else [Rule(**r) for r in self.params.rules]
        self.prefix = prefix

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["params"] = {"rules": [r.__dict__ for r in self.rules]}
        return d

    def process(self, table: pa.Table) -> pa.Table:
        return with_rejections(table, first_failing(table, self.rules, prefix=self.prefix))
