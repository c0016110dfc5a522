"""``curate export RUN_DIR --format ...``: export a finished run's kept documents for training."""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import Any

from curate.core.errors import PhaseError
from curate.export import formats
from curate.export.options import ExportOptions
from curate.export.phase import run_phase
from curate.export.tokenizer_spec import describe
from curate.runtime.context import RunContext

EXAMPLE = """example:
  curate export runs/demo --format parquet --format megatron --format memmap \\
      --tokenizer gpt2 --shard-tokens 50000000 --val-fraction 0.01 --seed 0
  curate export runs/demo --format megatron --tokenizer models/my_tokenizer.json  # your trainer's
  curate export runs/demo --format hf_disk --columns id,text,source     # adds hf_disk to the export
  curate export runs/demo --format parquet --drop-columns 'gopher_*' --overwrite   # parquet only
  curate export runs/demo --mixture search      # train split at `curate mix`'s chosen source weights
                                                # (only when its confirmation called them better)
  curate export runs/demo --mixture web=0.7,books=0.3 --overwrite    # or at weights of your own

A later export ADDS its formats to the ones already in RUN_DIR/export (all are rewritten from the same
options, so they stay consistent); --overwrite replaces the export with exactly the requested formats.

Writes RUN_DIR/export/: parquet/ + README.md (load with datasets.load_dataset("RUN_DIR/export")),
megatron/*.bin/.idx, memmap/*.bin + *.doc_idx.npy with the tokenizer.json they were written with,
hf_disk/ (only with --format hf_disk; load with datasets.load_from_disk("RUN_DIR/export/hf_disk")),
and manifest.json (token counts, sha256 of every file, tokenizer, pipeline config). Megatron and memmap
need a tokenizer named with --tokenizer (or export.tokenizer): a Hugging Face tokenizer.json, gpt2
(GPT-2's BPE, offline), or proxy (the run's own small proxy tokenizer: rarely what a trainer wants).
Document i of a split's token shards is row i of its Parquet shards (both in file order): docs/export.md.
Options not given come from the run's `export:` section, then the defaults, then the previous export's
options. Rerunning with the same inputs and options skips the finished export.
"""


def register(subparsers: Any) -> None:
    """Add the ``export`` verb to the main CLI's subparsers."""
    p = subparsers.add_parser(
        "export",
        help="export kept documents as Parquet, a datasets save_to_disk folder, Megatron or memmap token shards",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run directory (with kept/), or its URL")
    p.add_argument(
        "--format",
        dest="formats",
        action="append",
        choices=formats.names(),
        help=(
            "an export format; repeat for several "
            f"(default: the run's export.formats, else {', '.join(formats.defaults(tokenizer=False))}, "
            f"and {', '.join(formats.defaults(tokenizer=True, tokens=True))} with a tokenizer)"
        ),
    )
    p.add_argument(
        "--tokenizer",
        help=(
            "the token formats' tokenizer: a Hugging Face tokenizer.json (a path: the working directory, "
            "then the run's pipeline folder; or a URL), gpt2, or proxy (the run's proxy's)"
        ),
    )
    p.add_argument("--eos-token", help="token appended to every document (default: <|endoftext|>, </s>, ...)")
    p.add_argument("--shard-tokens", type=int, help="target tokens per token shard (default 100000000)")
    p.add_argument("--val-fraction", type=float, help="fraction of documents for validation (default 0.01)")
    p.add_argument("--seed", type=int, help="seed of the document shuffle (default 0)")
    p.add_argument(
        "--columns",
        type=_names,
        help="comma-separated columns (or globs) for parquet/hf_disk (default: all not entirely null)",
    )
    p.add_argument("--drop-columns", type=_names, help="comma-separated columns (or globs) to leave out")
    p.add_argument(
        "--mixture",
        type=_mixture_arg,
        metavar="search|SRC=W,SRC=W",
        help=(
            "write the train split at mixture weights over the sources (export.mixture_by, default the "
            "source column): search (RUN/mix.json's chosen mixture) or a weight per source, normalized to "
            "sum 1 (docs/mixtures.md)"
        ),
    )
    p.add_argument(
        "--unconfirmed-mixture",
        action="store_true",
        default=None,
        help=(
            "with --mixture search: export the chosen weights even when the search's confirmation on fresh "
            "seeds did not call them better than the natural mixture (export.mixture_unconfirmed)"
        ),
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the existing export instead of adding the requested formats to it",
    )
    p.add_argument(
        "--engine",
        choices=("inline", "ray"),
        default="inline",
        help="tokenize in this process (default) or on Ray (embedded, or RAY_ADDRESS)",
    )
    p.set_defaults(func=handler)


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _mixture_arg(value: str) -> str | dict[str, float]:
    """``--mixture``: ``search``, or ``SRC=W,SRC=W`` as a mapping (the weights are checked by the
    ``export:`` section's own checks, :class:`curate.export.options.ExportOptions`)."""
    if value.strip() == "search":
        return "search"
    weights: dict[str, float] = {}
    for item in (v.strip() for v in value.split(",")):
        source, eq, weight = item.rpartition("=")
        try:
            if not eq or not source.strip():
                raise ValueError
            w = float(weight)
            if not math.isfinite(w):
                raise ValueError
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected `search` or SRC=W,SRC=W (e.g. web=0.7,books=0.3), got {item!r} in {value!r}"
            ) from None
        if source.strip() in weights:
            raise argparse.ArgumentTypeError(f"source {source.strip()!r} is given twice in {value!r}")
        weights[source.strip()] = w
    return weights


def previous_options(run_dir: Path) -> dict[str, Any]:
    """The options of the export already in ``RUN_DIR/export`` (empty when there is none)."""
    path = run_dir / "export" / "manifest.json"
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text()).get("request", {}).get("options") or {})


def build_context(args: argparse.Namespace) -> RunContext:
    """A RunContext for RUN_DIR with the run's ``export:`` section overridden by the command line."""
    from curate.core.engine import make_engine

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise PhaseError(f"{run_dir}: no such run directory")
    mpath = run_dir / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.is_file() else {}
    config = manifest.get("config") or {}
    section = dict(config.get("export") or {}) if isinstance(config, dict) else {}
    previous = {} if args.overwrite else previous_options(run_dir)
    if previous:
        # Add to the existing export: its options stay unless given again; formats are the union.
        section.update({k: v for k, v in previous.items() if v is not None})
        if args.formats:
            args.formats = list(dict.fromkeys([*previous.get("formats", []), *args.formats]))
    overrides = {
        "formats": args.formats,
        "columns": args.columns,
        "drop_columns": args.drop_columns,
        "tokenizer": args.tokenizer,
        "eos_token": args.eos_token,
        "shard_tokens": args.shard_tokens,
        "val_fraction": args.val_fraction,
        "seed": args.seed,
        "mixture": args.mixture,
        "mixture_unconfirmed": args.unconfirmed_mixture,
    }
    section.update({k: v for k, v in overrides.items() if v is not None})
    # the registered class of the pipeline's export: section; a tokenizer file (--tokenizer, or the run's
    # export.tokenizer) resolves against the working directory, then the run's pipeline folder
    opts = ExportOptions.parse(section, pipeline_path=manifest.get("pipeline"))
    engine = make_engine(args.engine, progress=True)
    return RunContext(run_dir=run_dir, config=config, engine=engine, manifest=manifest, section=opts)


def handler(args: argparse.Namespace) -> int:
    """Run the export; print where it went and its counts. Exit 0 on success, 2 on a usage/data error."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ctx = build_context(args)  # a PhaseError is printed by curate.cli.main as "curate export: error: ..."
    try:
        summary = run_phase(ctx)
    finally:
        ctx.engine.shutdown()
    docs, tokens = summary["docs"], summary["tokens"]
    state = "already complete" if summary["resumed"] else f"written in {summary['seconds']:.1f}s"
    print(f"export {state}: {ctx.run_dir / 'export'}")
    print(f"  formats    {', '.join(summary['formats'])}")
    tok = summary.get("tokenizer")
    has_tokens = tok is not None
    if tok is not None:
        print(f"  tokenizer  {describe(tok)}")
    for split in docs:
        count = f" {tokens[split]:>14,} tokens" if has_tokens else ""
        print(f"  {split:<10} {docs[split]:>10,} docs{count}")
    print(f"  manifest   {ctx.run_dir / summary['manifest']}")
    return 0
