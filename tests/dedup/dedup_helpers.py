"""Run a GlobalStage the way the runner does: collect per part, key tables to parquet, reduce, apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def run_global(stage: Any, parts: list[pa.Table], engine: Any, tmp: Path) -> tuple[list[pa.Table], Any]:
    stage.ensure_setup()
    tmp.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, part in enumerate(parts):
        path = tmp / f"{stage.label}-keys-{i:05d}.parquet"
        pq.write_table(stage.collect(part), path)
        paths.append(str(path))
    state = stage.reduce(paths, engine)
    return [stage.apply(part, state) for part in parts], state


def split(table: pa.Table, sizes: list[int]) -> list[pa.Table]:
    out, start = [], 0
    for n in sizes:
        out.append(table.slice(start, n))
        start += n
    assert start == table.num_rows
    return out


def column(parts: list[pa.Table], name: str) -> list[Any]:
    return [v for p in parts for v in p.column(name).to_pylist()]
