"""Before any stage runs: read the target sample, prove it disjoint from every eval set, sample the raw
input, and fit the target-aware scorers (cached by fingerprint).

Order (every failure comes before any training, and names the file):

1. The target: ``target.path`` files (each must be readable and hold at least one document; ``skip_docs``
   then ``max_docs``), or the rows of input source ``target.source`` (minus any held-out split's rows).
2. Disjointness from ``proxy:``'s eval sets: file sets (``text`` / ``choice``, suites included) are read
   exactly as the proxy runs read them; a target document with the same normalised text as an eval
   document, or sharing a word 13-gram with it (the proxy phase's decontamination index,
   :func:`curate.instrument.evalsets.build_gram_index`), is an error naming the target file(s) and the eval
   set's file. ``source:`` eval sets are checked during the input scan (their rows against the target's
   13-grams); a target ``source`` equal to an eval set's source is refused outright. ``heldout`` sets are
   splits of the raw input by id: target rows of the input in them are dropped (counted).
3. A raw sample: ``raw_docs`` input rows with the smallest ``xxh64(seed:id)``, excluding quarantined
   rows, rows of eval sources, rows of any held-out split, rows of the target source and rows that
   share a 13-gram with an eval set (eval sets never train a scorer).
4. ``RUN_DIR/target/``: ``target.jsonl.gz``, ``raw.jsonl.gz``, ``roles.json`` (which file plays which
   role), and one folder per fitted scorer, ``<label>-<fingerprint>``, where the fingerprint hashes the
   samples' sha256, the scorer's name and :meth:`~curate.targeting.fitted.TargetFitted.fit_key`, and the
   seed. A complete folder (``fitted.json``) is reused: a rerun does not refit.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import heapq
import io
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.io.files import atomic_path, atomic_write_json
from curate.targeting.config import TargetSpec
from curate.targeting.disjoint import TargetError, check_disjoint, read_jsonl
from curate.targeting.fitted import TargetFitted, TargetSample

log = logging.getLogger(__name__)


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


def _echo(line: str, echo: bool) -> None:
    log.info(line)
    if echo:
        print(line, file=sys.stderr)


def prepare(
    cfg: Any,
    run_dir: Path,
    stages: list[Any],
    engine: Any,
    source: Any,
    *,
    echo: bool = True,
    remote: Any = None,
    cache: str | None = None,
) -> dict[str, Any] | None:
    """Everything above; returns the manifest's ``target`` block (None without a ``target:`` section).

    A rerun with the same input files (path, size, mtime), ``target:`` and eval sets reuses the stored
    samples instead of scanning the input again; the target is still checked against the eval sets'
    current content. ``cache``: where a scan of a source whose reads are costly keeps each shard's batches
    for segment 0 (:mod:`curate.io.shardcache`); None: nowhere."""
    spec: TargetSpec | None = cfg.target
    if spec is None:
        return None  # before the imports below: a run without a target never loads torch
    from curate.instrument.evalsets import load_file_set
    from curate.proxy.config import parse as parse_proxy

    work = run_dir / "target"
    work.mkdir(parents=True, exist_ok=True)
    pcfg = parse_proxy(cfg.proxy) if cfg.proxy is not None else None
    specs = pcfg.eval if pcfg else []
    file_sets = (
        [load_file_set(e, pcfg.eval_chars, cfg.path) for e in specs if e.path is not None] if pcfg else []
    )
    if spec.source and spec.source in {e.source for e in specs}:
        name = next(e.name for e in specs if e.source == spec.source)
        raise TargetError(
            f"{spec.where}: target.source {spec.source!r} is the source of eval set {name!r}: the target "
            "sample and the eval sets must be disjoint"
        )
    key = hashlib.sha256(
        json.dumps(
            {
                "input": cfg.raw.get("input"),
                "files": source.fingerprint(),
                "target": cfg.raw.get("target"),
                "evals": [dataclasses.asdict(e) for e in specs],
                "eval_chars": pcfg.eval_chars if pcfg else None,
            },
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    cached = _cached(work, key)
    if cached is None:
        sample, roles = _draw(spec, specs, file_sets, source, engine, work, cache)
        roles["key"] = key
        atomic_write_json(work / "roles.json", roles, indent=1)
    else:
        sample, roles = cached
        files = [", ".join(sample.target_files)] * len(sample.target_texts)
        check_disjoint(spec, sample.target_texts, files, file_sets, work)
    _echo(f"target: {', '.join(sample.target_files)} (target sample, {len(sample.target_texts)} docs)", echo)
    for name, r in roles["eval"].items():
        _echo(f"eval:   {name}: {r['from']} ({r['kind']})", echo)
    _echo(
        f"raw:    {len(sample.raw_texts)} input docs by xxh64(seed:id) (raw side of the target-aware scorers)",
        echo,
    )
    roles = {k: v for k, v in roles.items() if k != "key"}
    roles["fitted"] = fit_stages(stages, sample, work, echo=echo, remote=remote)
    return roles


def _cached(work: Path, key: str) -> tuple[TargetSample, dict[str, Any]] | None:
    """The stored samples and roles when they were drawn with the same ``key``."""
    path = work / "roles.json"
    if not path.exists() or not (work / "raw.jsonl.gz").exists():
        return None
    roles = json.loads(path.read_text())
    if roles.get("key") != key:
        return None
    sample = TargetSample(
        target_texts=read_jsonl(work / "target.jsonl.gz"),
        raw_texts=read_jsonl(work / "raw.jsonl.gz"),
        target_files=roles["target"]["files"],
        target_jsonl=str(work / "target.jsonl.gz"),
        raw_jsonl=str(work / "raw.jsonl.gz"),
        seed=roles["raw_sample"]["seed"],
    )
    return (sample, roles) if sample.sha256() == roles.get("sha256") else None


def _draw(
    spec: TargetSpec,
    specs: list[Any],
    file_sets: list[Any],
    source: Any,
    engine: Any,
    work: Path,
    cache: str | None = None,
) -> tuple[TargetSample, dict[str, Any]]:
    """Steps 1-3: the target (checked disjoint), the input scan, the raw sample; written under ``work``.
    ``cache``: where the scan keeps each shard's batches for segment 0 (:mod:`curate.io.shardcache`)."""
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


def fit_stages(
    stages: list[Any], sample: TargetSample, work: Path, *, echo: bool = False, remote: Any = None
) -> dict[str, str]:
    """Fit every target-aware stage without a model (reusing complete fits); returns label -> artifact.
    ``remote``: the run directory's ``target/`` in object storage (a :class:`~curate.io.storage.Location`),
    where each fit's folder is uploaded so that workers on other nodes can fetch it."""
    out = {}
    for s in stages:
        if not isinstance(s, TargetFitted) or not s.needs_fit():
            continue
        key = {"stage": s.name, "fit": s.fit_key(), "data": sample.sha256(), "seed": sample.seed}
        fp = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
        folder = work / f"{s.label}-{fp}"
        done = folder / "fitted.json"
        if done.exists():
            path = json.loads(done.read_text())["artifact"]
        else:
            if folder.exists():
                shutil.rmtree(folder)  # an interrupted fit: start it again
            folder.mkdir(parents=True)
            _echo(f"target: fitting {s.label} ({folder})", echo)
            try:
                path = s.fit(sample, folder)
            except ValueError as e:
                raise TargetError(f"target: {s.label} cannot be fitted to the target sample: {e}") from None
            atomic_write_json(done, {"artifact": path, "key": key}, indent=1)
        s.use_model(path)
        if remote is not None and Path(path).is_relative_to(folder):
            dst = remote.child(folder.name)
            for f in sorted(p for p in folder.rglob("*") if p.is_file()):
                rel = f.relative_to(folder).as_posix()
                if dst.child(*rel.split("/")).size() != f.stat().st_size:
                    dst.child(*rel.split("/")).upload(f)
            s.ship_from(dst.url, Path(path).relative_to(folder).as_posix())
        out[s.label] = path
    return out
