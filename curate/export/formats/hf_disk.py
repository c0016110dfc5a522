"""A Hugging Face ``datasets`` folder written with ``DatasetDict.save_to_disk``, for ``load_from_disk``.

Layout under the export directory::

    hf_disk/dataset_dict.json                   {"splits": ["train", "validation"]}
    hf_disk/train/data-00000-of-00001.arrow     Arrow stream shards (``datasets``' own size bound)
    hf_disk/train/dataset_info.json             features (id, text, source, scores)
    hf_disk/train/state.json
    hf_disk/validation/...

``datasets.load_from_disk(EXPORT_DIR / "hf_disk")`` returns a ``DatasetDict`` whose row ``i`` of a
split is the same document as row ``i`` of that split's Parquet shards taken in order. Unlike the
Parquet export, an empty split is still written (one empty shard), so both splits always load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from curate.export.formats.base import WRITERS, Entry, TextSplits, TextWriter
from curate.io.files import atomic_path

if TYPE_CHECKING:
    from curate.export.options import ExportOptions

DIR = "hf_disk"


@dataclass(frozen=True)
class HfDiskFile:
    """One written file: its path relative to the export directory, its split (None for the
    top-level ``dataset_dict.json``) and its row count (None for the JSON metadata files)."""

    path: str
    split: str | None
    rows: int | None


def arrow_rows(path: Path) -> int:
    """Rows in a ``datasets`` Arrow stream shard (memory-mapped, not read into memory)."""
    with pa.memory_map(str(path)) as source:
        return sum(batch.num_rows for batch in pa.ipc.open_stream(source))


def write_hf_disk(splits: dict[str, pa.Table], out_dir: Path) -> list[HfDiskFile]:
    """Write ``splits`` (split name -> table already in export order) as ``out_dir/hf_disk``.

    Returns every file written, in a stable (sorted) order.
    """
    import datasets

    target = out_dir / DIR
    dd = datasets.DatasetDict({split: datasets.Dataset(table) for split, table in splits.items()})
    # datasets writes no shard for an empty split unless told to, and then cannot load the folder back
    empty = {split: 1 for split, table in splits.items() if table.num_rows == 0}
    with atomic_path(target) as tmp:  # a folder: complete under its name, or absent
        dd.save_to_disk(str(tmp), num_shards=empty or None)
    written = []
    for p in sorted(q for q in target.rglob("*") if q.is_file()):
        rel = p.relative_to(target)
        split = rel.parts[0] if len(rel.parts) > 1 else None
        rows = arrow_rows(p) if p.suffix == ".arrow" else None
        written.append(HfDiskFile(str(p.relative_to(out_dir)), split, rows))
    return written


@WRITERS.add("hf_disk")
class HfDiskWriter(TextWriter):
    """The ``save_to_disk`` folder (opt-in); a split's files carry its name, its Arrow shards their rows."""

    owns = (DIR,)

    def write(self, text: TextSplits, out: Path, opts: ExportOptions) -> list[Entry]:
        entries: list[Entry] = []
        for f in write_hf_disk(text.splits, out):
            entry: Entry = {"path": f.path, "format": "hf_disk"}
            if f.split is not None:
                entry["split"] = f.split
            if f.rows is not None:
                entry["docs"] = f.rows
            entries.append(entry)
        return entries

    def card_note(self, tokenizer: dict[str, Any] | None) -> str:
        return (
            '\n`datasets.load_from_disk("path/to/export/hf_disk")` returns the same splits and rows '
            "(a `save_to_disk` folder).\n"
        )
