"""Runs a pipeline: read → row stages → global stages → … → kept/ + rejected/ + manifest.json.

Stages are cut into *segments* at every global stage (:mod:`curate.runtime.segments`). Segment 0 reads input
shards; each later segment first applies the previous global stage's state, then its row stages, to
every part the segment before wrote. A global stage collects small key tables from every part, reduces
them once (on the engine, e.g. a shuffle), and pickles the state. Every unit of work writes its outputs
atomically and then a small stats file, so a rerun of the same command on the same directory skips
finished work and gives identical output (resume). Accounting is checked against the files actually
written (:mod:`curate.runtime.manifest`); the phases after curation are :mod:`curate.runtime.phases`.

The run directory may be an object-storage URL (``s3://bucket/runs/web``): every file goes through
:class:`curate.io.storage.Location`, whose writes are atomic there too (one PUT per file), and a unit is
committed by its ``done-*.json`` marker listing its files' sizes, checked on resume. Global stages'
scratch (key tables, shuffle files, drop lists, their pickled state) lives under ``_work/`` too, in the
same storage, so every node of a cluster reads what another wrote: no node's local disk is shared
(:mod:`curate.io.scratch`).
"""

from __future__ import annotations

import functools
import logging
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from curate.core.engine import Engine, make_engine
from curate.core.stage import scoring_stages
from curate.io import shardcache
from curate.io.stage import stage_dir
from curate.io.storage import Location
from curate.pipeline.config import PipelineConfig, build_source, build_stages
from curate.runtime.manifest import AccountingError, build_manifest, cpu_block
from curate.runtime.phases import Phase, run_phases
from curate.runtime.rundir import clear_run_dir
from curate.runtime.segments import (
    ORDER,
    READ_STAGE,
    Segment,
    SegmentWorker,
    collect_keys,
    drop_unredacted_parts,
    merge_stats,
    new_stats,
    plan_segments,
)
from curate.runtime.segments import with_order as _with_order
from curate.runtime.tokens import token_counter

# Importable from here as before: tests/reliability/test_fuzz.py takes ORDER and _with_order from here.
__all__ = ["ORDER", "AccountingError", "RunDirError", "Runner", "_with_order", "run_pipeline"]

log = logging.getLogger(__name__)
RAY_LOG = "ray.log"


class RunDirError(RuntimeError):
    """The output directory holds a different run."""


def _say(line: str) -> None:
    """One line to stderr: what the run does with its directory (resume, restart)."""
    print(line, file=sys.stderr, flush=True)


class Runner:
    """Runs one pipeline into one run directory. Use :func:`run_pipeline`."""

    def __init__(
        self,
        cfg: PipelineConfig,
        out_dir: str | Path,
        engine: Engine,
        *,
        progress: bool = True,
        restart: bool = False,
    ) -> None:
        self.cfg = cfg
        self.restart = restart
        self.out = Location.of(out_dir)
        self.work = self.out.child("_work")
        # Global-stage scratch: beside the parts, in the run directory's storage (a path or a bucket), so
        # that tasks on every node read what tasks on other nodes wrote.
        self.scratch = self.work
        self.engine = engine
        self.progress = progress
        self.source = build_source(cfg)
        self.stages = build_stages(cfg)
        self.segments = plan_segments(self.stages)
        self.tokens = token_counter(
            {"tokenizer": cfg.export.tokenizer_named()} if cfg.export else None,
            proxy_tokenizer=cfg.proxy.tokenizer_named() if cfg.proxy else None,
        )

    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        self._check_input()
        self._claim_dir()
        self._attempt = self._start_attempt()
        from curate.targeting.prepare import prepare

        # Target-aware scorers are fitted (or their fits reused) before any stage runs.
        # Its samples and fits live on local disk: in the run directory, or in the run's local mirror when
        # that is in object storage (the stages read the fitted models from there, as the dedup scratch).
        target_root = stage_dir(self.out.url) if self.out.remote else self.out.local
        cpu0 = self.engine.cpu_s()
        self.target = prepare(
            self.cfg,
            target_root,
            scoring_stages(self.stages),
            self.engine,
            self.source,
            echo=self.progress,
            remote=self.out.child("target") if self.out.remote else None,
            cache=shardcache.folder(self.work.url) if self.source.costly_read else None,
        )
        cpu = self._add_cpu({"target_s": self.engine.cpu_s() - cpu0})
        stats: dict[str, dict[str, Any]] = {}
        io_cpu_s = 0.0
        order: list[str] = [READ_STAGE]
        summaries: dict[str, Any] = {}
        parts: list[str] = []
        for seg in self.segments:
            items = self.source.shards() if seg.index == 0 else list(enumerate(parts))
            results = self._run_segment(seg, items)
            if seg.index == 0 and self.source.costly_read:
                shardcache.clear(self.work.url)  # segment 0 read the kept batches: no reader left
            parts = [p for r in results for p in r["parts"]]
            for r in results:
                io_cpu_s += float(r.get("io_cpu_s", 0.0))
                for label, s in r["stats"].items():
                    merge_stats(stats.setdefault(label, new_stats(label)), s)
            order += [st.label for st in seg.stages() if st.label not in order]
            if seg.collector is not None:
                label = seg.collector.label
                summaries[label], gstats = self._reduce(seg, parts)
                stats.setdefault(label, new_stats(label))
                stats[label]["wall_s"] += gstats["wall_s"]
                stats[label]["cpu_s"] += gstats["cpu_s"]
        self._finalize(parts)
        drop_unredacted_parts(self.work, self.segments)  # no raw text left once pii_v1 ran
        attempts = self._finish_attempt(t0)
        manifest = self._manifest(stats, order, summaries, sum(attempts))
        manifest["attempts_wall_s"] = [round(a, 3) for a in attempts]
        manifest["cpu"] = cpu_block(manifest["stages"], io_s=io_cpu_s, target_s=cpu["target_s"])
        self.out.child("manifest.json").write_json(manifest)
        return manifest

    def _add_cpu(self, spent: dict[str, float]) -> dict[str, float]:
        """Add this attempt's CPU-seconds outside the units (``target_s``: the target fits) to what
        earlier attempts spent (``_work/cpu.json``), so a resumed run still counts the first attempt's."""
        path = self.work.child("cpu.json")
        total = path.read_json() if path.exists() else {}
        for k, v in spent.items():
            total[k] = round(float(total.get(k, 0.0)) + v, 4)
        path.write_json(total)
        return total

    def _start_attempt(self) -> int:
        """Record a new attempt (a first run or a resume) in ``_work/attempts.json``; return its index.

        An attempt that never finished (killed) is given the time from its start to the last file it
        wrote under ``_work``, so the run's wall time sums every attempt, not just the last.
        """
        path = self.work.child("attempts.json")
        attempts = path.read_json() if path.exists() else []
        now = time.time()
        for a in attempts:
            if a.get("wall_s") is None:
                mtimes = [m for _, _, m in self.work.walk_files()]
                written = [m for m in mtimes if a["start"] <= m <= now]
                a["wall_s"] = round(max(written) - a["start"], 3) if written else 0.0
                a["finished"] = False
        attempts.append({"start": now, "wall_s": None})
        path.write_json(attempts)
        return len(attempts) - 1

    def _finish_attempt(self, t0: float) -> list[float]:
        """This attempt's wall time, stored; returns every attempt's."""
        path = self.work.child("attempts.json")
        attempts = path.read_json()
        attempts[self._attempt].update(wall_s=round(time.perf_counter() - t0, 3), finished=True)
        path.write_json(attempts)
        return [float(a["wall_s"]) for a in attempts]

    def _check_input(self) -> None:
        """Refuse input files that clearly hold another format than ``input.format``, or lack the text
        (or a set id) field, before any work."""
        from curate.io.multi import each_source
        from curate.io.sources import SourceError
        from curate.pipeline.validate import check_input_content, check_input_fields

        for i, (name, source) in enumerate(each_source(self.source)):  # several for a list ``input:``
            fmt = source.name
            try:
                if fmt in ("jsonl", "parquet", "warc"):
                    check_input_content(fmt, [s.path for s in source.shards()])
                check_input_fields(source, "input" if name is None else f"input[{i}]")
            except ValueError as e:
                raise SourceError(f"input{'' if name is None else f' {name}'}: {e}") from None

    # -- directory claim and resume -------------------------------------------------------------------
    def _claim_dir(self) -> None:
        self.work.makedirs()
        shards = [s.index for s in self.source.shards()]
        ident = {
            "fingerprint": self.cfg.fingerprint(),
            "pipeline": self.cfg.name,
            # the plan of this run, so that a later run of another pipeline counts this one's units right
            "shards": len(shards),
            "segments": len(self.segments),
        }
        marker = self.work.child("run.json")
        if self.restart and marker.exists():
            clear_run_dir(self.out, keep=(RAY_LOG,))
            _say(f"restart: removed the earlier run in {self.out}; starting over")
        if marker.exists():
            old = marker.read_json()
            if old.get("fingerprint") != ident["fingerprint"]:
                done, total = self._units_done(*self._recorded_plan(old, shards))
                if done or self.out.child("manifest.json").exists():
                    raise RunDirError(
                        f"{self.out} holds a run of a different pipeline or input (fingerprint "
                        f"{old.get('fingerprint')} != {ident['fingerprint']}) that finished {done} of "
                        f"{total} units; rerun with --restart to discard it and start over, or choose "
                        "another --output"
                    )
                # That run finished nothing: nothing to keep, the fixed pipeline starts afresh.
                clear_run_dir(self.out, keep=(RAY_LOG,))
                log.info("%s: the earlier run finished no unit; starting over", self.out)
            else:
                log.info("resuming the run in %s", self.out)
                done, total = self._units_done(shards, len(self.segments))
                if done:
                    _say(f"resuming: {done} of {total} units done")
        elif self.out.child("manifest.json").exists() or any(
            self.out.child(d).exists() for d in ("kept", "rejected")
        ):
            raise RunDirError(
                f"{self.out} already holds output without resume state; choose another --output"
            )
        marker.write_json(ident)
        for seg in self.segments:
            self.work.child(f"s{seg.index}").makedirs()

    def _recorded_plan(self, old: dict[str, Any], shards: list[int]) -> tuple[list[int], int]:
        """The input shards and the number of segments of the earlier run whose ``run.json`` is ``old``:
        as it recorded them; for a record without them, this run's shards and the segment folders that
        run left (``s0``, ``s1``, ...: it made one per segment at its start)."""
        if isinstance(old.get("shards"), int) and isinstance(old.get("segments"), int):
            return list(range(old["shards"])), old["segments"]
        seen = {rel.split("/", 1)[0] for rel, _, _ in self.work.walk_files()}
        if not self.work.remote:
            seen |= {d.name for d in self.work.local.iterdir() if d.is_dir()}
        found = [int(name[1:]) for name in seen if name[:1] == "s" and name[1:].isdigit()]
        return shards, max(found) + 1 if found else len(self.segments)

    def _units_done(self, shards: list[int], segments: int) -> tuple[int, int]:
        """(finished, all) units of work in this directory, for a run of ``segments`` segments over input
        ``shards``. Segment 0 has one unit per shard; each later segment one per part the one before wrote.
        Where a segment is unfinished, the parts its unfinished units will write are not known yet: each
        is counted as the average of its finished units (one when none finished), and every later segment
        as that many units. A run that finished every unit counts exactly (``6 of 6``)."""
        units = [f"{i:05d}" for i in shards]
        done = total = 0
        for k in range(segments):
            committed = self._committed(self.work.child(f"s{k}"), units)
            done += len(committed)
            total += len(units)
            if len(committed) < len(units):
                parts = sum(len(r["parts"]) for r in committed.values())
                per_unit = parts / len(committed) if committed else 1.0
                after = parts + round(per_unit * (len(units) - len(committed)))
                total += after * (segments - 1 - k)
                break
            units = [p for u in units for p in committed[u]["parts"]]
        return done, total

    def _run_segment(self, seg: Segment, items: list[Any]) -> list[dict[str, Any]]:
        seg_dir = self.work.child(f"s{seg.index}")
        units = [f"{it.index:05d}" if seg.index == 0 else it[1] for it in items]
        done = self._committed(seg_dir, units)
        todo = [it for it, u in zip(items, units, strict=True) if u not in done]
        if todo:
            state_path = (
                self.scratch.child(f"g{seg.index - 1}.state.pkl").url if seg.applier is not None else None
            )
            factory = functools.partial(
                SegmentWorker,
                segment=seg,
                source=self.source,
                work=self.work.url,
                state_path=state_path,
                tokens=self.tokens,
            )
            names = [s.label for s in seg.stages()] or [READ_STAGE]
            desc = f"segment {seg.index} ({', '.join(names)})"
            for r in self.engine.map_worker(factory, todo, resources=seg.resources(), desc=desc):
                done[r["unit"]] = r
        return [done[u] for u in units]

    def _committed(self, seg_dir: Location, units: list[str]) -> dict[str, dict[str, Any]]:
        """The units whose done marker exists and whose every listed file is there with its size.

        A file without a marker (a killed worker), or a marker whose file is missing or of another size
        (a store that lost or truncated it), is not taken as done: the unit runs again and rewrites it.
        """
        markers = {m.name for m in seg_dir.glob("done-*.json")}
        sizes = {path: size for path, size, _ in seg_dir.walk_files()} if markers else {}
        done: dict[str, dict[str, Any]] = {}
        for u in units:
            if f"done-{u}.json" not in markers:
                continue
            r = seg_dir.child(f"done-{u}.json").read_json()
            bad = [f for f, n in r.get("files", {}).items() if sizes.get(f) != n]
            if bad:
                log.warning("%s: %s missing or of another size; redoing unit %s", seg_dir, ", ".join(bad), u)
                continue
            done[u] = r
        return done

    def _reduce(self, seg: Segment, parts: list[str]) -> tuple[Any, dict[str, float]]:
        g = seg.collector
        assert g is not None
        state_path = self.scratch.child(f"g{seg.index}.state.pkl")
        summary_path = self.scratch.child(f"g{seg.index}.summary.json")
        if state_path.exists() and summary_path.exists():
            s = summary_path.read_json()
            return s["summary"], s["stats"]
        # CPU of the driver and of the engine's workers: collect and shuffle tasks run on Ray's workers
        w0, c0 = time.perf_counter(), self.engine.cpu_s()
        key_dir = self.scratch.child(f"g{seg.index}")
        key_dir.makedirs()
        src_dir = self.work.child(f"s{seg.index}").url
        tasks = [(g, src_dir, i, p, key_dir.child(f"k{p}.parquet").url) for i, p in enumerate(parts)]
        key_paths = self.engine.map(collect_keys, tasks, resources=g.resources, desc=f"{g.label}: collect")
        state = g.reduce(key_paths, self.engine)
        state_path.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        summary = g.summary(state)
        gstats = {"wall_s": time.perf_counter() - w0, "cpu_s": self.engine.cpu_s() - c0}
        summary_path.write_json({"summary": summary, "stats": gstats})
        return summary, gstats

    def _finalize(self, parts: list[str]) -> None:
        last = self.work.child(f"s{self.segments[-1].index}")
        kept_dir, rej_dir = self.out.child("kept"), self.out.child("rejected")
        kept_dir.makedirs()
        rej_dir.makedirs()
        present = {f.name for f in last.glob("p*.parquet")}
        for p in parts:
            if f"p{p}.parquet" in present:
                last.child(f"p{p}.parquet").copy_to(kept_dir.child(f"part-{p}.parquet"))
        for seg in self.segments:
            for f in self.work.child(f"s{seg.index}").glob("r*.parquet"):
                f.copy_to(rej_dir.child(f"part-s{seg.index}-{f.name[1:]}"))

    def _manifest(
        self, stats: dict[str, dict[str, Any]], order: list[str], summaries: dict[str, Any], wall: float
    ) -> dict[str, Any]:
        manifest = build_manifest(
            cfg=self.cfg,
            out=self.out,
            stages=self.stages,
            source=self.source,
            engine=self.engine,
            tokens_unit=self.tokens.unit,
            tokens=self.tokens,
            stats=stats,
            order=order,
            summaries=summaries,
            wall=wall,
        )
        return manifest | ({"target": self.target} if getattr(self, "target", None) else {})


def run_pipeline(
    cfg: PipelineConfig,
    out_dir: str | Path,
    *,
    engine: Engine | None = None,
    progress: bool = True,
    phases: bool | Sequence[Phase] = True,
    restart: bool = False,
) -> dict[str, Any]:
    """Run ``cfg`` into ``out_dir`` (resuming finished work there) and return the manifest.

    The directory is locked for the whole run (:mod:`curate.io.runlock`): a second run into it is refused
    before any work. ``restart``: discard what an earlier run wrote there and start over. ``phases``: the
    phases to run after curation, in order (:class:`curate.runtime.phases.Phase`, as the root composes
    them in ``curate.compose.PHASES``); True: those the root installed; False (or none): no phase.
    """
    from curate.io.runlock import RunLock

    with RunLock(out_dir):
        return _run_locked(cfg, out_dir, engine=engine, progress=progress, phases=phases, restart=restart)


def _run_locked(
    cfg: PipelineConfig,
    out_dir: str | Path,
    *,
    engine: Engine | None,
    progress: bool,
    phases: bool | Sequence[Phase],
    restart: bool,
) -> dict[str, Any]:
    own = engine is None
    out = Location.of(out_dir)
    if engine is None:
        e = cfg.engine
        local = stage_dir(out.url) if out.remote else out.local
        local.mkdir(parents=True, exist_ok=True)
        engine = make_engine(
            e.kind,
            address=e.address,
            num_cpus=e.num_cpus,
            progress=progress,
            max_retries=e.max_retries,
            start_log=local / RAY_LOG,  # Ray's start-up notices; `curate -v` shows them instead
        )
    try:
        manifest = Runner(cfg, out_dir, engine, progress=progress, restart=restart).run()
        if not cfg.allow_empty:
            from curate.pipeline.validate import check_not_empty

            check_not_empty(manifest, str(out))
        if phases:
            manifest = run_phases(cfg, out_dir, engine, manifest, None if phases is True else phases)
        return manifest
    finally:
        if own:
            engine.shutdown()
