"""The execution layer: :func:`make_engine`, and the names callers use to run work.

Two engines share one interface (:class:`Engine`, in :mod:`curate.core.engine_base`):

* :class:`RayEngine` (the default, :mod:`curate.core.ray_engine`, the only module that imports
  ``ray``) runs stages on Ray: embedded (``ray.init`` on this machine, loopback only, no dashboard) or
  on a cluster (``address`` / ``RAY_ADDRESS``, or inside ``ray job submit``). Stateful work runs on a
  pool of actors that call ``setup()`` once each; tasks are retried on worker death, which is safe
  because every task writes its output atomically.
* :class:`InlineEngine` runs the same calls in this process, one at a time: for unit tests and
  debugging. Results are identical by construction (same functions, same order of outputs).

Work items are independent and idempotent; results come back in item order, whatever order they
finish in, so every run's output is deterministic.
"""

from __future__ import annotations

import os

from curate.core.engine_base import ONE_CPU, Engine, EngineError, InlineEngine, Worker
from curate.core.ray_engine import RayEngine, assigned_gpus

__all__ = [
    "ONE_CPU",
    "Engine",
    "EngineError",
    "InlineEngine",
    "RayEngine",
    "Worker",
    "assigned_gpus",
    "make_engine",
]


def make_engine(
    kind: str = "ray",
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
    max_retries: int = 3,
    start_log: str | os.PathLike[str] | None = None,
) -> Engine:
    """Build an engine by name: ``ray`` (embedded or ``address``) or ``inline``.

    ``start_log``: a file that receives Ray's start-up output instead of the terminal.
    ``max_retries``: how often a Ray task is retried, and an actor's call sent to another actor, after
    its worker process (or node) dies; safe because every unit of work writes atomically.
    """
    if kind == "inline":
        return InlineEngine(progress=progress)
    if kind == "ray":
        return RayEngine(
            address=address,
            num_cpus=num_cpus,
            progress=progress,
            max_retries=max_retries,
            start_log=start_log,
        )
    raise ValueError(f"unknown engine {kind!r}; valid engines: inline, ray")
