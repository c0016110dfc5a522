"""The ``curate train-classifier`` verb (registered into the main CLI through ``register``)."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

log = logging.getLogger(__name__)

EXAMPLE = """examples:
  # rebuild the default quality classifier from ../shared/corpora
  curate train-classifier models/quality_fasttext.yaml
  # your own data: positives vs negatives, with field filters
  curate train-classifier --name my_quality --output models/my_quality.ftz \\
      --positive 'data/reference/*.jsonl.gz' --negative 'data/web/*.jsonl.gz' --sample 5000
  curate train-classifier --name detector --output models/detector.ftz --positive-label machine \\
      --positive data/pairs.jsonl.gz --positive-where synthetic=true \\
      --negative data/pairs.jsonl.gz --negative-where synthetic=false --group-field pair
"""


def _parse_where(items: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--*-where expects FIELD=VALUE, got {item!r}")
        # JSON-typed when possible (true, 3), a plain string otherwise (human).
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def build_recipe(args: argparse.Namespace) -> Any:
    from curate.classify import ClassifierRecipe, LabelledSource, load_recipe

    overrides = {"seed": args.seed, "holdout": args.holdout, "output": args.output, "name": args.name}
    if args.recipe:
        if args.positive or args.negative:
            raise SystemExit("give either a recipe YAML or --positive/--negative, not both")
        return load_recipe(args.recipe, **overrides)
    if not (args.positive and args.negative and args.output):
        raise SystemExit("without a recipe YAML, --positive, --negative and --output are required")
    pos_label, neg_label = args.positive_label, args.negative_label
    common = {"sample": args.sample, "group_field": args.group_field}
    sources = [
        LabelledSource(label=pos_label, path=p, where=_parse_where(args.positive_where), **common)
        for p in args.positive
    ]
    sources += [
        LabelledSource(label=neg_label, path=p, where=_parse_where(args.negative_where), **common)
        for p in args.negative
    ]
    fasttext: dict[str, Any] = {}
    for key in ("dim", "epoch", "lr"):
        if getattr(args, key) is not None:
            fasttext[key] = getattr(args, key)
    return ClassifierRecipe(
        name=args.name or pos_label,
        output=args.output,
        positive_label=pos_label,
        sources=sources,
        seed=args.seed or 0,
        holdout=args.holdout if args.holdout is not None else 0.1,
        quantize=not args.no_quantize,
        fasttext=fasttext,
    )


def handle(args: argparse.Namespace) -> int:
    from curate.classify import train_classifier

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    recipe = build_recipe(args)
    manifest = train_classifier(recipe)
    m = manifest["holdout_metrics"]
    print(f"{recipe.output}: {manifest['model_bytes'] / 1e6:.2f} MB, sha256 {manifest['model_sha256'][:16]}…")
    print(f"  train {manifest['counts']['train']}  held-out {manifest['counts']['holdout']}")
    if m:
        print(
            f"  held-out AUC {m['auc']:.4f}  precision {m['precision']:.4f}  recall {m['recall']:.4f}"
            f"  (P({recipe.positive_label}) >= {m['threshold']})"
        )
    return 0


def register(subparsers: Any) -> None:
    """Add ``train-classifier`` to the main CLI's subcommands."""
    p = subparsers.add_parser(
        "train-classifier",
        help="train a fastText classifier (quality, machine-text) with a manifest",
        description="Train a fastText classifier from labelled JSON Lines sources (a recipe YAML or "
        "--positive/--negative), evaluate it on a held-out split, and write the model plus "
        "<model>.manifest.json (input fingerprints, parameters, held-out metrics, sha256).",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("recipe", nargs="?", help="recipe YAML, e.g. models/quality_fasttext.yaml")
    p.add_argument("--output", help="model path (.ftz when quantized); overrides the recipe's")
    p.add_argument("--name", help="model name recorded in the manifest")
    p.add_argument("--seed", type=int, help="seed for sampling, the held-out split and fastText")
    p.add_argument("--holdout", type=float, help="held-out fraction (default 0.1)")
    p.add_argument("--positive", action="append", help="JSON Lines path or glob of positives (repeatable)")
    p.add_argument("--negative", action="append", help="JSON Lines path or glob of negatives (repeatable)")
    p.add_argument("--positive-where", action="append", help="FIELD=VALUE filter on positive records")
    p.add_argument("--negative-where", action="append", help="FIELD=VALUE filter on negative records")
    p.add_argument("--positive-label", default="hq", help="label of the positives (default hq)")
    p.add_argument("--negative-label", default="lq", help="label of the negatives (default lq)")
    p.add_argument("--sample", type=int, help="at most N records per source")
    p.add_argument("--group-field", help="record field that groups texts for the held-out split (e.g. pair)")
    p.add_argument("--dim", type=int)
    p.add_argument("--epoch", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--no-quantize", action="store_true", help="write a full .bin instead of a quantized .ftz")
    p.set_defaults(func=handle)
