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
from curate.export import hf_disk, megatron, memmap, parquet
from curate.export.columns import check_columns, choose_columns
from curate.export.mixture import Mixer, card_section
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
    atomic_write_text,
    confined,
    escapes,
    restore_swapped,
    sha256_file,
    staged_dir,
)
from curate.runtime.context import RunContext

log = logging.getLogger(__name__)

TOKEN_FORMATS = ("megatron", "memmap")
TEXT_FORMATS = ("parquet", "hf_disk")
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
OWNED = ("parquet", "megatron", "memmap", hf_disk.DIR, "README.md", TOKENIZER_FILE, MANIFEST, ".work")


def _tokenizer(ctx: RunContext, opts: ExportOptions) -> tuple[TokenizerSpec, bytes] | None:
    """The tokenizer the user named for the token formats, and its file's bytes (None: no token
    format asked). Never a default: a trainer given shards in the wrong vocabulary trains on noise."""
    token_formats = [f for f in opts.formats if f in TOKEN_FORMATS]
    if not token_formats:
        return None
    if not opts.tokenizer:
        raise PhaseError(need_tokenizer_message(token_formats))
    pipeline_dir = str(Path(ctx.pipeline_path).parent) if ctx.pipeline_path else None
    origin, data = tokenizer_source(
        opts.tokenizer, proxy_file=ctx.path("proxy", "tokenizer.json"), pipeline_dir=pipeline_dir
    )
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
    store: TokenStore, orders: dict[str, np.ndarray], spec: TokenizerSpec, out: Path, opts: ExportOptions
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    mg_dtype = megatron.megatron_dtype(spec.vocab_size)
    for split, order in orders.items():
        for i, pos in enumerate(shard_by_size(store.lengths[order], target=opts.shard_tokens)):
            tokens, lens = store.gather(order[pos])
            stats = {"split": split, "shard": i, "docs": int(lens.size), "tokens": int(tokens.size)}
            if "megatron" in opts.formats:
                (out / "megatron").mkdir(exist_ok=True)
                for p in megatron.write_megatron(
                    out / "megatron" / f"{split}_{i:05d}", tokens, lens, dtype=mg_dtype
                ):
                    entries.append({"path": str(p.relative_to(out)), "format": "megatron", **stats})
            if "memmap" in opts.formats:
                (out / "memmap").mkdir(exist_ok=True)
                for p in memmap.write_memmap(
                    out / "memmap" / f"{split}_{i:05d}", tokens, lens, dtype=spec.token_dtype
                ):
                    entries.append({"path": str(p.relative_to(out)), "format": "memmap", **stats})
    return entries


def _read_kept(files: list[Path], opts: ExportOptions) -> pa.Table:
    tables = [runfiles.read_table(f) for f in files]
    table = pa.concat_tables(tables, promote_options="permissive")
    return choose_columns(table, columns=opts.columns, drop=opts.drop_columns)


def _write_parquet(
    parts: dict[str, pa.Table], out: Path, opts: ExportOptions, card_facts: dict[str, Any], name: str
) -> list[dict[str, Any]]:
    """Parquet shards of every split, then the dataset card describing them."""
    entries: list[dict[str, Any]] = []
    for split, part in parts.items():
        for sh in parquet.write_parquet_split(
            part, split, out, max_rows=opts.parquet_shard_rows, max_bytes=opts.parquet_shard_bytes
        ):
            entries.append({"path": sh.path, "format": "parquet", "split": sh.split, "docs": sh.rows})
    arrow_schema = next(iter(parts.values())).schema
    split_stats = {s: {"rows": p.num_rows, "bytes": int(p.nbytes)} for s, p in parts.items()}
    atomic_write_text(
        out / "README.md",
        parquet.dataset_card(
            arrow_schema=arrow_schema,
            splits=split_stats,
            pretty_name=name,
            license=opts.license,
            summary=card_facts,
        ),
    )
    entries.append({"path": "README.md", "format": "card"})
    return entries


def _write_hf_disk(parts: dict[str, pa.Table], out: Path) -> list[dict[str, Any]]:
    """The ``save_to_disk`` folder; a split's files carry its name, its Arrow shards their rows."""
    entries: list[dict[str, Any]] = []
    for f in hf_disk.write_hf_disk(parts, out):
        entry: dict[str, Any] = {"path": f.path, "format": "hf_disk"}
        if f.split is not None:
            entry["split"] = f.split
        if f.rows is not None:
            entry["docs"] = f.rows
        entries.append(entry)
    return entries


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
    entries = _write_tokens(store, orders, spec, out, opts)
    tokens_per_split = {s: int(store.lengths[o].sum()) for s, o in orders.items()}
    shutil.rmtree(work)
    return entries, tokens_per_split, orders


def _text_formats(
    ctx: RunContext,
    out: Path,
    files: list[Path],
    orders: dict[str, np.ndarray],
    opts: ExportOptions,
    card_facts: dict[str, Any],
) -> list[dict[str, Any]]:
    """Parquet shards with their dataset card, and the hf_disk folder, as ``opts.formats`` asks."""
    table = _read_kept(files, opts)
    splits = {split: table.take(pa.array(order)) for split, order in orders.items()}
    entries: list[dict[str, Any]] = []
    if "parquet" in opts.formats:
        name = opts.pretty_name or str(ctx.config.get("name") or ctx.run_dir.resolve().name)
        entries += _write_parquet(splits, out, opts, card_facts, name)
        if card_facts.get("mixture"):
            card = out / "README.md"
            atomic_write_text(card, card.read_text() + card_section(card_facts["mixture"]))
    if "hf_disk" in opts.formats:
        entries += _write_hf_disk(splits, out)
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
    with staged_dir(final, keep=lambda name: name not in OWNED) as out:
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
    entries: list[dict[str, Any]] = []
    tokens_per_split = {s: 0 for s in SPLITS}
    if chosen is not None and spec is not None:
        atomic_write_bytes(out / TOKENIZER_FILE, chosen[1])
        entries, tokens_per_split, orders = _tokenized(ctx, out, files, spec, orders, opts, n_docs, mixer)
        entries.append({"path": TOKENIZER_FILE, "format": "tokenizer"})
    elif mixer is not None:
        orders = mixer.orders(orders, mixer.byte_lengths(files), "bytes")
    t_tok = time.perf_counter() - t0
    if any(f in TEXT_FORMATS for f in opts.formats):
        card_facts = {
            "seed": opts.seed,
            "val_fraction": opts.val_fraction,
            "tokens": tokens_per_split,
            "tokenizer": spec.to_json() if spec else None,
            "token_formats": [f for f in opts.formats if f in TOKEN_FORMATS],
            "hf_disk": "hf_disk" in opts.formats,
            "mixture": mixer.report if mixer else None,
        }
        entries += _text_formats(ctx, out, files, orders, opts, card_facts)
    for e in entries:
        p = out / e["path"]
        e["bytes"] = p.stat().st_size
        e["sha256"] = sha256_file(p)
    total_tokens = sum(tokens_per_split.values())
    manifest = {
        "version": MANIFEST_VERSION,
        "request": request,
        "tokenizer": spec.to_json() if spec else None,
        "megatron_dtype": megatron.megatron_dtype(spec.vocab_size).name if spec else None,
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
