"""A run directory in a bucket is read in place: the phases and the run-directory verbs never download
``kept/`` and ``rejected/`` into the local mirror (:mod:`curate.io.runfiles`), and a reader that asks
for some columns fetches only those (ranged GETs), not the texts beside them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.io import runfiles
from curate.pipeline.config import parse_pipeline
from curate.runtime.phases import run_phases
from curate.runtime.runner import run_pipeline
from tests.io.s3_runs import pipeline, s3_json, write_inputs


class Fetches:
    """Every read of an object through s3fs, by key: whole-object reads (``cat_file``, ``get_file``) and
    the bytes of ranged reads of open files."""

    def __init__(self, monkeypatch) -> None:
        import s3fs

        self.whole: list[str] = []
        self.ranged: dict[str, int] = {}
        cat, get, fetch = (
            s3fs.S3FileSystem._cat_file,
            s3fs.S3FileSystem._get_file,
            s3fs.core.S3File._fetch_range,
        )

        async def cat_file(fs, path, *a, **kw):
            self.whole.append(path)
            return await cat(fs, path, *a, **kw)

        async def get_file(fs, rpath, lpath, *a, **kw):
            self.whole.append(rpath)
            return await get(fs, rpath, lpath, *a, **kw)

        def fetch_range(f, start, end):
            data = fetch(f, start, end)
            self.ranged[f.path] = self.ranged.get(f.path, 0) + len(data)
            return data

        monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", cat_file)
        monkeypatch.setattr(s3fs.S3FileSystem, "_get_file", get_file)
        monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", fetch_range)

    def parts_read_whole(self) -> list[str]:
        return [k for k in self.whole if "/kept/" in k or "/rejected/" in k]


def test_phases_and_verbs_on_a_bucket_read_kept_and_rejected_in_place(
    s3, tmp_path: Path, monkeypatch
) -> None:
    """An inline run into the bucket with an export, its phases (export, report), then `curate inspect`,
    `report`, `export` and `select` on the URL: the same export as a local run, and no part of kept/ or
    rejected/ is ever read whole or written to the mirror (they are read by ranges, as needed)."""
    from curate.cli import main

    stage = tmp_path / "stage"
    monkeypatch.setenv("CURATE_STAGE", str(stage))
    write_inputs(tmp_path / "in", n_files=3)
    export = "export: {formats: [parquet], val_fraction: 0.1}\n"
    yaml = pipeline(f"{tmp_path}/in/*", export)
    local = run_pipeline(parse_pipeline(yaml), tmp_path / "local", engine=InlineEngine(progress=False))
    out = f"s3://{s3.bucket}/run"
    cfg = parse_pipeline(yaml)
    engine = InlineEngine(progress=False)
    remote = run_pipeline(cfg, out, engine=engine, phases=False)
    assert remote["outputs"] == local["outputs"]
    fetches = Fetches(monkeypatch)  # from here on: the phases (export, report), then the verbs
    run_phases(cfg, out, engine, remote)
    exp = s3_json(s3, "run/export/manifest.json")
    local_exp = json.loads((tmp_path / "local" / "export" / "manifest.json").read_text())
    assert [(f["path"], f["sha256"]) for f in exp["files"]] == [
        (f["path"], f["sha256"]) for f in local_exp["files"]
    ]
    assert s3.fs.exists(f"{s3.bucket}/run/report.html")
    assert main(["inspect", out, "--n", "1"]) == 0
    assert main(["report", out]) == 0
    assert main(["export", out, "--format", "parquet"]) == 0
    assert main(["select", out, "--output", str(tmp_path / "reselected")]) == 0
    assert json.loads((tmp_path / "reselected" / "manifest.json").read_text())["accounting"]["balanced"]
    # kept/ and rejected/ were read, by ranges, never whole, and never stored in the mirror
    assert fetches.parts_read_whole() == []
    read = {k for k in fetches.ranged if "/kept/part-" in k or "/rejected/part-" in k}
    stored = s3.fs.glob(f"{s3.bucket}/run/kept/part-*") + s3.fs.glob(f"{s3.bucket}/run/rejected/part-*")
    assert read == set(stored)
    (mirror,) = [p for p in stage.iterdir() if p.name.startswith("run-")]
    assert (mirror / "report.html").exists()
    assert not list(mirror.glob("kept/*")) + list(mirror.glob("rejected/*"))
    assert [p.parts[-3] for p in mirror.rglob("*.parquet")] == ["export"]  # the export's own shard
    assert runfiles.remote_of(mirror) == out
    assert [p.name for p in runfiles.parts(mirror, "kept")] == sorted(
        p.name for p in (tmp_path / "local" / "kept").glob("part-*.parquet")
    )


def test_a_score_column_is_read_without_the_texts(s3, monkeypatch) -> None:
    """A part with 4 MB of text and a score column: reading the score fetches the footer (pyarrow reads
    the last 64 KiB) and that column chunk only, under 5% of the object, and gives the stored values."""
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ")
    texts = ["".join(rng.choice(letters, 2000)) for _ in range(2000)]
    table = pa.table({"id": [str(i) for i in range(2000)], "text": texts, "s.score": rng.random(2000)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue().to_pybytes()
    s3.fs.pipe_file(f"{s3.bucket}/run/kept/part-00000.parquet", data)
    fetches = Fetches(monkeypatch)
    got = runfiles.read_table(f"s3://{s3.bucket}/run/kept/part-00000.parquet", columns=["s.score"])
    assert got.column("s.score").to_pylist() == table.column("s.score").to_pylist()
    assert fetches.whole == []
    fetched = sum(fetches.ranged.values())
    assert 0 < fetched < 0.05 * len(data), (fetched, len(data))


def test_a_local_run_directory_is_read_from_disk(tmp_path: Path) -> None:
    """No marker, no bucket: parts are the folder's files, read where they are."""
    (tmp_path / "kept").mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "kept" / "part-00001.parquet")
    pq.write_table(pa.table({"x": [3]}), tmp_path / "kept" / "part-00000.parquet")
    assert runfiles.remote_of(tmp_path) is None
    assert [p.name for p in runfiles.parts(tmp_path, "kept")] == ["part-00000.parquet", "part-00001.parquet"]
    assert runfiles.where(tmp_path / "kept" / "part-00000.parquet") == str(
        tmp_path / "kept" / "part-00000.parquet"
    )
    assert runfiles.read_table(tmp_path / "kept" / "part-00001.parquet").column("x").to_pylist() == [1, 2]
    with pytest.raises(FileNotFoundError):
        runfiles.read_table(tmp_path / "kept" / "part-00009.parquet")
