"""Runs a pipeline: read → row stages → global stages → … → kept/ + rejected/ + manifest.json.

Stages are cut into *segments* at every global stage. Segment 0 reads input shards; each later segment
first applies the previous global stage's state, then its row stages, to every part the segment before
wrote. A global stage collects small key tables from every part, reduces them once (on the engine,
e.g. a shuffle), and pickles the state. Every unit of work writes its outputs atomically and then a
small stats file, so a rerun of the same command on the same directory skips finished work and gives
identical output (resume). Accounting is checked against the files actually written.

The run directory may be an object-storage URL (``s3://bucket/runs/web``): every file goes through
:class:`curate.io.storage.Location`, whose writes are atomic there too (one PUT per file), and a unit is
committed by its ``done-*.json`` marker listing its files' sizes, checked on resume. Global stages'
scratch (key tables, shuffle files, drop lists, their pickled state) is recomputable and stays on a
local disk then (:func:`curate.io.stage.stage_dir`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import platform
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from curate import __version__, schema
from curate.config import PipelineConfig, build_source, build_stages
from curate.engine import Engine, make_engine
from curate.io.sources import DETAIL, Shard
from curate.io.stage import stage_dir
from curate.io.storage import Location, parquet_rows, read_parquet, redact_all, write_parquet
from curate.stage import GlobalStage, RowStage, Stage
from curate.tokens import TokenCounter, token_counter

log = logging.getLogger(__name__)
ORDER = schema.ORDER  # int64 part_index << 32 | row, a global input order given to global stages
READ_STAGE = "read"
RAY_LOG = "ray.log"


class AccountingError(RuntimeError):
    """kept + rejected + quarantined != input: something was lost or duplicated."""


class RunDirError(RuntimeError):
    """The output directory holds a different run."""


@dataclass
class Segment:
    index: int
    apply: GlobalStage | None  # the global stage whose state is applied first (None for segment 0)
    rows: list[RowStage]
    collect: GlobalStage | None  # the global stage that collects keys after this segment (None at the end)


def plan_segments(stages: list[Stage]) -> list[Segment]:
    segments = [Segment(0, None, [], None)]
    for st in stages:
        if isinstance(st, GlobalStage):
            segments[-1].collect = st
            segments.append(Segment(len(segments), st, [], None))
        else:
            segments[-1].rows.append(st)  # type: ignore[arg-type]
    return segments


def _new_stats(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "docs_in": 0,
        "docs_out": 0,
        "bytes_in": 0,
        "bytes_out": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "removed": {},
        "wall_s": 0.0,
        "cpu_s": 0.0,
    }


def _merge_stats(into: dict[str, Any], other: dict[str, Any]) -> None:
    for k in ("docs_in", "docs_out", "bytes_in", "bytes_out", "tokens_in", "tokens_out", "wall_s", "cpu_s"):
        into[k] += other.get(k, 0)
    for r, c in other["removed"].items():
        into["removed"][r] = into["removed"].get(r, 0) + c


def _write_atomic(table: pa.Table, path: Path | Location) -> int:
    return write_parquet(table, Location.of(path))


def _write_json_atomic(obj: Any, path: Path | Location) -> None:
    Location.of(path).write_json(obj)


def _peel(table: pa.Table, stage_label: str) -> tuple[pa.Table, pa.Table | None]:
    """Split rows marked in REJECT off the table, labelled with stage and reason."""
    if schema.REJECT not in table.column_names:
        return table, None
    import pyarrow.compute as pc

    mask = pc.is_valid(table.column(schema.REJECT))
    if not pc.any(mask).as_py():
        return table.drop_columns([schema.REJECT]), None
    rejected = table.filter(mask)
    rejected = rejected.append_column(schema.STAGE, pa.array([stage_label] * rejected.num_rows, pa.string()))
    rejected = rejected.rename_columns(
        [schema.REASON if c == schema.REJECT else c for c in rejected.column_names]
    )
    kept = table.filter(pc.invert(mask)).drop_columns([schema.REJECT])
    return kept, rejected


class SegmentWorker:
    """Built once per worker (actor): sets up the segment's stages, then processes work items."""

    def __init__(
        self,
        *,
        segment: Segment,
        source: Any,
        work: str,
        state_path: str | None,
        tokens: TokenCounter | None = None,
    ) -> None:
        self.segment = segment
        self.tokens = tokens or TokenCounter()
        self.source = source
        self.work = Location.of(work)
        self.state = None
        if segment.apply is not None:
            segment.apply.ensure_setup()
            with open(state_path, "rb") as f:  # type: ignore[arg-type]
                self.state = pickle.load(f)
        for st in segment.rows:
            st.ensure_setup()

    def __call__(self, item: Any) -> dict[str, Any]:
        seg_dir = self.work.child(f"s{self.segment.index}")
        if self.segment.index == 0:
            shard: Shard = item
            batches: Iterator[tuple[str, pa.Table]] = (
                (f"{shard.index:05d}-{j:05d}", t) for j, t in enumerate(self.source.read(shard))
            )
            unit = f"{shard.index:05d}"
        else:
            part_index, part = item
            prev = self.work.child(f"s{self.segment.index - 1}", f"p{part}.parquet")
            batches = iter([(part, read_parquet(prev))])
            unit = part
        stats: dict[str, dict[str, Any]] = {}
        parts: list[str] = []
        files: dict[str, int] = {}  # committed by the done marker: resume checks each size
        for part, table in _timed(
            batches,
            stats.setdefault(READ_STAGE if self.segment.index == 0 else "_io", _new_stats(READ_STAGE)),
        ):
            kept, rejected = self._process(table, part, item, stats)
            files[f"p{part}.parquet"] = _write_atomic(kept, seg_dir.child(f"p{part}.parquet"))
            if rejected is not None and rejected.num_rows:
                files[f"r{part}.parquet"] = _write_atomic(rejected, seg_dir.child(f"r{part}.parquet"))
            parts.append(part)
        stats.pop("_io", None)
        result = {"unit": unit, "parts": parts, "stats": stats, "files": files}
        _write_json_atomic(result, seg_dir.child(f"done-{unit}.json"))
        return result

    def _process(
        self, table: pa.Table, part: str, item: Any, stats: dict[str, dict[str, Any]]
    ) -> tuple[pa.Table, pa.Table | None]:
        rejected: list[pa.Table] = []

        def run(label: str, fn: Any, t: pa.Table, part_of_filter: str | None = None) -> pa.Table:
            # A `filter:` is a scorer and its select under one label: one funnel row, counted in at the
            # scorer ("head") and out at the select ("tail"), with both stages' time.
            s = stats.setdefault(label, _new_stats(label))
            w0, c0 = time.perf_counter(), time.process_time()
            if part_of_filter != "tail":
                s["docs_in"] += t.num_rows
                s["bytes_in"] += schema.text_bytes(t)
                s["tokens_in"] += self.tokens.count(t)
            out = fn(t) if t.num_rows else t
            out, rej = _peel(out, label)
            if rej is not None:
                rejected.append(rej)
                for r, c in zip(*_value_counts(rej.column(schema.REASON)), strict=True):
                    s["removed"][r] = s["removed"].get(r, 0) + c
            if part_of_filter != "head":
                s["docs_out"] += out.num_rows
                s["bytes_out"] += schema.text_bytes(out)
                s["tokens_out"] += self.tokens.count(out)
            s["wall_s"] += time.perf_counter() - w0
            s["cpu_s"] += time.process_time() - c0
            return out

        if self.segment.index == 0:
            table = run(READ_STAGE, lambda t: t, table)
            if DETAIL in table.column_names:
                table = table.drop_columns([DETAIL])
        if self.segment.apply is not None:
            g = self.segment.apply
            part_index = item[0]
            table = _with_order(table, part_index)
            table = run(g.label, lambda t: g.apply(t, self.state), table)
            table = table.drop_columns([ORDER])
        for st in self.segment.rows:
            table = run(st.label, st.process, table, getattr(st, "part_of_filter", None))
        rej = pa.concat_tables(rejected, promote_options="permissive") if rejected else None
        if rej is not None and ORDER in rej.column_names:
            rej = rej.drop_columns([ORDER])
        return table, rej


def _timed(it: Any, s: dict[str, Any]) -> Any:
    """Yield from ``it``, adding the time spent producing each item (reading, decoding) to ``s``."""
    while True:
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            item = next(it)
        except StopIteration:
            return
        finally:
            s["wall_s"] += time.perf_counter() - w0
            s["cpu_s"] += time.process_time() - c0
        yield item


def _value_counts(col: pa.ChunkedArray) -> tuple[list[str], list[int]]:
    vc = col.value_counts()
    return vc.field(0).to_pylist(), vc.field(1).to_pylist()


def _with_order(table: pa.Table, part_index: int) -> pa.Table:
    import numpy as np

    order = (np.int64(part_index) << np.int64(32)) + np.arange(table.num_rows, dtype=np.int64)
    return table.append_column(ORDER, pa.array(order))


def _collect_task(args: tuple[GlobalStage, str, int, str, str]) -> str:
    stage, work, part_index, part, out = args
    stage.ensure_setup()
    table = read_parquet(Location.of(work).child(f"p{part}.parquet"))
    keys = stage.collect(_with_order(table, part_index))
    _write_atomic(keys, Path(out))
    return out


class Runner:
    """Runs one pipeline into one run directory. Use :func:`run_pipeline`."""

    def __init__(
        self, cfg: PipelineConfig, out_dir: str | Path, engine: Engine, *, progress: bool = True
    ) -> None:
        self.cfg = cfg
        self.out = Location.of(out_dir)
        self.work = self.out.child("_work")
        # Global-stage scratch: beside the parts on a local run directory, on this machine's disk for
        # one in object storage (recomputable from the committed parts).
        self.scratch = self.work.local if not self.out.remote else stage_dir(self.out.url) / "_work"
        self.engine = engine
        self.progress = progress
        self.source = build_source(cfg)
        self.stages = build_stages(cfg)
        self.segments = plan_segments(self.stages)
        self.tokens = token_counter(cfg.export)

    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        self._check_input()
        self._claim_dir()
        self._attempt = self._start_attempt()
        from curate.target.prepare import prepare

        # Target-aware scorers are fitted (or their fits reused) before any stage runs.
        # Its samples and fits live on local disk: in the run directory, or in the run's local mirror when
        # that is in object storage (the stages read the fitted models from there, as the dedup scratch).
        target_root = stage_dir(self.out.url) if self.out.remote else self.out.local
        self.target = prepare(
            self.cfg, target_root, self.stages, self.engine, self.source, echo=self.progress
        )
        stats: dict[str, dict[str, Any]] = {}
        order: list[str] = [READ_STAGE]
        summaries: dict[str, Any] = {}
        parts: list[str] = []
        for seg in self.segments:
            items: list[Any]
            if seg.index == 0:
                items = self.source.shards()
            else:
                items = list(enumerate(parts))
            results = self._run_segment(seg, items)
            parts = [p for r in results for p in r["parts"]]
            for r in results:
                for label, s in r["stats"].items():
                    if label not in stats:
                        stats[label] = _new_stats(label)
                    _merge_stats(stats[label], s)
            if seg.apply is not None and seg.apply.label not in order:
                order.append(seg.apply.label)
            for st in seg.rows:
                if st.label not in order:
                    order.append(st.label)
            if seg.collect is not None:
                summaries[seg.collect.label], gstats = self._reduce(seg, parts)
                stats.setdefault(seg.collect.label, _new_stats(seg.collect.label))
                stats[seg.collect.label]["wall_s"] += gstats["wall_s"]
                stats[seg.collect.label]["cpu_s"] += gstats["cpu_s"]
        self._finalize(parts)
        attempts = self._finish_attempt(t0)
        manifest = self._manifest(stats, order, summaries, sum(attempts))
        manifest["attempts_wall_s"] = [round(a, 3) for a in attempts]
        _write_json_atomic(manifest, self.out.child("manifest.json"))
        return manifest

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
        _write_json_atomic(attempts, path)
        return len(attempts) - 1

    def _finish_attempt(self, t0: float) -> list[float]:
        """This attempt's wall time, stored; returns every attempt's."""
        path = self.work.child("attempts.json")
        attempts = path.read_json()
        attempts[self._attempt].update(wall_s=round(time.perf_counter() - t0, 3), finished=True)
        _write_json_atomic(attempts, path)
        return [float(a["wall_s"]) for a in attempts]

    def _check_input(self) -> None:
        """Refuse input files that clearly hold another format than ``input.format``, before any work."""
        from curate.io.sources import SourceError
        from curate.validate import check_input_content

        fmt = str(self.cfg.input.get("format"))
        if fmt not in ("jsonl", "parquet", "warc"):
            return
        try:
            check_input_content(fmt, [s.path for s in self.source.shards()])
        except ValueError as e:
            raise SourceError(f"input: {e}") from None

    # -- directory claim and resume -------------------------------------------------------------------
    def _claim_dir(self) -> None:
        self.work.makedirs()
        ident = {"fingerprint": self.cfg.fingerprint(), "pipeline": self.cfg.name}
        marker = self.work.child("run.json")
        if marker.exists():
            old = marker.read_json()
            if old.get("fingerprint") != ident["fingerprint"]:
                raise RunDirError(
                    f"{self.out} holds a run of a different pipeline or input (fingerprint {old.get('fingerprint')} != "
                    f"{ident['fingerprint']}); choose another --output or delete that directory"
                )
            log.info("resuming the run in %s", self.out)
        elif self.out.child("manifest.json").exists() or any(
            self.out.child(d).exists() for d in ("kept", "rejected")
        ):
            raise RunDirError(
                f"{self.out} already holds output without resume state; choose another --output"
            )
        elif self.out.remote and self.scratch.exists():
            shutil.rmtree(self.scratch)  # a new run at this URL: an older run's scratch is not ours
        _write_json_atomic(ident, marker)
        self.scratch.mkdir(parents=True, exist_ok=True)
        for seg in self.segments:
            self.work.child(f"s{seg.index}").makedirs()

    def _run_segment(self, seg: Segment, items: list[Any]) -> list[dict[str, Any]]:
        seg_dir = self.work.child(f"s{seg.index}")
        units = [f"{it.index:05d}" if seg.index == 0 else it[1] for it in items]
        done = self._committed(seg_dir, units)
        todo = [it for it, u in zip(items, units, strict=True) if u not in done]
        if todo:
            state_path = str(self.scratch / f"g{seg.index - 1}.state.pkl") if seg.apply is not None else None
            import functools

            factory = functools.partial(
                SegmentWorker,
                segment=seg,
                source=self.source,
                work=self.work.url,
                state_path=state_path,
                tokens=self.tokens,
            )
            resources = _segment_resources(seg)
            names = [s.label for s in ([seg.apply] if seg.apply else []) + list(seg.rows)] or ["read"]
            desc = f"segment {seg.index} ({', '.join(names)})"
            for r in self.engine.map_worker(factory, todo, resources=resources, desc=desc):
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
        g = seg.collect
        assert g is not None
        state_path = self.scratch / f"g{seg.index}.state.pkl"
        summary_path = self.scratch / f"g{seg.index}.summary.json"
        if state_path.exists() and summary_path.exists():
            s = json.loads(summary_path.read_text())
            return s["summary"], s["stats"]
        w0, c0 = time.perf_counter(), time.process_time()
        key_dir = self.scratch / f"g{seg.index}"
        key_dir.mkdir(exist_ok=True)
        src_dir = self.work.child(f"s{seg.index}").url
        tasks = [(g, src_dir, i, p, str(key_dir / f"k{p}.parquet")) for i, p in enumerate(parts)]
        key_paths = self.engine.map(_collect_task, tasks, resources=g.resources, desc=f"{g.label}: collect")
        state = g.reduce(key_paths, self.engine)
        tmp = state_path.with_name(state_path.name + ".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, state_path)
        summary = g.summary(state)
        gstats = {"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0}
        _write_json_atomic({"summary": summary, "stats": gstats}, summary_path)
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
        kept_files = self.out.child("kept").glob("part-*.parquet")
        rej_files = self.out.child("rejected").glob("part-*.parquet")
        kept = sum(parquet_rows(f) for f in kept_files)
        reasons: dict[str, int] = {}
        for f in rej_files:
            for r, c in zip(
                *_value_counts(read_parquet(f, columns=[schema.REASON]).column(schema.REASON)), strict=True
            ):
                reasons[r] = reasons.get(r, 0) + c
        quarantined = sum(c for r, c in reasons.items() if r.startswith(schema.QUARANTINE_PREFIX))
        rejected = sum(reasons.values()) - quarantined
        n_input = stats[READ_STAGE]["docs_in"] if READ_STAGE in stats else 0
        accounting = {
            "input": n_input,
            "kept": kept,
            "rejected": rejected,
            "quarantined": quarantined,
            "balanced": kept + rejected + quarantined == n_input,
        }
        stage_list = []
        for label in order:
            s = stats.get(label, _new_stats(label))
            s = dict(s, wall_s=round(s["wall_s"], 3), cpu_s=round(s["cpu_s"], 3))
            if label in summaries:
                s["summary"] = summaries[label]
            stage_list.append(s)
        if not accounting["balanced"]:
            raise AccountingError(f"accounting does not balance: {accounting}; outputs in {self.out}")
        return {
            "name": self.cfg.name,
            "status": "complete",
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "curate_version": __version__,
            "pipeline": self.cfg.path,
            "fingerprint": self.cfg.fingerprint(),
            "config": redact_all(self.cfg.raw),  # a URL's user:password@ never reaches the manifest
            "stages_resolved": [s.describe() for s in self.stages],
            "input": {"format": self.cfg.input.get("format"), "fingerprint": self.source.fingerprint()},
            "versions": _versions(),
            "engine": self.engine.describe(),
            "accounting": accounting,
            "removed_by_reason": dict(sorted(reasons.items())),
            "tokens_unit": self.tokens.unit,  # of every stage's tokens_in / tokens_out
            "stages": stage_list,
            "outputs": {
                "kept_files": len(kept_files),
                "rejected_files": len(rej_files),
                "kept_sha256": _digest(kept_files),
                "rejected_sha256": _digest(rej_files),
            },
            "wall_s": round(wall, 3),
        } | ({"target": self.target} if getattr(self, "target", None) else {})


def _digest(files: list[Location]) -> str:
    """One sha256 over the files' names and bytes (the Parquet writer is deterministic for equal tables)."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _segment_resources(seg: Segment) -> Any:
    from curate.stage import Resources

    stages = ([seg.apply] if seg.apply else []) + list(seg.rows)
    if not stages:
        return Resources()
    return Resources(
        num_cpus=max(s.resources.num_cpus for s in stages),
        num_gpus=max(s.resources.num_gpus for s in stages),
        batch_size=min(s.resources.batch_size for s in stages),
    )


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in (
        "pyarrow",
        "polars",
        "numpy",
        "ray",
        "torch",
        "transformers",
        "tokenizers",
        "datatrove",
        "fasttext-numpy2-wheel",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


PHASES = ("proxy", "export", "report")  # the report shows what the export wrote


def run_phases(
    cfg: PipelineConfig, out_dir: str | Path, engine: Engine, manifest: dict[str, Any]
) -> dict[str, Any]:
    """Run the post-pipeline phases whose sections the pipeline has, in order, recording their results.

    A run directory in object storage is mirrored locally first (:class:`curate.io.stage.Mirror`):
    the phases work on local files and each one's outputs are uploaded when it ends.
    """
    import importlib

    from curate.context import RunContext
    from curate.io.stage import Mirror

    loc = Location.of(out_dir)
    mirror = Mirror(loc) if loc.remote else None
    run_dir = mirror.pull() if mirror else loc.local
    for name in PHASES:
        section = getattr(cfg, name)
        if section is None and name == "report":
            section = {}  # every run gets a report; the section only tunes it
        if section is None:
            continue
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
        )
        t0 = time.perf_counter()
        result = mod.run_phase(ctx)
        manifest.setdefault("phases", {})[name] = dict(
            result or {}, wall_s=round(time.perf_counter() - t0, 3)
        )
        _write_json_atomic(manifest, run_dir / "manifest.json")
        if mirror:
            mirror.push()
    return manifest


def run_pipeline(
    cfg: PipelineConfig,
    out_dir: str | Path,
    *,
    engine: Engine | None = None,
    progress: bool = True,
    phases: bool = True,
) -> dict[str, Any]:
    """Run ``cfg`` into ``out_dir`` (resuming finished work there) and return the manifest."""
    own = engine is None
    out = Location.of(out_dir)
    if engine is None:
        e = cfg.engine
        local = stage_dir(out.url) if out.remote else out.local
        local.mkdir(parents=True, exist_ok=True)
        engine = make_engine(
            e.get("kind", "ray"),
            address=e.get("address"),
            num_cpus=e.get("num_cpus"),
            progress=progress,
            max_retries=e.get("max_retries", 3),
            start_log=local / RAY_LOG,  # Ray's start-up notices; `curate -v` shows them instead
        )
    try:
        manifest = Runner(cfg, out_dir, engine, progress=progress).run()
        if not cfg.allow_empty:
            from curate.validate import check_not_empty

            check_not_empty(manifest, str(out))
        if phases:
            manifest = run_phases(cfg, out_dir, engine, manifest)
        return manifest
    finally:
        if own:
            engine.shutdown()
