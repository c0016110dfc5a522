"""The export of a run's kept documents: orchestration, the export manifest, verification (the options
are :mod:`curate.export.options`).

``export_run(ctx, options)`` writes under ``RUN_DIR/export/``::

    manifest.json      options, tokenizer (name, origin, sha256, vocab, EOS), inputs, every file with
                       sha256, docs and tokens per shard and split, the pipeline config that made the run
    README.md          Hugging Face dataset card (with parquet)
    tokenizer.json     the tokenizer the token formats were written with (with megatron or memmap)
    parquet/           train-/validation- shards
    megatron/          train_00000.bin/.idx, ...  (Megatron-LM indexed dataset, datatrove-identical)
    memmap/            train_00000.bin + train_00000.doc_idx.npy, ...  (nanoGPT flat tokens)
    hf_disk/           DatasetDict.save_to_disk folder (opt-in; datasets.load_from_disk)

Each format is a writer of :mod:`curate.export.formats` (one module each, registered by name); this
module tokenizes once, cuts the token shards once and gathers each shard's ids once for every token
format, takes each split's rows once for every text format, and hands them to the requested writers.

Documents are shuffled once with ``seed``; the same order and split serve every format, so document
``i`` of ``train`` (counted across the split's shards in file order) is the same in Parquet, hf_disk,
Megatron and memmap: Megatron document ``i`` is Parquet row ``i``. ``manifest.json`` is written
last: its presence with an equal ``request`` means the export is complete and a rerun skips it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core.errors import PhaseError
from curate.export import formats
from curate.export.columns import check_columns, choose_columns
from curate.export.formats.base import TextSplits, TextWriter, TokenShard, TokenWriter, Writer
from curate.export.formats.megatron import megatron_dtype
from curate.export.mixture import Mixer
from curate.export.options import ExportOptions
from curate.export.plan import SPLITS, TokenStore, shard_by_size, split_order
from curate.export.tokenize import plan_tasks, tokenize_parts
from curate.export.tokenizer_spec import FILE as TOKENIZER_FILE
from curate.export.tokenizer_spec import (
    TokenizerSpec,
    describe,
    need_tokenizer_message,
    resolve_tokenizer,
    tokenizer_source,
)
from curate.io import runfiles
from curate.io.files import (
    PathEscapeError,
    atomic_write_bytes,
    atomic_write_json,
    confined,
    escapes,
    restore_swapped,
    sha256_file,
    staged_dir,
)
from curate.runtime.context import RunContext

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
OWN = (TOKENIZER_FILE, MANIFEST, ".work")  # the exporter's own files; the formats' come from formats.owned()


def _tokenizer(ctx: RunContext, opts: ExportOptions) -> tuple[TokenizerSpec, bytes] | None:
    """The tokenizer the user named for the token formats, and its file's bytes (None: no token
    format asked). Never a default: a trainer given shards in the wrong vocabulary trains on noise."""
    token_formats = [f for f in opts.formats if f in formats.names(tokens=True)]
    if not token_formats:
        return None
    if not opts.tokenizer:
        raise PhaseError(need_tokenizer_message(token_formats))
    # a file is where the options resolved it when they were parsed (curate.io.paths.locate)
    origin, data = tokenizer_source(opts.tokenizer, proxy_file=ctx.path("proxy", "tokenizer.json"))
    dest = ctx.path(
        "export", TOKENIZER_FILE
    )  # where it will be; the export writes into a staging folder first
    return resolve_tokenizer(opts.tokenizer, origin, data, eos_token=opts.eos_token, path=dest), data


def _inputs(ctx: RunContext, files: list[Path]) -> list[dict[str, Any]]:
    out = []
    for f in files:
        size, digest = runfiles.size_and_sha256(f)  # a bucket run's part: streamed, not stored
        out.append(
            {
                "path": str(f.relative_to(ctx.run_dir)),
                "bytes": size,
                "sha256": digest,
                "rows": runfiles.parquet_file(f).metadata.num_rows,
            }
        )
    return out


def _complete(out: Path, manifest: dict[str, Any]) -> bool:
    """Every file the manifest lists is there with its size (a path leaving ``out``: not complete)."""
    for f in manifest.get("files", []):
        if escapes(f["path"]):
            return False
        p = out / f["path"]
        if not p.is_file() or p.stat().st_size != f["bytes"]:
            return False
    return True


def summarize(manifest: dict[str, Any], *, resumed: bool) -> dict[str, Any]:
    """The short record of an export kept in the run's ``manifest.json`` under ``export``; its
    ``headline`` is the run summary's line (the formats, documents, tokens and the tokenizer's name)."""
    formats = manifest["request"]["options"]["formats"]
    docs = sum(v["docs"] for v in manifest["splits"].values())
    tok = manifest.get("tokenizer")
    headline = f"{', '.join(formats)}: {docs:,} document{'' if docs == 1 else 's'}"
    if tok:
        tokens = sum(v["tokens"] for v in manifest["splits"].values())
        headline += f", {tokens:,} tokens; tokenizer {describe(tok)}"
    else:
        headline += "; no token shards (name a tokenizer to add them: docs/export.md)"
    return {
        "headline": headline,
        "dir": "export",
        "manifest": f"export/{MANIFEST}",
        "formats": manifest["request"]["options"]["formats"],
        "docs": {s: v["docs"] for s, v in manifest["splits"].items()},
        "tokens": {s: v["tokens"] for s, v in manifest["splits"].items()},
        "files": len(manifest["files"]),
        "tokenizer": manifest.get("tokenizer"),
        "seconds": manifest["seconds"],
        "resumed": resumed,
    }


def _write_tokens(
    store: TokenStore,
    orders: dict[str, np.ndarray],
    spec: TokenizerSpec,
    out: Path,
    opts: ExportOptions,
    token_writers: list[TokenWriter],
) -> list[dict[str, Any]]:
    """Every split's token shards (cut by ``shard_tokens``), each gathered once and handed to every token
    writer in turn; the entries of the files they wrote, by split and shard."""
    entries: list[dict[str, Any]] = []
    for split, order in orders.items():
        for i, pos in enumerate(shard_by_size(store.lengths[order], target=opts.shard_tokens)):
            tokens, lens = store.gather(order[pos])
            shard = TokenShard(split=split, index=i, tokens=tokens, lengths=lens, tokenizer=spec)
            for w in token_writers:
                entries += w.write(shard, out, opts)
    return entries


def _read_kept(files: list[Path], opts: ExportOptions) -> pa.Table:
    tables = [runfiles.read_table(f) for f in files]
    table = pa.concat_tables(tables, promote_options="permissive")
    return choose_columns(table, columns=opts.columns, drop=opts.drop_columns)


def _previous(out: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The export manifest already in ``out`` when it answers ``request`` and its files are all there."""
    mpath = out / MANIFEST
    if not mpath.is_file():
        return None
    old: dict[str, Any] = json.loads(mpath.read_text())
    if old.get("request") == request and _complete(out, old):
        return old
    log.info("export: %s differs from this request; rewriting it", out)
    return None


def _tokenized(
    ctx: RunContext,
    out: Path,
    files: list[Path],
    spec: TokenizerSpec,
    orders: dict[str, np.ndarray],
    opts: ExportOptions,
    n_docs: int,
    token_writers: list[TokenWriter],
    mixer: Mixer | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, np.ndarray]]:
    """Tokenize the kept files on the engine (into ``export/.work``), then write the token formats (the
    train split redrawn at ``mixer``'s weights); returns their file entries, the tokens per split and
    the orders."""
    work = out / ".work"
    work.mkdir()
    tasks = plan_tasks(files, work, spec, max_rows=opts.tokenize_rows)
    # a bucket run's tasks may run where work/ (on this driver's disk) is out of reach
    parts = tokenize_parts(ctx.engine, tasks, detached=runfiles.remote_of(ctx.run_dir) is not None)
    store = TokenStore([(p.tokens_path, p.lengths_path) for p in parts])
    if len(store) != n_docs:
        raise PhaseError(f"export: tokenized {len(store)} documents but the kept files hold {n_docs}")
    if mixer is not None:
        orders = mixer.orders(orders, store.lengths, "tokens")
    entries = _write_tokens(store, orders, spec, out, opts, token_writers)
    tokens_per_split = {s: int(store.lengths[o].sum()) for s, o in orders.items()}
    shutil.rmtree(work)
    return entries, tokens_per_split, orders


def _text_formats(
    ctx: RunContext,
    out: Path,
    files: list[Path],
    orders: dict[str, np.ndarray],
    opts: ExportOptions,
    text_writers: list[TextWriter],
    card: TextSplits,
) -> list[dict[str, Any]]:
    """Each split's rows taken once in export order, handed to every text writer in turn (``card``: the
    dataset card's facts, its splits filled in here)."""
    table = _read_kept(files, opts)
    splits = {split: table.take(pa.array(order)) for split, order in orders.items()}
    text = dataclasses.replace(card, splits=splits)
    entries: list[dict[str, Any]] = []
    for w in text_writers:
        entries += w.write(text, out, opts)
    return entries


def export_run(ctx: RunContext, opts: ExportOptions) -> dict[str, Any]:
    """Export the run's kept documents in ``opts.formats``; skip when an equal complete export exists.

    Every argument is checked before any work (the tokenizer, the columns, the mixture's sources); the
    new export is written into a staging folder beside ``export/`` that replaces it only once complete
    (:func:`curate.io.files.staged_dir`), so a failed or killed export leaves the previous one
    byte-identical."""
    t0 = time.perf_counter()
    files = ctx.kept_files()
    if not files:
        raise PhaseError(f"export: no kept documents: {ctx.kept_dir}/part-*.parquet matched nothing")
    final = ctx.path("export")
    restore_swapped(final)  # an export killed mid-swap earlier: its previous output back first
    chosen = _tokenizer(ctx, opts)
    check_columns(
        list(dict.fromkeys(n for f in files for n in runfiles.read_schema(f).names)),
        columns=opts.columns,
        drop=opts.drop_columns,
    )
    inputs = _inputs(ctx, files)
    mixer = Mixer.of(ctx, opts, files) if opts.mixture is not None else None
    request: dict[str, Any] = {
        "options": opts.to_json(),
        "tokenizer_sha256": chosen[0].sha256 if chosen else None,
        "inputs": inputs,
        **({"mixture_weights": mixer.weights} if mixer else {}),
    }
    old = _previous(final, request)
    if old is not None:
        log.info("export: %s is complete for these inputs and options; skipping", final)
        return summarize(old, resumed=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    owned = (*formats.owned(), *OWN)  # what the new export replaces; every other file is carried over
    with staged_dir(final, keep=lambda name: name not in owned) as out:
        manifest = _write_export(ctx, out, opts, files, inputs, request, chosen, mixer, t0)
    log.info(
        "export: %d docs, %d tokens, %d files in %.1fs -> %s",
        sum(v["docs"] for v in manifest["splits"].values()),
        sum(v["tokens"] for v in manifest["splits"].values()),
        len(manifest["files"]),
        manifest["seconds"],
        final,
    )
    return summarize(manifest, resumed=False)


def _write_export(
    ctx: RunContext,
    out: Path,
    opts: ExportOptions,
    files: list[Path],
    inputs: list[dict[str, Any]],
    request: dict[str, Any],
    chosen: tuple[TokenizerSpec, bytes] | None,
    mixer: Mixer | None,
    t0: float,
) -> dict[str, Any]:
    """Every file of the export into the empty folder ``out``, its manifest last; returns the manifest."""
    spec = dataclasses.replace(chosen[0], path=str(out / TOKENIZER_FILE)) if chosen else None
    n_docs = sum(i["rows"] for i in inputs)
    orders = split_order(n_docs, seed=opts.seed, val_fraction=opts.val_fraction)
    requested = formats.writers(opts.formats)
    token_writers = [w for w in requested if isinstance(w, TokenWriter)]
    text_writers = [w for w in requested if isinstance(w, TextWriter)]
    entries: list[dict[str, Any]] = []
    tokens_per_split = {s: 0 for s in SPLITS}
    if chosen is not None and spec is not None:
        atomic_write_bytes(out / TOKENIZER_FILE, chosen[1])
        entries, tokens_per_split, orders = _tokenized(
            ctx, out, files, spec, orders, opts, n_docs, token_writers, mixer
        )
        entries.append({"path": TOKENIZER_FILE, "format": "tokenizer"})
    elif mixer is not None:
        orders = mixer.orders(orders, mixer.byte_lengths(files), "bytes")
    t_tok = time.perf_counter() - t0
    if text_writers:
        tokenizer = spec.to_json() if spec else None
        card = TextSplits(
            splits={},
            name=opts.pretty_name or str(ctx.config.get("name") or ctx.run_dir.resolve().name),
            card={
                "seed": opts.seed,
                "val_fraction": opts.val_fraction,
                "tokens": tokens_per_split,
                "tokenizer": tokenizer,
                "token_formats": [f for f in opts.formats if f in formats.names(tokens=True)],
                "mixture": mixer.report if mixer else None,
            },
            notes=_notes([*text_writers, *token_writers], tokenizer),
        )
        entries += _text_formats(ctx, out, files, orders, opts, text_writers, card)
    for e in entries:
        p = out / e["path"]
        e["bytes"] = p.stat().st_size
        e["sha256"] = sha256_file(p)
    total_tokens = sum(tokens_per_split.values())
    manifest = {
        "version": MANIFEST_VERSION,
        "request": request,
        "tokenizer": spec.to_json() if spec else None,
        "megatron_dtype": megatron_dtype(spec.vocab_size).name if spec else None,
        "seed": opts.seed,
        "val_fraction": opts.val_fraction,
        "splits": {s: {"docs": int(o.size), "tokens": tokens_per_split[s]} for s, o in orders.items()},
        "files": entries,
        "mixture": mixer.report if mixer else None,
        "pipeline": _pipeline_record(ctx),
        "seconds": round(time.perf_counter() - t0, 3),
        "tokens_per_second": round(total_tokens / t_tok, 1) if spec and t_tok > 0 else None,
    }
    atomic_write_json(out / MANIFEST, manifest, indent=2, default=str, end="\n")
    return manifest


def _notes(written: list[Writer], tokenizer: dict[str, Any] | None) -> tuple[str, ...]:
    """The dataset card's paragraphs on reading the formats written (text formats first)."""
    return tuple(note for w in written if (note := w.card_note(tokenizer)))


def _pipeline_record(ctx: RunContext) -> dict[str, Any]:
    """What made the exported run: its manifest (path and sha256), pipeline file and config."""
    run_manifest = ctx.run_dir / "manifest.json"
    return {
        "run_manifest": "../manifest.json" if run_manifest.is_file() else None,
        "run_manifest_sha256": sha256_file(run_manifest) if run_manifest.is_file() else None,
        "pipeline_path": ctx.pipeline_path,
        "config": ctx.manifest.get("config", ctx.config),
    }


def verify_export(export_dir: Path) -> list[str]:
    """Problems found re-checking every file of an export against its manifest (empty list: all good)."""
    export_dir = Path(export_dir)
    manifest = json.loads((export_dir / MANIFEST).read_text())
    problems = []
    for f in manifest["files"]:
        try:
            p = confined(export_dir, f["path"])
        except PathEscapeError as e:
            problems.append(str(e))
            continue
        if not p.is_file():
            problems.append(f"{f['path']}: missing")
        elif p.stat().st_size != f["bytes"]:
            problems.append(f"{f['path']}: {p.stat().st_size} bytes, manifest says {f['bytes']}")
        elif sha256_file(p) != f["sha256"]:
            problems.append(f"{f['path']}: sha256 differs from the manifest")
    return problems
