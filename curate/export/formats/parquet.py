"""Parquet shards with a Hugging Face dataset card, loadable by ``datasets.load_dataset``.

Layout under the export directory::

    README.md                                   dataset card: YAML header (configs, dataset_info) + text
    parquet/train-00000-of-00002.parquet        zstd, bounded rows and bytes per shard
    parquet/validation-00000-of-00001.parquet

``load_dataset(EXPORT_DIR)`` reads the card's ``configs``; ``load_dataset("parquet",
data_dir=EXPORT_DIR / "parquet")`` infers the splits from the file names. Row ``i`` of a split is the
same document as document ``i`` of that split's token shards taken in order. With ``export.mixture``
the card ends with the mixture's table (:func:`curate.export.mixture.card_section`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from curate.core import schema
from curate.export.formats.base import WRITERS, Entry, TextSplits, TextWriter
from curate.export.mixture import card_section
from curate.export.plan import shard_by_size
from curate.io.files import atomic_path, atomic_write_text

if TYPE_CHECKING:
    from curate.export.options import ExportOptions

ROW_OVERHEAD_BYTES = 64  # rough per-row cost of id, source and scores when bounding shard bytes


@dataclass(frozen=True)
class ParquetShard:
    """One written shard: its path relative to the export directory, split and row count."""

    path: str
    split: str
    rows: int


def write_parquet_split(
    table: pa.Table, split: str, out_dir: Path, *, max_rows: int, max_bytes: int
) -> list[ParquetShard]:
    """Write ``table`` (already in export order) as ``out_dir/parquet/<split>-XXXXX-of-YYYYY.parquet``.

    An empty split writes no file (the card then lists no such split).
    """
    if table.num_rows == 0:
        return []
    row_bytes = pc.binary_length(table.column(schema.TEXT).fill_null("")).to_numpy(zero_copy_only=False)
    row_bytes = row_bytes.astype(np.int64) + ROW_OVERHEAD_BYTES
    shards = shard_by_size(row_bytes, target=max_bytes, max_items=max_rows)
    (out_dir / "parquet").mkdir(parents=True, exist_ok=True)
    written = []
    for i, rows in enumerate(shards):
        rel = f"parquet/{split}-{i:05d}-of-{len(shards):05d}.parquet"
        part = table.slice(int(rows[0]), rows.size)
        with atomic_path(out_dir / rel) as tmp:
            pq.write_table(part, tmp, compression="zstd", row_group_size=10_000)
        written.append(ParquetShard(rel, split, part.num_rows))
    return written


def features_yaml(arrow_schema: pa.Schema) -> list[dict[str, Any]]:
    """The ``dataset_info.features`` list of a card, in ``datasets``' own YAML form."""
    import datasets

    return datasets.Features.from_arrow_schema(arrow_schema)._to_yaml_list()


def dataset_card(
    *,
    arrow_schema: pa.Schema,
    splits: dict[str, dict[str, int]],
    pretty_name: str,
    license: str,
    summary: dict[str, Any],
    notes: tuple[str, ...] = (),
) -> str:
    """The ``README.md`` text: Hugging Face YAML header, then what the export holds and how to load it.

    ``splits`` maps a split name to ``{"rows": ..., "bytes": ...}``; ``summary`` adds the token shard
    facts (formats, tokenizer, token counts) to the prose; ``notes`` (the other formats' paragraphs on
    reading them) follow the loading example.
    """
    header = {
        "pretty_name": pretty_name,
        "license": license,
        "tags": ["curate", "pretraining"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [
                    {"split": s, "path": f"parquet/{s}-*.parquet"} for s in splits if splits[s]["rows"]
                ],
            }
        ],
        "dataset_info": {
            "features": features_yaml(arrow_schema),
            "splits": [
                {"name": s, "num_bytes": v["bytes"], "num_examples": v["rows"]}
                for s, v in splits.items()
                if v["rows"]
            ],
            "dataset_size": sum(v["bytes"] for v in splits.values()),
        },
    }
    tok = summary.get("tokenizer") or {}
    rows = "\n".join(
        f"| {s} | {v['rows']:,} | {format(summary['tokens'][s], ',') if tok else '-'} |"
        for s, v in splits.items()
    )
    tok_line = (
        (
            f"Token shards ({', '.join(summary.get('token_formats', []))}) use the tokenizer "
            f"`{tok['name']}` ({tok['origin']}), saved here as `{tok['file']}` (sha256 `{tok['sha256']}`): "
            f"vocabulary {tok['vocab_size']:,}, EOS `{tok['eos_token']}` = {tok['eos_id']} after every "
            f"document, dtype {tok['dtype']}. Document `i` of a split's token shards (in file order) is "
            "row `i` of its Parquet shards (in file order)."
        )
        if tok
        else "No token shards were exported."
    )
    # The columns this export carries (after `columns` / `drop_columns`): never one it left out.
    scores = [c for c in arrow_schema.names if "." in c]
    columns = ", ".join(f"`{c}`" for c in arrow_schema.names if "." not in c)
    columns += (
        f" and the scores kept (`<stage>.<field>`): {', '.join(f'`{c}`' for c in scores)}"
        if scores
        else " (no score columns)"
    )
    body = f"""# {pretty_name}

Documents kept by a `curate` pipeline run, shuffled with seed {summary.get("seed")} and split into
train/validation (validation fraction {summary.get("val_fraction")}). Columns: {columns}.

| split | documents | tokens |
| --- | ---: | ---: |
{rows}

{tok_line} `manifest.json` lists every file with its sha256, the token counts per shard and the
pipeline configuration that produced the data.

## Loading

```python
from datasets import load_dataset
ds = load_dataset("path/to/export")                                 # reads this card's configs
ds = load_dataset("parquet", data_dir="path/to/export/parquet")     # same rows
```

"""
    body += "".join(notes)
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + body


@WRITERS.add("parquet")
class ParquetWriter(TextWriter):
    """Parquet shards of every split (``export.parquet_shard_rows`` / ``_bytes``), then the dataset card."""

    default = True
    owns = ("parquet", "README.md")

    def write(self, text: TextSplits, out: Path, opts: ExportOptions) -> list[Entry]:
        entries: list[Entry] = []
        for split, part in text.splits.items():
            for sh in write_parquet_split(
                part, split, out, max_rows=opts.parquet_shard_rows, max_bytes=opts.parquet_shard_bytes
            ):
                entries.append({"path": sh.path, "format": "parquet", "split": sh.split, "docs": sh.rows})
        card = dataset_card(
            arrow_schema=next(iter(text.splits.values())).schema,
            splits={s: {"rows": p.num_rows, "bytes": int(p.nbytes)} for s, p in text.splits.items()},
            pretty_name=text.name,
            license=opts.license,
            summary=text.card,
            notes=text.notes,
        )
        if text.card.get("mixture"):
            card += card_section(text.card["mixture"])
        atomic_write_text(out / "README.md", card)
        entries.append({"path": "README.md", "format": "card"})
        return entries
