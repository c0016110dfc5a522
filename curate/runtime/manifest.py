"""A run's ``manifest.json``: resolved config, input fingerprint, versions, native or fallback filter
paths, per-stage accounting.

The accounting is counted from the files actually written to ``kept/`` and ``rejected/``, never from
the stages' own counts, and must balance: ``kept + rejected + quarantined == input``.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.rules import Rule
from curate.core.stage import FilterStage, Stage
from curate.filters.native import path as native_path
from curate.io.multi import MultiSource
from curate.io.storage import Location, parquet_rows, read_parquet, redact_all
from curate.runtime.segments import READ_STAGE, new_stats, value_counts
from curate.runtime.tokens import TokenCounter
from curate.runtime.versions import __version__, package_versions


class AccountingError(RuntimeError):
    """kept + rejected + quarantined != input: something was lost or duplicated."""


def resolved(stages: list[Stage]) -> list[dict[str, Any]]:
    """Every stage's resolved configuration; a filter as its scorer and a ``select`` of its rules, the
    form that ``curate select`` (:mod:`curate.verbs.reselect`), ``inspect`` and the report read thresholds from."""
    return [d for s in stages for d in (s.parts() if isinstance(s, FilterStage) else [s.describe()])]


def count_outputs(out: Location, n_input: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The accounting of ``out``'s kept/ and rejected/ files, and the rejected rows by reason."""
    kept = sum(parquet_rows(f) for f in out.child("kept").glob("part-*.parquet"))
    reasons: dict[str, int] = {}
    for f in out.child("rejected").glob("part-*.parquet"):
        column = read_parquet(f, columns=[schema.REASON]).column(schema.REASON)
        for r, c in zip(*value_counts(column), strict=True):
            reasons[r] = reasons.get(r, 0) + c
    quarantined = sum(c for r, c in reasons.items() if r.startswith(schema.QUARANTINE_PREFIX))
    rejected = sum(reasons.values()) - quarantined
    accounting = {
        "input": n_input,
        "kept": kept,
        "rejected": rejected,
        "quarantined": quarantined,
        "balanced": kept + rejected + quarantined == n_input,
    }
    if not accounting["balanced"]:
        raise AccountingError(f"accounting does not balance: {accounting}; outputs in {out}")
    return accounting, dict(sorted(reasons.items()))


def count_by_source(out: Location, tokens: TokenCounter, engine: Any = None) -> dict[str, dict[str, Any]]:
    """Per value of the ``source`` column, from ``out``'s kept/ and rejected/ files: documents in
    (kept + rejected + quarantined), kept, rejected, quarantined, their tokens (``tokens_unit``), and
    the rejected and quarantined documents by the stage that removed them. One ``engine`` task per file
    (the texts are read, and tokenized where a tokenizer counts, where the engine runs them)."""
    files = [(f.url, "kept") for f in out.child("kept").glob("part-*.parquet")]
    files += [(f.url, "rejected") for f in out.child("rejected").glob("part-*.parquet")]
    tasks = [(url, kind, tokens) for url, kind in files]
    parts = (
        engine.map(_count_file, tasks, desc="count by source") if engine else list(map(_count_file, tasks))
    )
    rows: dict[str, dict[str, Any]] = {}
    for part in parts:
        for name, counts in part.items():
            e = rows.setdefault(name, _new_entry())
            for k, v in counts.items():
                if k == "by_stage":
                    for stage, n in v.items():
                        e["by_stage"][stage] = e["by_stage"].get(stage, 0) + n
                else:
                    e[k] += v
    for e in rows.values():
        e["input"] = e["kept"] + e["rejected"] + e["quarantined"]
        e["by_stage"] = dict(sorted(e["by_stage"].items()))
    return dict(sorted(rows.items()))


def _new_entry() -> dict[str, Any]:
    return {"input": 0, "kept": 0, "rejected": 0, "quarantined": 0} | {
        "tokens_kept": 0,
        "tokens_rejected": 0,
        "tokens_quarantined": 0,
        "by_stage": {},
    }


def _count_file(args: tuple[str, str, TokenCounter]) -> dict[str, dict[str, Any]]:
    """One kept/ or rejected/ file's documents and tokens per source (an engine task)."""
    url, kind, tokens = args
    rows: dict[str, dict[str, Any]] = {}
    f = Location.of(url)
    if kind == "kept":
        t = read_parquet(f, columns=[schema.SOURCE, schema.TEXT])
        for name, n, n_tokens in _grouped(t, tokens):
            e = rows.setdefault(name, _new_entry())
            e["kept"] += n
            e["tokens_kept"] += n_tokens
        return rows
    t = read_parquet(f, columns=[schema.SOURCE, schema.TEXT, schema.STAGE, schema.REASON])
    quarantined = pc.fill_null(pc.starts_with(t.column(schema.REASON), schema.QUARANTINE_PREFIX), False)
    for what, mask in (("quarantined", quarantined), ("rejected", pc.invert(quarantined))):
        part = t.filter(mask)
        for name, n, n_tokens in _grouped(part, tokens):
            e = rows.setdefault(name, _new_entry())
            e[what] += n
            e[f"tokens_{what}"] += n_tokens
        for name, stage, n in _pairs(part):
            e = rows.setdefault(name, _new_entry())
            e["by_stage"][stage] = e["by_stage"].get(stage, 0) + n
    return rows


def _grouped(table: pa.Table, tokens: TokenCounter) -> list[tuple[str, int, int]]:
    """(source, documents, tokens) for each value of ``table``'s ``source`` column."""
    if table.num_rows == 0:
        return []
    per_row = tokens.per_row(table.column(schema.TEXT))
    sources = table.column(schema.SOURCE).fill_null("").to_numpy(zero_copy_only=False)
    names, inverse = np.unique(sources.astype(str), return_inverse=True)
    docs = np.bincount(inverse, minlength=len(names))
    toks = np.bincount(inverse, weights=per_row, minlength=len(names))
    return [(str(n), int(d), int(k)) for n, d, k in zip(names, docs, toks, strict=True)]


def _pairs(table: pa.Table) -> list[tuple[str, str, int]]:
    """(source, stage, documents) for each pair of values in ``table``."""
    if table.num_rows == 0:
        return []
    counts = (
        table.select([schema.SOURCE, schema.STAGE])
        .group_by([schema.SOURCE, schema.STAGE])
        .aggregate([([], "count_all")])
    )
    return [
        (str(r[schema.SOURCE] or ""), str(r[schema.STAGE] or ""), int(r["count_all"]))
        for r in counts.to_pylist()
    ]


def funnel(
    stats: dict[str, dict[str, Any]], order: list[str], summaries: dict[str, Any]
) -> list[dict[str, Any]]:
    """One row per stage label in ``order``, times rounded, with a global stage's reduce summary."""
    rows = []
    for label in order:
        s = stats.get(label, new_stats(label))
        s = dict(s, wall_s=round(s["wall_s"], 3), cpu_s=round(s["cpu_s"], 3))
        if label in summaries:
            s["summary"] = summaries[label]
        rows.append(s)
    return rows


def cpu_block(stages: list[dict[str, Any]], *, io_s: float, target_s: float) -> dict[str, float]:
    """The curation's CPU-seconds, wherever they ran (the driver and every worker): its stages (the sum of
    the funnel's ``cpu_s``: each stage's work, its workers' set-up, a global stage's collect and reduce),
    ``io_s`` (reading a later segment's parts, writing every part and marker: in no stage's row) and
    ``target_s`` (the target sample and the target-aware scorers' fits, before any stage)."""
    stages_s = sum(float(s.get("cpu_s", 0.0)) for s in stages)
    return {
        "stages_s": round(stages_s, 3),
        "io_s": round(io_s, 3),
        "target_s": round(target_s, 3),
        "total_s": round(stages_s + io_s + target_s, 3),
    }


def build_manifest(
    *,
    cfg: Any,
    out: Location,
    stages: list[Stage],
    source: Any,
    engine: Any,
    tokens_unit: str,
    stats: dict[str, dict[str, Any]],
    order: list[str],
    summaries: dict[str, Any],
    wall: float,
    tokens: TokenCounter | None = None,
) -> dict[str, Any]:
    """The manifest of the finished run in ``out`` (the caller writes it); raises
    :class:`AccountingError` when the outputs do not balance the input. A run of several sources (a
    list ``input:``) gets ``by_source`` (:func:`count_by_source`, counted with ``tokens``)."""
    n_input = stats[READ_STAGE]["docs_in"] if READ_STAGE in stats else 0
    accounting, reasons = count_outputs(out, n_input)
    kept_files = out.child("kept").glob("part-*.parquet")
    rej_files = out.child("rejected").glob("part-*.parquet")
    several = isinstance(source, MultiSource)
    extra = {"by_source": count_by_source(out, tokens or TokenCounter(), engine)} if several else {}
    return {
        "name": cfg.name,
        "status": "complete",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "curate_version": __version__,
        "pipeline": cfg.path,
        "fingerprint": cfg.fingerprint(),
        "config": redact_all(cfg.raw),  # a URL's user:password@ never reaches the manifest
        "stages_resolved": resolved(stages),
        "input": _input_entry(cfg, source),
        "versions": package_versions(),
        # the native module or the polars/numpy fallback (and why), as this process takes it
        "native": native_path(),
        "engine": engine.describe(),
        "accounting": accounting,
        "removed_by_reason": reasons,
        "tokens_unit": tokens_unit,  # of every stage's tokens_in / tokens_out
        "stages": funnel(stats, order, summaries),
        **extra,
        "outputs": {
            "kept_files": len(kept_files),
            "rejected_files": len(rej_files),
            "kept_sha256": digest(kept_files),
            "rejected_sha256": digest(rej_files),
        },
        "wall_s": round(wall, 3),
    }


def _input_entry(cfg: Any, source: Any) -> dict[str, Any]:
    """The manifest's ``input``: its format (for several sources, each one's name and format) and the
    fingerprint of its files."""
    if isinstance(source, MultiSource):
        formats = [{"name": p.name, "format": p.format} for p in source.params.parts]
        return {"sources": formats, "fingerprint": source.fingerprint()}
    return {"format": cfg.input.get("format"), "fingerprint": source.fingerprint()}


def digest(files: list[Location]) -> str:
    """One sha256 over the files' names and bytes (the Parquet writer is deterministic for equal tables)."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def deciding_columns(manifest: dict[str, Any]) -> dict[str, str]:
    """Reason -> the score column whose rule produced it (for select rules and filter thresholds)."""
    out = {}
    for s in manifest.get("stages_resolved", []):
        if s.get("kind") == "select":
            for r in s["params"]["rules"]:
                rule = Rule(**r)
                out[f"{s['label']}:{rule.reason or rule.default_reason()}"] = rule.column
    return out
