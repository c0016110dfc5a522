"""The engine interface (:class:`Engine`) and :class:`InlineEngine`, which runs it in this process.

:class:`InlineEngine` runs every call here, one at a time, in item order: for unit tests and debugging.
:class:`curate.core.ray_engine.RayEngine` runs the same calls on Ray; results are identical by
construction (same functions, same order of outputs). :func:`curate.core.engine.make_engine` builds
either by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import pyarrow as pa
from tqdm.auto import tqdm

from curate.core.partition import concat_tables, partition_by_key
from curate.core.resources import Resources

ONE_CPU = Resources()  # the default: a worker needs one CPU and no GPU
T = TypeVar("T")
R = TypeVar("R")


class Worker(Protocol):
    """A stateful worker: built once per actor, then called for many items."""

    def __call__(self, item: Any) -> Any: ...


class Engine:
    """Interface shared by the engines."""

    kind = "abstract"
    num_workers = 1
    progress = True

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], *, resources: Resources = ONE_CPU, desc: str = ""
    ) -> list[R]:
        """Apply a stateless function to every item; results in item order."""
        raise NotImplementedError

    def map_worker(
        self,
        factory: Callable[[], Worker],
        items: Sequence[Any],
        *,
        resources: Resources = ONE_CPU,
        desc: str = "",
    ) -> list[Any]:
        """Run ``factory()`` once per worker (actor), then call it on every item; results in order."""
        raise NotImplementedError

    def shuffle(
        self,
        paths: Sequence[str],
        *,
        key: str,
        reduce: Callable[[pa.Table], Any],
        num_partitions: int | None = None,
        columns: list[str] | None = None,
        desc: str = "",
    ) -> list[Any]:
        """Hash-partition the rows of parquet ``paths`` by the uint64 column ``key`` and call ``reduce``
        once per partition with all its rows (so every group of equal keys is seen whole).

        Returns the reduce results in partition order. Only the key tables travel, never texts.
        """
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "num_workers": self.num_workers}

    def cluster_gpus(self) -> float:
        """Logical GPUs the engine can schedule work on, summed over its nodes (0 for in-process
        engines: their work runs here, and picks its own device)."""
        return 0.0

    def shutdown(self) -> None:
        """Release the engine's resources (an embedded Ray runtime is stopped)."""

    def _bar(self, total: int, desc: str) -> tqdm:
        return tqdm(total=total, desc=desc, unit="part", leave=False, disable=not self.progress or total == 0)


class EngineError(RuntimeError):
    """The execution engine cannot start (e.g. a cluster refused this client); the message says what to set."""


class InlineEngine(Engine):
    """Runs everything in this process, in item order."""

    kind = "inline"

    def __init__(self, *, progress: bool = False) -> None:
        self.progress = progress

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], *, resources: Resources = ONE_CPU, desc: str = ""
    ) -> list[R]:
        out = []
        with self._bar(len(items), desc) as bar:
            for item in items:
                out.append(fn(item))
                bar.update(1)
        return out

    def map_worker(
        self,
        factory: Callable[[], Worker],
        items: Sequence[Any],
        *,
        resources: Resources = ONE_CPU,
        desc: str = "",
    ) -> list[Any]:
        worker = factory()
        return self.map(worker, items, resources=resources, desc=desc)

    def shuffle(
        self,
        paths: Sequence[str],
        *,
        key: str,
        reduce: Callable[[pa.Table], Any],
        num_partitions: int | None = None,
        columns: list[str] | None = None,
        desc: str = "",
    ) -> list[Any]:
        p = num_partitions or 1
        parts = [partition_by_key(path, key, p, columns) for path in paths]
        return [reduce(concat_tables(parts[m][i] for m in range(len(paths)))) for i in range(p)]
