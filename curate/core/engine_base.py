"""The engine interface (:class:`Engine`) and :class:`InlineEngine`, which runs it in this process.

:class:`InlineEngine` runs every call here, one at a time, in item order: for unit tests and debugging.
:class:`curate.core.ray_engine.RayEngine` runs the same calls on Ray; results are identical by
construction (same functions, same order of outputs). :func:`curate.core.engine.make_engine` builds
either by name.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

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


@runtime_checkable
class Work(Protocol):
    """A work item that says how much work it is, so that a progress bar counts work, not items (a few
    long items, such as proxy training runs, would otherwise show nothing for minutes).

    ``work()``: its expected seconds on one worker slot (an estimate at rates measured on this machine);
    ``done()``: the share of it finished so far, read while it runs (0 when unknown); ``size()``: what it
    does in its own unit, for the bar (``(294912, "tokens")``)."""

    def work(self) -> float: ...

    def done(self) -> float: ...

    def size(self) -> tuple[float, str]: ...


def list_schedule(works: Sequence[float], slots: int) -> float:
    """Wall time of ``works`` run in order on ``slots`` equal slots, each item on the first slot free (how
    the engines hand out items): the time the last one ends."""
    free = [0.0] * max(1, slots)
    for w in works:
        heapq.heapreplace(free, free[0] + max(0.0, w))
    return max(free)


class Eta:
    """Time left of a set of work items, from the plan and what has been seen.

    The plan: ``works`` (each item's expected slot-seconds) on ``slots`` slots. What is left is the plan's
    schedule of the work not yet done (items running first, with what is left of them): as planned, or
    divided by the pace seen (the work done per second over the work the slots would do per second at the
    plan's rates). The two are averaged with the plan's weight that of ``prior_s`` seconds against the
    seconds elapsed, so the first figure is the plan's and the pace seen takes over as the items progress;
    before any work is seen done, the plan is stretched by the time that passed without it."""

    def __init__(self, works: Sequence[float], slots: int, prior_s: float = 30.0) -> None:
        self.works = [max(0.0, float(w)) for w in works]
        self.slots = max(1, min(slots, len(self.works) or 1))
        self.prior_s = prior_s
        self.planned_s = list_schedule(self.works, self.slots)

    def pace(self, elapsed: float, done_work: float) -> float:
        """Work done per second over the slots' planned rate (1: as planned)."""
        return done_work / (self.slots * elapsed) if elapsed > 0 else 1.0

    def left(self, elapsed: float, done: Sequence[float]) -> float:
        """Seconds left, given ``done[i]``: the share of item ``i`` finished (1 for a finished item; items
        with a share in (0, 1) are running and go first)."""
        done_work = sum(w * min(1.0, max(0.0, d)) for w, d in zip(self.works, done, strict=True))
        running = [w * (1 - d) for w, d in zip(self.works, done, strict=True) if 0 < d < 1]
        waiting = [w for w, d in zip(self.works, done, strict=True) if d <= 0]
        planned = list_schedule(running + waiting, self.slots)
        if done_work <= 0:
            return planned * (elapsed + self.prior_s) / self.prior_s if self.prior_s else planned
        weight = self.prior_s / (self.prior_s + elapsed)
        return weight * planned + (1 - weight) * planned / self.pace(elapsed, done_work)


def _count(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e4 else f"{x:,.0f}"


def _clock(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


class WorkBar:
    """A progress bar over :class:`Work` items: percent of the expected work done, items and units done
    (e.g. tokens trained), elapsed time and the :class:`Eta`. ``running(indices)`` reads the share done of
    items in flight (call it every few seconds); ``finished(i)`` marks one done."""

    def __init__(self, items: Sequence[Work], slots: int, desc: str, *, disable: bool) -> None:
        self.items = items
        self.share = [0.0] * len(items)
        self.disable = disable
        sizes = [it.size() for it in items] if not disable else []
        self.units = [float(n) for n, _ in sizes]
        self.unit = sizes[0][1] if sizes else ""
        self.eta = Eta([it.work() for it in items] if not disable else [0.0] * len(items), slots)
        self.t0 = time.perf_counter()
        self.finished_n = 0
        self.text = ""
        self.bar = tqdm(total=1000, desc=desc, leave=False, disable=disable or not items)
        self._show()

    def finished(self, i: int) -> None:
        self.share[i] = 1.0
        self.finished_n += 1
        self._show()

    def running(self, indices: Iterable[int]) -> None:
        if self.disable:
            return
        for i in indices:
            if self.share[i] < 1.0:
                try:
                    self.share[i] = min(0.999, max(0.0, float(self.items[i].done())))
                except (OSError, ValueError):  # a file being written; read it next time
                    continue
        self._show()

    def _show(self) -> None:
        if self.disable or not self.items:
            return
        elapsed = time.perf_counter() - self.t0
        total = sum(self.eta.works) or 1.0
        done = sum(w * s for w, s in zip(self.eta.works, self.share, strict=True))
        units = sum(n * s for n, s in zip(self.units, self.share, strict=True))
        self.bar.n = int(1000 * done / total)
        self.text = (
            f"{self.finished_n}/{len(self.items)} done, {_count(units)}/{_count(sum(self.units))} {self.unit}, "
            f"{_clock(elapsed)} elapsed, ETA {_clock(self.eta.left(elapsed, self.share))}"
        )
        # the text after the bar, as written (tqdm's own postfix starts with a comma)
        self.bar.bar_format = "{desc}: {percentage:3.0f}%|{bar}| " + self.text.replace("{", "{{").replace(
            "}", "}}"
        )
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> WorkBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Engine:
    """Interface shared by the engines."""

    kind = "abstract"
    num_workers = 1
    progress = True
    # CPU-seconds that work items used in processes other than this one (Ray's workers; 0 inline, where
    # the work runs here and time.process_time() has it), summed over every call so far.
    worker_cpu_s = 0.0

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

    def _log_call(self, desc: str, cpu_s: float) -> None:
        """Add a call's CPU-seconds to :attr:`cpu_by_desc` under its description."""
        key = desc or "work"
        by = self.__dict__.setdefault("cpu_by_desc", {})
        by[key] = by.get(key, 0.0) + cpu_s

    @property
    def cpu_by_desc(self) -> dict[str, float]:
        """CPU-seconds of the calls so far by their description (``proxy runs``, ``segment (...)``): the
        workers' on Ray, this process's during the call inline."""
        return self.__dict__.setdefault("cpu_by_desc", {})

    def cpu_s(self) -> float:
        """CPU-seconds of this process and of the engine's workers so far: a difference of two readings
        is what the work between them cost, wherever it ran."""
        return time.process_time() + self.worker_cpu_s

    def _bar(self, total: int, desc: str) -> tqdm:
        return tqdm(total=total, desc=desc, unit="part", leave=False, disable=not self.progress or total == 0)

    def _work_bar(self, items: Sequence[Any], slots: int, desc: str) -> WorkBar | None:
        """A :class:`WorkBar` when every item is :class:`Work` and the bar is shown, else None."""
        if not self.progress or not items or not all(isinstance(it, Work) for it in items):
            return None
        return WorkBar(items, slots, desc, disable=False)


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
        c0 = time.process_time()
        work = self._work_bar(items, 1, desc)
        with work or self._bar(len(items), desc) as bar:
            for i, item in enumerate(items):
                out.append(fn(item))
                if isinstance(bar, WorkBar):
                    bar.finished(i)
                else:
                    bar.update(1)
        self._log_call(desc, time.process_time() - c0)
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
        c0 = time.process_time()
        p = num_partitions or 1
        parts = [partition_by_key(path, key, p, columns) for path in paths]
        out = [reduce(concat_tables(parts[m][i] for m in range(len(paths)))) for i in range(p)]
        self._log_call(desc, time.process_time() - c0)
        return out
