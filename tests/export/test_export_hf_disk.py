"""hf_disk export: `datasets.load_from_disk` returns the Parquet export's splits, row for row, in order."""

from __future__ import annotations

import argparse
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.export import cli
from curate.export.exporter import ExportOptions, verify_export
from curate.export.phase import run_phase
from tests.export.export_fixtures import make_ctx

COLUMNS = ["id", "text", "source", "gopher_quality_v1.score", "length_v1.words"]


@pytest.fixture(autouse=True)
def hf_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def parquet_split(export, split: str) -> list[dict]:
    """A split's rows as the Parquet export holds them: its shards read in file-name order."""
    shards = sorted((export / "parquet").glob(f"{split}-*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in shards]).to_pylist()


def test_load_from_disk_matches_the_parquet_splits_row_for_row(run_dir):
    import datasets

    section = {"formats": ["parquet", "hf_disk"], "val_fraction": 0.2, "seed": 5, "parquet_shard_rows": 20}
    summary = run_phase(make_ctx(run_dir, section))
    assert summary["formats"] == ["parquet", "hf_disk"]
    assert summary["tokenizer"] is None
    export = run_dir / "export"
    ds = datasets.load_from_disk(str(export / "hf_disk"))
    assert isinstance(ds, datasets.DatasetDict)
    assert list(ds) == ["train", "validation"]
    for split, n in (("train", 48), ("validation", 12)):
        rows = parquet_split(export, split)
        assert len(rows) == n
        assert ds[split].column_names == COLUMNS
        assert ds[split].to_list() == rows  # same documents, same shuffled order
    card = (export / "README.md").read_text()
    assert 'datasets.load_from_disk("path/to/export/hf_disk")' in card
    # the card's configs keep load_dataset(export_dir) on the Parquet files, not the Arrow shards
    by_card = datasets.load_dataset(str(export), cache_dir=str(run_dir.parent / "hf-cache"))
    assert by_card["train"].to_list() == ds["train"].to_list()


def test_manifest_lists_the_hf_disk_files_with_sha256(run_dir):
    run_phase(make_ctx(run_dir, {"formats": ["hf_disk"], "val_fraction": 0.1, "seed": 11}))
    export = run_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {str(p.relative_to(export)) for p in export.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(listed) == on_disk
    assert all(f["format"] == "hf_disk" for f in listed.values())
    for split in ("train", "validation"):
        for name in ("data-00000-of-00001.arrow", "dataset_info.json", "state.json"):
            assert listed[f"hf_disk/{split}/{name}"]["split"] == split
    assert "hf_disk/dataset_dict.json" in listed
    assert "split" not in listed["hf_disk/dataset_dict.json"]
    for f in listed.values():
        data = (export / f["path"]).read_bytes()
        assert f["bytes"] == len(data)
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    for split in ("train", "validation"):
        shards = [f for f in listed.values() if f["path"].endswith(".arrow") and f["split"] == split]
        assert sum(f["docs"] for f in shards) == manifest["splits"][split]["docs"]
    assert (manifest["splits"]["train"]["docs"], manifest["splits"]["validation"]["docs"]) == (54, 6)
    assert verify_export(export) == []
    (export / "hf_disk" / "train" / "state.json").write_text("{}")
    assert verify_export(export) == [
        f"hf_disk/train/state.json: 2 bytes, manifest says {listed['hf_disk/train/state.json']['bytes']}"
    ]


def test_an_empty_validation_split_still_loads(run_dir):
    import datasets

    summary = run_phase(make_ctx(run_dir, {"formats": ["hf_disk"], "val_fraction": 0.0}))
    assert summary["docs"] == {"train": 60, "validation": 0}
    ds = datasets.load_from_disk(str(run_dir / "export" / "hf_disk"))
    assert (ds["train"].num_rows, ds["validation"].num_rows) == (60, 0)
    assert ds["validation"].column_names == COLUMNS


def test_hf_disk_is_valid_but_opt_in():
    assert ExportOptions().formats == ("parquet",)
    assert ExportOptions.from_section({"formats": "hf_disk"}).formats == ("hf_disk",)
    with pytest.raises(PhaseError, match=r"expected one of .*, got 'hf-disk' \(did you mean 'hf_disk'\?\)$"):
        ExportOptions.from_section({"formats": ["hf-disk"]})


def test_cli_format_hf_disk_needs_no_tokenizer(run_dir, capsys):
    import datasets

    p = argparse.ArgumentParser(prog="curate")
    cli.register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["export", str(run_dir), "--format", "hf_disk", "--val-fraction", "0.5"])
    assert args.func(args) == 0
    export = run_dir / "export"
    assert sorted(x.name for x in export.iterdir()) == ["hf_disk", "manifest.json"]
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["request"]["options"]["formats"] == ["hf_disk"]
    assert manifest["tokenizer"] is None
    ds = datasets.load_from_disk(str(export / "hf_disk"))
    assert (ds["train"].num_rows, ds["validation"].num_rows) == (30, 30)
    assert "  train              30 docs" in capsys.readouterr().out
    assert args.func(args) == 0
    assert capsys.readouterr().out.startswith(f"export already complete: {export}")
