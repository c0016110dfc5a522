"""The ``hf`` source: Hugging Face datasets (``load_from_disk`` folders, or anything ``load_dataset`` reads)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from curate.core.registry import SOURCES
from curate.io.readers import table_to_rows
from curate.io.sources import Shard, Source, SourceError, SourceParams


@dataclass
class HFParams(SourceParams):
    """``path``: a ``save_to_disk`` folder, a local data folder/file, or a hub id (needs network)."""

    split: str = "train"
    config_name: str | None = None
    builder: str | None = None  # e.g. "json", "parquet", "csv" to load local files through load_dataset
    data_files: list[str] | None = None


@SOURCES.add("hf")
class HFSource(Source):
    """Hugging Face ``datasets``: ``load_from_disk`` folders, or anything ``load_dataset`` reads."""

    Params = HFParams

    def shards(self) -> list[Shard]:
        return [Shard(0, self.params.path, os.path.basename(os.path.normpath(self.params.path)) or "hf")]

    def _load(self) -> Any:
        import datasets

        p: HFParams = self.params
        if (
            (os.path.isdir(p.path) and os.path.exists(os.path.join(p.path, "dataset_info.json")))
            or os.path.exists(os.path.join(p.path, "state.json"))
            or os.path.exists(os.path.join(p.path, "dataset_dict.json"))
        ):
            ds = datasets.load_from_disk(p.path)
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[p.split]
            return ds
        if p.builder:
            return datasets.load_dataset(p.builder, data_files=p.data_files or p.path, split=p.split)
        return datasets.load_dataset(p.path, p.config_name, split=p.split)

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        try:
            ds = self._load()
        except Exception as e:  # datasets raises many types; the message names the cause
            raise SourceError(f"{self.params.path}: cannot load as a Hugging Face dataset: {e}") from e
        row = 0
        for batch in ds.with_format("arrow").iter(batch_size=self.params.batch_docs):
            table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
            if self.params.limit is not None:
                table = table.slice(0, max(0, self.params.limit - row))
            if table.num_rows == 0:
                break
            yield table_to_rows(table, shard, self.params, row)
            row += table.num_rows
