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
import functools
import hashlib
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from curate.core import schema
from curate.io.files import atomic_write_json
from curate.targeting.config import TargetSpec
from curate.targeting.disjoint import TargetError, check_disjoint, read_jsonl
from curate.targeting.draw import draw_samples
from curate.targeting.fitted import TargetFitted, TargetSample

log = logging.getLogger(__name__)


def _echo(line: str, echo: bool) -> None:
    log.info(line)
    if echo:
        print(line, file=sys.stderr)


def _scrub_texts(stage: Any, texts: list[str]) -> list[str]:
    """``texts`` as ``stage`` (a ``pii_v1`` in redact mode) redacts a rejected row's text."""
    table = stage.scrub(pa.table({schema.TEXT: pa.array(texts, type=pa.string())}))
    return [str(x) for x in table.column(schema.TEXT).to_pylist()]


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

    work = run_dir / "target"
    work.mkdir(parents=True, exist_ok=True)
    pcfg = cfg.proxy  # the parsed proxy: section (its eval sets), or None
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
    scrubber = next((s for s in stages if getattr(s, "redacts_rejected", False)), None)
    key = hashlib.sha256(
        json.dumps(
            {
                "input": cfg.raw.get("input"),
                "files": source.fingerprint(),
                "target": cfg.raw.get("target"),
                "evals": [dataclasses.asdict(e) for e in specs],
                "eval_chars": pcfg.eval_chars if pcfg else None,
                **({"redacted_by": scrubber.label} if scrubber is not None else {}),
            },
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    cached = _cached(work, key)
    if cached is None:
        scrub = None if scrubber is None else functools.partial(_scrub_texts, scrubber)
        sample, roles = draw_samples(spec, specs, file_sets, source, engine, work, cache, scrub)
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
