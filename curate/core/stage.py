"""The stage contract: small, picklable classes that work on Arrow batches.

Three shapes of stage, all constructed from a typed ``Params`` dataclass:

* :class:`Scorer` (``score:``) computes fields and adds them as columns ``<stage>.<field>``; it never
  drops a row. It may declare reference thresholds (:meth:`Scorer.reference_rules`); then
  :meth:`Scorer.as_filter` (``filter:``) is one stage that scores and rejects by those thresholds.
* :class:`Transform` (``transform:``) rewrites the text column and may reject rows (e.g. a document left
  empty) by filling the ``REJECT`` column with a reason.
* :class:`GlobalStage` (``dedup:``) needs the whole corpus: it ``collect``\\ s a small key table per part
  (never texts), ``reduce``\\ s all key tables into a state (on the engine: the task-based hash
  shuffle :meth:`curate.core.engine.Engine.shuffle`), then ``apply``\\ s that state to every part.

Heavy resources (models) load in :meth:`Stage.setup`, once per worker, never in ``__init__``, so stages
pickle cheaply. Unit tests call ``process`` directly on small tables, no Ray involved.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from curate.core import schema
from curate.core.resources import Resources
from curate.core.rules import Rule, first_failing

if TYPE_CHECKING:  # the engine module imports no stage: this is a one-way edge
    from curate.core.engine import Engine

__all__ = [
    "FilterStage",
    "GlobalStage",
    "NoParams",
    "Resources",  # lives in curate.core.resources; importable from here as before
    "RowStage",
    "Scorer",
    "Stage",
    "Transform",
    "with_rejections",
]


@dataclass
class NoParams:
    """A stage without parameters."""


class Stage:
    """Base of every stage. ``name`` is the registry name, set by ``STAGES.add``."""

    name: str = "stage"  # set on the class by STAGES.add; a FilterStage takes its scorer's
    kind: ClassVar[str] = "stage"
    Params: ClassVar[type] = NoParams
    # A class default; a stage whose needs depend on its parameters sets its own in __init__.
    resources: Resources = Resources()

    def __init__(self, params: Any = None, *, label: str | None = None) -> None:
        self.params = params if params is not None else self.Params()
        # The label names columns and reasons; it is the registry name unless a pipeline renames it.
        self.label = label or self.name
        self._ready = False

    def setup(self) -> None:
        """Load models or tables once per worker. Called before the first batch."""

    def validate(self) -> None:
        """Raise ValueError for parameter values that types and bounds cannot rule out (e.g. a language
        code the model does not know). Called when the pipeline is loaded, before any work."""

    def ensure_setup(self) -> None:
        if not self._ready:
            self.setup()
            self._ready = True

    def describe(self) -> dict[str, Any]:
        """The resolved configuration of this stage, as recorded in the manifest."""
        return {"name": self.name, "label": self.label, "kind": self.kind, "params": _asdict(self.params)}

    def __getstate__(self) -> dict[str, Any]:
        # Loaded resources never travel: a worker calls setup() itself.
        state = dict(self.__dict__)
        for key in getattr(self, "_unpicklable", ()):
            state.pop(key, None)
        state["_ready"] = False
        return state


class RowStage(Stage):
    """A stage that maps one batch to one batch (same rows, possibly marked for rejection)."""

    def process(self, table: pa.Table) -> pa.Table:
        raise NotImplementedError

    def counters(self, table: pa.Table) -> dict[str, int]:
        """Totals this stage adds to its funnel row (``counts`` in the manifest), read from the batch
        :meth:`process` returned, rejected rows included (e.g. ``pii_v1``'s spans per type)."""
        return {}


class Scorer(RowStage):
    """Adds columns ``<label>.<field>``; never drops or changes rows."""

    kind = "score"

    def score(self, table: pa.Table) -> dict[str, pa.Array | Any]:
        """Return one array (or numpy array / list) per field, aligned with ``table``'s rows."""
        raise NotImplementedError

    def reference_rules(self) -> list[Rule]:
        """Reference thresholds that :meth:`as_filter` (``filter:``) applies, in the order they are
        checked; a rule's ``reason`` is the check's name (the rejected row reads ``<label>:<reason>``)."""
        return []

    def as_filter(self) -> FilterStage:
        """This scorer and its reference rules as one stage (``filter:`` in a pipeline)."""
        return FilterStage(self)

    def output_fields(self) -> list[str] | None:
        """The fields :meth:`score` adds (columns ``<label>.<field>``), known without running it, so a
        pipeline's ``select`` rules are checked before any work; None when they are not known ahead."""
        return None

    def process(self, table: pa.Table) -> pa.Table:
        fields = self.score(table)
        for field, values in fields.items():
            arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
            if len(arr) != table.num_rows:
                raise ValueError(f"{self.label}.{field}: {len(arr)} values for {table.num_rows} rows")
            table = table.append_column(schema.column_name(self.label, field), arr)
        return table


class FilterStage(RowStage):
    """A scorer and its reference rules as one stage: it adds the scorer's columns, then rejects every
    row that fails a rule, with the reason ``<label>:<rule reason>`` of the first failing rule.

    Its name, label and resources are the scorer's; the pipeline's funnel shows it as one row. The
    manifest records it as the scorer and a ``select`` (:meth:`parts`), so a finished run can be
    re-thresholded (``curate select``, :mod:`curate.verbs.reselect`) without scoring again.
    """

    kind = "filter"

    def __init__(self, scorer: Scorer, rules: list[Rule] | None = None) -> None:
        super().__init__(scorer.params, label=scorer.label)
        self.name = scorer.name
        self.resources = scorer.resources
        self.scorer = scorer
        self.rules = list(rules if rules is not None else scorer.reference_rules())
        if not self.rules:
            raise ValueError(f"{scorer.name} has no reference thresholds; use 'score:' and a 'select:'")

    def setup(self) -> None:
        self.scorer.ensure_setup()

    def process(self, table: pa.Table) -> pa.Table:
        scored = self.scorer.process(table)
        return with_rejections(scored, first_failing(scored, self.rules, prefix=self.label))

    def parts(self) -> list[dict[str, Any]]:
        """The manifest's record: the scorer's :meth:`~Stage.describe`, then its rules as a ``select``
        labelled like the scorer (the form ``curate select`` and the report read)."""
        select = {"rules": [r.__dict__ for r in self.rules]}
        return [
            self.scorer.describe(),
            {"name": "select", "label": self.label, "kind": "select", "params": select},
        ]


def scoring_stages(stages: list[Stage]) -> list[Stage]:
    """``stages`` with every filter replaced by its scorer (the same object): for code that looks for
    a kind of scorer (e.g. the ones fitted to a target sample) whatever shorthand wrapped it."""
    return [s.scorer if isinstance(s, FilterStage) else s for s in stages]


class Transform(RowStage):
    """Rewrites ``text``; may reject rows by filling ``schema.REJECT`` with a reason."""

    kind = "transform"


class GlobalStage(Stage):
    """A stage that needs every document: collect keys per part, reduce them all, apply the result."""

    kind = "dedup"

    def collect(self, table: pa.Table) -> pa.Table:
        """A small key table for one part (ids, hashes; never the texts)."""
        raise NotImplementedError

    def reduce(self, key_paths: list[str], engine: Engine) -> Any:
        """Combine the key tables (parquet files, in part order) into a picklable state."""
        raise NotImplementedError

    def apply(self, table: pa.Table, state: Any) -> pa.Table:
        """Mark rows of one part for rejection (``schema.REJECT``) or rewrite them, given the state."""
        raise NotImplementedError

    def summary(self, state: Any) -> dict[str, Any]:
        """Facts about the reduce result for the manifest (e.g. clusters found)."""
        return {}


def _asdict(params: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        return dataclasses.asdict(params)
    return dict(params or {})


def with_rejections(table: pa.Table, reasons: pa.Array | list[str | None], **extra: Any) -> pa.Table:
    """Return ``table`` with ``schema.REJECT`` set from ``reasons`` (None keeps the row).

    Reasons already present (from an earlier check in the same stage) win. ``extra`` adds or replaces
    columns (e.g. ``duplicate_of``) that travel with rejected rows.
    """
    import pyarrow.compute as pc

    new = reasons if isinstance(reasons, pa.Array | pa.ChunkedArray) else pa.array(reasons, pa.string())
    if schema.REJECT in table.column_names:
        old = table.column(schema.REJECT)
        new = pc.coalesce(old, new)
        table = table.drop_columns([schema.REJECT])
    table = table.append_column(schema.REJECT, new.cast(pa.string()))
    for key, values in extra.items():
        arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
        if key in table.column_names:
            table = table.set_column(table.column_names.index(key), key, arr)
        else:
            table = table.append_column(key, arr)
    return table
