"""The phases after curation (proxy runs, export, report): how they run, not which they are.

A phase is a :class:`Phase`: a name (its pipeline section, and its key under ``manifest.json``'s
``phases``) and the function that runs it. Which phases there are, and in what order, is the root's to
say (``curate/compose.py``): this floor names no package above it. The root hands the runner its list
(``run_pipeline(..., phases=...)``) and, once at ``import curate``, declares it as the default
(:func:`install`) for callers that ask for "the phases" (``phases=True``).

This module imports nothing heavy at module level: the root imports it while ``import curate`` runs,
which must load no numpy, pyarrow or Ray (see :mod:`curate.runtime.allocator`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curate.core.engine import Engine
    from curate.runtime.context import RunContext


@dataclass(frozen=True)
class Phase:
    """One phase after curation.

    ``name``: the pipeline section it runs for (``cfg.<name>``, handed over as ``ctx.section``) and its
    key under ``manifest.json``'s ``phases``; ``run``: ``run(ctx) -> dict`` (the record kept in the
    manifest); ``always``: it runs without its section too, with the section's defaults (the report:
    every run gets one).
    """

    name: str
    run: Callable[[RunContext], dict[str, Any] | None]
    always: bool = False


_installed: tuple[Phase, ...] = ()  # set by the root at import (curate/compose.py)


def install(phases: Sequence[Phase]) -> None:
    """Make ``phases`` (in the order they run) the default of :func:`run_phases` and ``run_pipeline``.
    The root calls this once, at ``import curate``."""
    global _installed
    names = [p.name for p in phases]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"phases: {', '.join(twice)} given twice; each phase runs once, under its own name")
    _installed = tuple(phases)


def installed() -> tuple[Phase, ...]:
    """The phases the root declared (:func:`install`), in the order they run."""
    return _installed


def run_phases(
    cfg: Any,
    out_dir: str | Path,
    engine: Engine,
    manifest: dict[str, Any],
    phases: Sequence[Phase] | None = None,
) -> dict[str, Any]:
    """Run ``phases`` (default: :func:`installed`) whose sections the pipeline has, in order, recording
    their results.

    A run directory in object storage is mirrored locally first (:class:`curate.io.stage.Mirror`):
    the phases work on local files and each one's outputs are uploaded when it ends.
    """
    from curate.io.stage import Mirror
    from curate.io.storage import Location
    from curate.runtime.context import RunContext

    loc = Location.of(out_dir)
    mirror = Mirror(loc) if loc.remote else None
    run_dir = mirror.pull() if mirror else loc.local
    for phase in installed() if phases is None else phases:
        section = getattr(cfg, phase.name)  # the typed section, parsed at load
        if section is None and not phase.always:
            continue
        ctx = RunContext(
            run_dir=run_dir,
            config=cfg.raw,
            engine=engine,
            manifest=manifest,
            section=section,
            pipeline_path=cfg.path,
            mirror=mirror,
        )
        t0, cpu0, calls0 = time.perf_counter(), engine.cpu_s(), dict(engine.cpu_by_desc)
        result = phase.run(ctx)
        calls = {
            desc: round(cpu - calls0.get(desc, 0.0), 3)
            for desc, cpu in engine.cpu_by_desc.items()
            if cpu - calls0.get(desc, 0.0) > 0
        }
        manifest.setdefault("phases", {})[phase.name] = dict(
            result or {},
            wall_s=round(time.perf_counter() - t0, 3),
            # this process's and the engine's workers' CPU-seconds, and the engine calls' share by name
            cpu_s=round(engine.cpu_s() - cpu0, 3),
            cpu_s_by_call=calls,
        )
        Location.of(run_dir / "manifest.json").write_json(manifest)
        if mirror:
            mirror.push()
    return manifest
