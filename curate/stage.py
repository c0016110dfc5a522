"""The stage contract: small, picklable classes that work on Arrow batches.

Three shapes of stage, all constructed from a typed ``Params`` dataclass:

* :class:`Scorer` (``score:``) computes fields and adds them as columns ``<stage>.<field>``; it never
  drops a row. It may declare reference thresholds (:meth:`Scorer.reference_rules`), which the
  ``filter:`` shorthand turns into a ``select`` right after it.
* :class:`Transform` (``transform:``) rewrites the text column and may reject rows (e.g. a document left
  empty) by filling the ``REJECT`` column with a reason.
* :class:`GlobalStage` (``dedup:``) needs the whole corpus: it ``collect``\\ s a small key table per part
  (never texts), ``reduce``\\ s all key tables into a state (through the engine, e.g. a Ray Data
  shuffle), then ``apply``\\ s that state to every part.

Heavy resources (models) load in :meth:`Stage.setup`, once per worker, never in ``__init__``, so stages
pickle cheaply. Unit tests call ``process`` directly on small tables, no Ray involved.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from curate import schema

if TYPE_CHECKING:
    from curate.engine import Engine
    from curate.select import Rule


@dataclass(frozen=True)
class Resources:
    """What one worker of a stage needs. ``num_gpus`` may be fractional (several workers share a GPU)."""

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    batch_size: int = 4096


@dataclass
class NoParams:
    """A stage without parameters."""


class Stage:
    """Base of every stage. ``name`` is the registry name, set by ``STAGES.add``."""

    name: ClassVar[str] = "stage"
    kind: ClassVar[str] = "stage"
    Params: ClassVar[type] = NoParams
    resources: ClassVar[Resources] = Resources()

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


class Scorer(RowStage):
    """Adds columns ``<label>.<field>``; never drops or changes rows."""

    kind = "score"

    def score(self, table: pa.Table) -> dict[str, pa.Array | Any]:
        """Return one array (or numpy array / list) per field, aligned with ``table``'s rows."""
        raise NotImplementedError

    def reference_rules(self) -> list[Rule]:
        """Reference thresholds used by the ``filter:`` shorthand, in the order they are checked."""
        return []

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
