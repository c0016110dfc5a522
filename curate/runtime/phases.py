"""The phases after curation (proxy runs, export, report), each in its package's ``phase`` module."""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

from curate.core.engine import Engine
from curate.io.stage import Mirror
from curate.io.storage import Location
from curate.runtime.context import RunContext

PHASES = ("proxy", "export", "report")  # the report shows what the export wrote


def run_phases(cfg: Any, out_dir: str | Path, engine: Engine, manifest: dict[str, Any]) -> dict[str, Any]:
    """Run the post-pipeline phases whose sections the pipeline has, in order, recording their results.

    A run directory in object storage is mirrored locally first (:class:`curate.io.stage.Mirror`):
    the phases work on local files and each one's outputs are uploaded when it ends.
    """
    loc = Location.of(out_dir)
    mirror = Mirror(loc) if loc.remote else None
    run_dir = mirror.pull() if mirror else loc.local
    for name in PHASES:
        section = getattr(cfg, name)  # the typed section, parsed at load
        if section is None and name != "report":
            continue  # every run gets a report (its defaults without a report: section)
        try:
            mod = importlib.import_module(f"curate.{name}.phase")
        except ModuleNotFoundError as e:
            if e.name == f"curate.{name}.phase" and name == "report":
                continue
            raise
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
        result = mod.run_phase(ctx)
        calls = {
            desc: round(cpu - calls0.get(desc, 0.0), 3)
            for desc, cpu in engine.cpu_by_desc.items()
            if cpu - calls0.get(desc, 0.0) > 0
        }
        manifest.setdefault("phases", {})[name] = dict(
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
