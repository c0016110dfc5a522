"""Steps 1-3 of :mod:`curate.targeting.prepare`: the target sample (read from its files or from an input
source, checked disjoint from the eval sets), the scan of the input, and the raw sample, written under
``RUN_DIR/target/``."""

from __future__ import annotations

import gzip
import heapq
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.io.files import atomic_path
from curate.targeting.config import TargetSpec
from curate.targeting.disjoint import TargetError, check_disjoint
from curate.targeting.fitted import TargetSample


def _rows(source: Any, shard: Any, *, strict: bool = False, cache: str | None = None) -> pa.Table:
    """A shard's readable rows (quarantined ones dropped), id / text / source; ``strict``: a quarantined
    row (malformed record, truncated file, ...) raises ``OSError`` with its reason instead. ``cache``: keep
    the shard's batches there for segment 0 (:mod:`curate.io.shardcache`)."""
    import pyarrow.compute as pc

    batches = source.read(shard)
    if cache is not None:  # held whole only then: a source's shard is otherwise read batch by batch
        from curate.io import shardcache

        batches = list(batches)
        shardcache.write(cache, shard, batches)
    tables = []
    for t in batches:
        if schema.REJECT in t.column_names:
            bad = pc.is_valid(t.column(schema.REJECT))
            if strict and pc.any(bad).as_py():
                row = t.filter(bad).slice(0, 1).to_pylist()[0]
                raise OSError(f"{row[schema.REJECT]} ({row.get('detail') or row[schema.ID]})")
            t = t.filter(pc.invert(bad))
        tables.append(t.select([schema.ID, schema.TEXT, schema.SOURCE]))
    if not tables:
        return pa.table({k: pa.array([], pa.string()) for k in (schema.ID, schema.TEXT, schema.SOURCE)})
    return pa.concat_tables(tables)


def _in_holdout(ids: list[str | None], holdouts: list[float]) -> np.ndarray:
    from curate.instrument.evalsets import holdout_mask

    mask = np.zeros(len(ids), dtype=bool)
    for frac in holdouts:
        mask |= holdout_mask(ids, frac)
    return mask


def read_target_files(spec: TargetSpec) -> tuple[list[str], list[str]]:
    """``(texts, file of each text)`` from ``spec.path``; an unreadable or empty file is an error."""
    from curate.core.registry import SOURCES, build_params
    from curate.io.sources import SourceError

    cls = SOURCES.get(spec.format)
    params = {"path": spec.path, "text_field": spec.text_field, "on_error": "fail"}
    try:
        src = cls(build_params(cls.Params, params, where="target"))
        shards = src.shards()
    except SourceError as e:
        raise TargetError(f"{spec.where}: target.path: {e}") from None
    texts: list[str] = []
    files: list[str] = []
    for shard in shards:
        try:
            t = _rows(src, shard, strict=True)
        except (SourceError, OSError) as e:
            raise TargetError(f"{spec.where}: target: {shard.path} is unreadable: {e}") from None
        got = [x for x in t.column(schema.TEXT).to_pylist() if x and x.strip()]
        if not got:
            raise TargetError(
                f"{spec.where}: target: {shard.path} holds no documents (with {spec.text_field!r})"
            )
        got = got[spec.skip_docs :]
        if not got:
            raise TargetError(
                f"{spec.where}: target: {shard.path} has no documents after skip_docs={spec.skip_docs}"
            )
        texts += got
        files += [shard.path] * len(got)
    return texts[: spec.max_docs], files[: spec.max_docs]


def _target_rows(args: tuple[Any, Any, str, int, list[float]]) -> tuple[list[str], int]:
    """Texts of input source ``name`` in one shard (after ``skip``), and how many fell in a held-out split."""
    source, shard, name, skip, holdouts = args
    t = _rows(source, shard)
    keep = [i for i, s in enumerate(t.column(schema.SOURCE).to_pylist()) if s == name]
    ids = [t.column(schema.ID)[i].as_py() for i in keep][skip:]
    texts = [t.column(schema.TEXT)[i].as_py() for i in keep][skip:]
    held = _in_holdout(ids, holdouts)
    return [x for x, h in zip(texts, held, strict=True) if not h and x and x.strip()], int(held.sum())


def _scan(args: dict[str, Any]) -> dict[str, Any]:
    """One input shard: the raw-sample candidates (smallest keys) and source-eval rows' target hits."""
    import xxhash

    from curate.instrument.grams import gram_hits

    t = _rows(args["source"], args["shard"], cache=args["cache"])
    ids, texts = t.column(schema.ID).to_pylist(), t.column(schema.TEXT).to_pylist()
    srcs = t.column(schema.SOURCE).to_pylist()
    hits: dict[str, int] = {}
    for name in args["eval_sources"]:
        rows = [x or "" for x, s in zip(texts, srcs, strict=True) if s == name]
        if rows and args["target_index"]:
            hits[name] = int(gram_hits(rows, args["target_index"]).any(axis=1).sum())
    excluded = set(args["eval_sources"]) | ({args["target_source"]} if args["target_source"] else set())
    held = _in_holdout(ids, args["holdouts"])
    cand = [
        (xxhash.xxh64_intdigest(f"{args['seed']}:{i}".encode()), x)
        for i, x, s, h in zip(ids, texts, srcs, held, strict=True)
        if x and x.strip() and s not in excluded and not h
    ]
    cand = heapq.nsmallest(args["n"], cand, key=lambda kv: kv[0])
    if cand and args["eval_index"]:
        bad = np.asarray(gram_hits([x for _, x in cand], args["eval_index"]).any(axis=1))
        cand = [c for c, b in zip(cand, bad.tolist(), strict=True) if not b]
    return {"raw": cand, "source_hits": hits, "rows": len(ids)}


def write_jsonl(texts: list[str], path: Path) -> None:
    """``{"id", "text"}`` lines, gzipped, written atomically (the gzip header names ``path``, not the
    temporary file)."""
    with (
        atomic_path(path) as tmp,
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw) as gz,
        io.TextIOWrapper(gz, encoding="utf-8") as f,
    ):
        for i, x in enumerate(texts):
            f.write(json.dumps({"id": str(i), "text": x}) + "\n")


def draw_samples(
    spec: TargetSpec,
    specs: list[Any],
    file_sets: list[Any],
    source: Any,
    engine: Any,
    work: Path,
    cache: str | None = None,
    scrub: Callable[[list[str]], list[str]] | None = None,
) -> tuple[TargetSample, dict[str, Any]]:
    """Steps 1-3: the target (checked disjoint), the input scan, the raw sample; written under ``work``.
    ``cache``: where the scan keeps each shard's batches for segment 0 (:mod:`curate.io.shardcache`).
    ``scrub``: applied to both samples after the disjointness checks and before anything is written or
    fitted (a pipeline with ``pii_v1`` in redact mode passes its redaction: no value it detects reaches the
    run folder through the samples; one it misses does, at its measured recall)."""
    from curate.instrument.evalsets import EvalData, build_gram_index

    eval_sources = sorted({e.source for e in specs if e.source})
    holdouts = sorted({float(e.holdout) for e in specs if e.kind == "heldout" and e.holdout})
    shards = source.shards()
    dropped_heldout = 0
    if spec.path:
        texts, files = read_target_files(spec)
    else:
        got = engine.map(
            _target_rows,
            [
                (source, s, spec.source, spec.skip_docs, holdouts)
                for s in shards
                if source.may_hold(s, spec.source)
            ],
            desc="target",
        )
        texts = [x for rows, _ in got for x in rows][: spec.max_docs]
        dropped_heldout = sum(n for _, n in got)
        files = [f"input source {spec.source!r}"] * len(texts)
        if not texts:
            raise TargetError(f"{spec.where}: target: input source {spec.source!r} has no documents")
    eval_index = check_disjoint(spec, texts, files, file_sets, work)
    target_index = ""
    if eval_sources:
        target_index = str(work / "target_grams.npz")
        build_gram_index([EvalData(_target_spec(), texts=texts)], Path(target_index))
    scans = engine.map(
        _scan,
        [
            {
                "source": source,
                "shard": s,
                "seed": spec.seed,
                "n": spec.raw_docs,
                "eval_sources": eval_sources,
                "holdouts": holdouts,
                "eval_index": eval_index,
                "target_index": target_index,
                "target_source": spec.source,
                "cache": cache,
            }
            for s in shards
        ],
        desc="target: raw sample",
    )
    for name in eval_sources:
        n = sum(s["source_hits"].get(name, 0) for s in scans)
        if n:
            e = next(x for x in specs if x.source == name)
            raise TargetError(
                f"{spec.where}: target: overlaps the eval sets: eval set {e.name!r} (input source {name!r}) "
                f"has {n} document(s) sharing a 13-gram with the target sample of {', '.join(sorted(set(files)))}. "
                "The target sample and the eval sets must be disjoint: take the target from other documents "
                "or remove the eval set"
            )
    raw = heapq.nsmallest(spec.raw_docs, [c for s in scans for c in s["raw"]], key=lambda kv: kv[0])
    raw_texts = [x for _, x in raw]
    if not raw_texts:
        raise TargetError(f"{spec.where}: target: no raw input documents left to sample for the raw side")
    if scrub is not None:
        texts, raw_texts = scrub(texts), scrub(raw_texts)
    sample = TargetSample(
        target_texts=texts,
        raw_texts=raw_texts,
        target_files=sorted(set(files)),
        target_jsonl=str(work / "target.jsonl.gz"),
        raw_jsonl=str(work / "raw.jsonl.gz"),
        seed=spec.seed,
    )
    write_jsonl(texts, Path(sample.target_jsonl))
    write_jsonl(raw_texts, Path(sample.raw_jsonl))
    eval_roles = {e.name: _eval_role(e) for e in specs}
    roles: dict[str, Any] = {
        "target": {
            "files": sample.target_files,
            "docs": len(texts),
            "skip_docs": spec.skip_docs,
            "dropped_heldout": dropped_heldout,
        },
        "eval": eval_roles,
        "raw_sample": {
            "docs": len(raw_texts),
            "seed": spec.seed,
            "input_rows": sum(s["rows"] for s in scans),
        },
        "disjoint": "checked: no exact text or word 13-gram shared between the target and any eval set",
        "sha256": sample.sha256(),
    }
    return sample, roles


def _target_spec() -> Any:
    from curate.instrument.evalsets import EvalSpec

    return EvalSpec(name="target", kind="text", path="target")


def _eval_role(e: Any) -> dict[str, Any]:
    where = (
        e.path if e.path else (f"input source {e.source!r}" if e.source else f"held-out split {e.holdout}")
    )
    return {"kind": e.kind, "from": where}
