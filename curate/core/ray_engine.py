"""The Ray engine: the only module that imports ``ray``.

:class:`RayEngine` runs stages on Ray: embedded (``ray.init`` on this machine, loopback only, no
dashboard) or on a cluster (``address`` / ``RAY_ADDRESS``, or inside ``ray job submit``). Stateful work
runs on a pool of actors that call ``setup()`` once each; tasks are retried on worker death, which is
safe because every task writes its output atomically. Results come back in item order, whatever order
they finish in.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

import pyarrow as pa
from tqdm.auto import tqdm

from curate.core.engine_base import ONE_CPU, Engine, WorkBar, Worker
from curate.core.partition import concat_tables, partition_by_key, single_partition
from curate.core.ray_connect import RayOutput, _connect, keep_sigterm_handler
from curate.core.resources import Resources

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
POLL_S = 2.0  # how often a bar over Work items reads the share done of the items in flight


def _timed(fn: Callable[..., Any]) -> Callable[..., tuple[Any, float]]:
    """``fn`` returning ``(result, CPU-seconds of the worker process during the call)``: its threads
    included (torch's, Arrow's), so the driver can add up what its tasks cost."""

    def run(*args: Any) -> tuple[Any, float]:
        c0 = time.process_time()
        out = fn(*args)
        return out, time.process_time() - c0

    run.__name__ = getattr(fn, "__name__", "task")  # the task's name in Ray's logs
    return run


def _timed_partition(path: str, key: str, p: int, columns: list[str] | None) -> list[Any]:
    """:func:`partition_by_key`'s ``p`` tables and, last, the task's CPU-seconds."""
    c0 = time.process_time()
    parts = partition_by_key(path, key, p, columns)
    return [*parts, time.process_time() - c0]


def _timed_single(path: str, key: str, p: int, columns: list[str] | None) -> tuple[pa.Table, float]:
    """:func:`single_partition`'s table and the task's CPU-seconds."""
    c0 = time.process_time()
    table = single_partition(path, key, p, columns)
    return table, time.process_time() - c0


class _ActorPool:
    """The actors of one ``map_worker`` call, and which work item runs where.

    A call goes only to an actor that has started (its ``ready()`` answered), at most ``PER_ACTOR`` at
    a time, the next item to whichever actor finishes one. An actor that never starts (after a lost
    node its CPU may never come back: the survivors' CPUs are held by the other actors) then holds no
    work, where calls placed on it up front waited forever. A call whose actor died or became
    unreachable (a worker or a node lost: "the task may or may not have been executed") goes back to
    the queue for another actor, up to ``max_retries`` times per item; safe because every unit of work
    writes atomically and is idempotent. When every actor is lost, one more is started.
    """

    PER_ACTOR = 2

    def __init__(self, start: Callable[[], Any], n: int, max_retries: int) -> None:
        self.start, self.max_retries = start, max_retries
        self.actors: list[Any] = []
        self.busy: dict[int, int] = {}  # started, usable actor -> its calls in flight
        self.starting: dict[Any, int] = {}  # ready() ref -> actor
        self.calls: dict[Any, tuple[int, int]] = {}  # call ref -> (item, actor)
        self.lost = 0
        self.cpu_s = 0.0  # the workers' CPU-seconds: building each worker, then every call
        for _ in range(n):
            self._add()

    def _add(self) -> None:
        self.actors.append(self.start())
        self.starting[self.actors[-1].ready.remote()] = len(self.actors) - 1

    def _dispatch(self, todo: collections.deque[int], items: Sequence[Any]) -> None:
        for k in list(self.busy):
            while todo and self.busy[k] < self.PER_ACTOR:
                i = todo.popleft()
                self.calls[self.actors[k].run.remote(items[i])] = (i, k)
                self.busy[k] += 1
        if todo and not self.busy and not self.starting:  # every actor lost: one more
            self._add()

    def _started(self, ref: Any) -> None:
        import ray

        k = self.starting.pop(ref)
        try:
            self.cpu_s += float(ray.get(ref))
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.ActorDiedError):
            self.lost += 1
            if self.lost > len(self.actors) + self.max_retries:  # e.g. the worker cannot be built
                raise
            return
        self.busy[k] = 0

    def run(self, items: Sequence[Any], results: list[Any], bar: tqdm | WorkBar) -> None:
        import ray

        todo = collections.deque(range(len(items)))
        attempts: dict[int, int] = {}
        left = len(items)
        work = bar if isinstance(bar, WorkBar) else None
        while left:
            self._dispatch(todo, items)
            ready, _ = ray.wait(
                [*self.starting, *self.calls], num_returns=1, timeout=POLL_S if work is not None else None
            )
            if not ready:
                if work is not None:
                    work.running(i for i, _ in self.calls.values())
                continue
            ref = ready[0]
            if ref in self.starting:
                self._started(ref)
                continue
            i, k = self.calls.pop(ref)
            try:
                results[i], cpu = ray.get(ref)
                self.cpu_s += cpu
            except (ray.exceptions.ActorUnavailableError, ray.exceptions.ActorDiedError) as e:
                attempts[i] = attempts.get(i, 0) + 1
                if attempts[i] > self.max_retries:
                    raise
                log.warning("work item %d: %s; retrying it (attempt %d)", i, type(e).__name__, attempts[i])
                self.busy.pop(k, None)  # no more calls to that actor
                todo.appendleft(i)
                continue
            if k in self.busy:
                self.busy[k] -= 1
            left -= 1
            if isinstance(bar, WorkBar):
                bar.finished(i)
            else:
                bar.update(1)

    def kill(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)


class RayEngine(Engine):
    """Runs work on Ray: an embedded local runtime by default, or the cluster at ``address``."""

    kind = "ray"

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        progress: bool = True,
        max_retries: int = 3,
        start_log: str | os.PathLike[str] | None = None,
    ) -> None:
        import ray

        self.progress = progress
        self.max_retries = max_retries
        address = address or os.environ.get("RAY_ADDRESS") or None
        self._owns_runtime = False
        self._output: RayOutput | None = None
        if not ray.is_initialized():
            # Ray's own output goes to ``start_log`` (a run's ray.log; else the Ray session's log folder),
            # the workers' stdout and stderr stay in the session's logs: the terminal holds curate's
            # progress and results (curate -v shows it all). See curate/core/ray_connect.py.
            self._output = RayOutput(start_log)
            kwargs: dict[str, Any] = dict(
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=self._output.log_to_driver,
                configure_logging=True,
            )
            with keep_sigterm_handler(ray), self._output.starting():
                if address:
                    _connect(ray, address, kwargs)
                else:
                    # Embedded: a new runtime of our own on this machine. address="local" matters: with
                    # no address, Ray attaches to whatever cluster /tmp/ray/ray_current_cluster names
                    # (another user's `ray start`). Its servers still bind the wildcard address; see
                    # curate/runtime/netns.py.
                    ray.init(address="local", num_cpus=num_cpus, _node_ip_address="127.0.0.1", **kwargs)
                    self._owns_runtime = True
        from ray.data import DataContext

        DataContext.get_current().enable_progress_bars = False
        if self._output is not None:
            self._output.attach(ray, cluster=bool(address))  # after ray.data's import: it adds a handler
        self.address = address
        self.num_workers = max(1, int(ray.available_resources().get("CPU", 1)))

    def cluster_gpus(self) -> float:
        """The cluster's ``GPU`` resource (e.g. workers started with ``ray start --num-gpus=N``), so a
        CPU-only driver still schedules GPU work on GPU workers."""
        import ray

        return float(ray.cluster_resources().get("GPU", 0.0))

    def describe(self) -> dict[str, Any]:
        import ray

        return {
            "kind": self.kind,
            "address": self.address or "embedded",
            "num_workers": self.num_workers,
            "nodes": len([n for n in ray.nodes() if n.get("Alive")]),
            "ray": ray.__version__,
            "max_retries": self.max_retries,
        }

    def _gather(
        self,
        refs: dict[Any, int],
        results: list[Any],
        bar: tqdm | WorkBar,
        pending: Iterable[tuple[int, Callable[[], Any]]],
        max_in_flight: int,
    ) -> float:
        """Collect task results as they finish, keeping ``max_in_flight`` submitted (Ray retries the
        tasks themselves; actor calls go through :class:`_ActorPool`). Each task returns its result and
        its CPU-seconds (:func:`_timed`); returns their sum."""
        import ray

        pending = iter(pending)
        exhausted = False
        cpu_s = 0.0
        work = bar if isinstance(bar, WorkBar) else None
        while refs or not exhausted:
            while not exhausted and len(refs) < max_in_flight:
                try:
                    idx, submit = next(pending)
                except StopIteration:
                    exhausted = True
                    break
                refs[submit()] = idx
            if not refs:
                break
            done, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_S if work is not None else None)
            if work is not None and not done:
                work.running(refs.values())
            for ref in done:
                i = refs.pop(ref)
                results[i], cpu = ray.get(ref)
                cpu_s += cpu
                if isinstance(bar, WorkBar):
                    bar.finished(i)
                else:
                    bar.update(1)
        return cpu_s

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], *, resources: Resources = ONE_CPU, desc: str = ""
    ) -> list[R]:
        import ray

        remote = ray.remote(
            num_cpus=resources.num_cpus,
            num_gpus=resources.num_gpus,
            max_retries=self.max_retries,
            retry_exceptions=False,
        )(_timed(fn))
        results: list[Any] = [None] * len(items)
        slots = int(self.num_workers / resources.num_cpus) if resources.num_cpus else self.num_workers
        work = self._work_bar(items, slots, desc)
        with work or self._bar(len(items), desc) as bar:
            cpu = self._gather(
                {},
                results,
                bar,
                ((i, functools.partial(remote.remote, it)) for i, it in enumerate(items)),
                max_in_flight=max(2 * self.num_workers, 1),
            )
        self._add_cpu(desc, cpu)
        return results

    def _add_cpu(self, desc: str, cpu_s: float) -> None:
        """Count a call's CPU-seconds on the workers (:attr:`Engine.worker_cpu_s`, per description)."""
        self.worker_cpu_s += cpu_s
        self._log_call(desc, cpu_s)

    def map_worker(
        self,
        factory: Callable[[], Worker],
        items: Sequence[Any],
        *,
        resources: Resources = ONE_CPU,
        desc: str = "",
    ) -> list[Any]:
        import ray

        if not items:
            return []

        @ray.remote
        class _Actor:
            def __init__(self, factory: Callable[[], Worker]) -> None:
                c0 = time.process_time()
                self.worker = factory()
                self.setup_cpu_s = time.process_time() - c0

            def ready(self) -> float:
                """The CPU-seconds building the worker took (models loaded, state read)."""
                return self.setup_cpu_s

            def run(self, item: Any) -> tuple[Any, float]:
                c0 = time.process_time()
                out = self.worker(item)
                return out, time.process_time() - c0

        cpus = max(resources.num_cpus, 0.001)
        n = len(items)
        # Sized by the CPUs of the nodes alive now, not those at start (a lost node's are gone).
        workers = min(self.num_workers, max(1, int(ray.cluster_resources().get("CPU", 1))))
        slots = workers / cpus if cpus else workers
        if resources.num_gpus:
            gpus = ray.available_resources().get("GPU", 0)
            slots = min(slots, gpus / resources.num_gpus) if gpus else 1
        # No actor restarts: a restarted actor waits for a CPU, and after a node is lost there may be
        # none (the survivors' CPUs are held by the other actors). A dead actor's calls fail fast instead
        # and go to a live one (_ActorPool).
        actor_cls = cast(Any, _Actor).options(
            num_cpus=resources.num_cpus, num_gpus=resources.num_gpus, max_restarts=0
        )
        pool = _ActorPool(lambda: actor_cls.remote(factory), max(1, min(n, int(slots))), self.max_retries)
        results: list[Any] = [None] * n
        work = self._work_bar(items, max(1, min(n, int(slots))), desc)
        try:
            with work or self._bar(n, desc) as bar:
                pool.run(items, results, bar)
        finally:
            pool.kill()
            self._add_cpu(desc, pool.cpu_s)
        return results

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
        import ray

        p = num_partitions or max(1, self.num_workers)
        if not paths:
            return [reduce(pa.table({})) for _ in range(p)]
        # With num_returns=1 Ray stores the returned list itself as the one object, so one partition
        # goes through a function that returns the table, not a list of one table.
        # Every task returns its CPU-seconds too (the last of a partition task's returns).
        part_remote: Any
        if p > 1:
            part_remote = ray.remote(num_returns=p + 1, max_retries=self.max_retries)(_timed_partition)
        else:
            part_remote = ray.remote(num_returns=2, max_retries=self.max_retries)(_timed_single)
        pieces: list[Any] = []
        cpu_refs: list[Any] = []
        for path in paths:
            refs = part_remote.remote(path, key, p, columns)
            pieces.append(refs[:p])
            cpu_refs.append(refs[p])

        @ray.remote(max_retries=self.max_retries)
        def _reduce(*tables: pa.Table) -> tuple[Any, float]:
            c0 = time.process_time()
            out = reduce(concat_tables(tables))
            return out, time.process_time() - c0

        out_refs = [_reduce.remote(*[pieces[m][i] for m in range(len(paths))]) for i in range(p)]
        results: list[Any] = [None] * p
        cpu = 0.0
        with self._bar(p, desc) as bar:
            index = {r: i for i, r in enumerate(out_refs)}
            remaining = list(out_refs)
            while remaining:
                done, remaining = ray.wait(remaining, num_returns=1)
                for ref in done:
                    results[index[ref]], reduce_cpu = ray.get(ref)
                    cpu += reduce_cpu
                    bar.update(1)
        self._add_cpu(desc, cpu + sum(ray.get(cpu_refs)))
        return results

    def shutdown(self) -> None:
        import ray

        if self._owns_runtime and ray.is_initialized():
            ray.shutdown()
        if self._output is not None:
            self._output.detach()
            self._output = None


def assigned_gpus() -> list[str]:
    """The GPU ids Ray assigned to the calling task or actor; ``[]`` outside Ray or when it asked for
    none. Lets a worker tell "asked for a GPU" from "found CUDA" without importing ``ray`` itself."""
    import sys

    if "ray" not in sys.modules:  # never started Ray in this process: not a Ray worker
        return []
    import ray

    if not ray.is_initialized():
        return []
    try:
        return [str(g) for g in ray.get_gpu_ids()]
    except Exception:  # the driver, or a Ray without a worker context
        return []
