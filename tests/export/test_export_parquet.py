"""Parquet export: `datasets` loads it (through the card and as a plain parquet folder) with identical rows."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from curate.export.phase import run_phase
from curate.export.plan import split_order
from tests.export.export_fixtures import kept_rows, make_ctx


@pytest.fixture
def hf_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "hf-cache"


def expected_rows(run_dir, manifest) -> dict[str, list[dict]]:
    rows = kept_rows(run_dir).to_pylist()
    orders = split_order(len(rows), seed=manifest["seed"], val_fraction=manifest["val_fraction"])
    return {split: [rows[i] for i in order] for split, order in orders.items()}


def test_datasets_loads_the_export_with_identical_rows(run_dir, tiny_tokenizer, hf_offline):
    """Token shards sit next to the Parquet files (megatron/, memmap/): the card's configs keep
    ``load_dataset(export_dir)`` on the Parquet files only."""
    import datasets

    section = {"val_fraction": 0.2, "seed": 5, "parquet_shard_rows": 20, "tokenizer": str(tiny_tokenizer)}
    summary = run_phase(make_ctx(run_dir, section))
    assert summary["formats"] == ["parquet", "megatron", "memmap"]
    assert summary["docs"] == {"train": 48, "validation": 12}
    export = run_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    assert sorted(f["path"] for f in manifest["files"] if f["format"] in ("parquet", "card")) == [
        "README.md",
        "parquet/train-00000-of-00003.parquet",
        "parquet/train-00001-of-00003.parquet",
        "parquet/train-00002-of-00003.parquet",
        "parquet/validation-00000-of-00001.parquet",
    ]
    card = (export / "README.md").read_text()
    assert 'np.memmap("memmap/train_00000.bin", dtype=np.uint16, mode="r")' in card
    assert "Megatron-LM: pass `megatron/train_00000`" in card
    expected = expected_rows(run_dir, manifest)
    by_card = datasets.load_dataset(str(export), cache_dir=str(hf_offline))
    by_dir = datasets.load_dataset("parquet", data_dir=str(export / "parquet"), cache_dir=str(hf_offline))
    for ds in (by_card, by_dir):
        assert set(ds) == {"train", "validation"}
        for split in ("train", "validation"):
            assert ds[split].to_list() == expected[split]
    assert by_card["train"].column_names == [
        "id",
        "text",
        "source",
        "gopher_quality_v1.score",
        "length_v1.words",
    ]


def test_parquet_only_needs_no_tokenizer(run_dir):
    summary = run_phase(make_ctx(run_dir, {"formats": ["parquet"]}))
    assert summary["tokenizer"] is None
    assert summary["tokens"] == {"train": 0, "validation": 0}
    assert sorted(p.name for p in (run_dir / "export").iterdir()) == ["README.md", "manifest.json", "parquet"]


def test_dataset_card_header_matches_the_data(run_dir):
    run_phase(
        make_ctx(
            run_dir,
            {"formats": ["parquet"], "val_fraction": 0.1, "pretty_name": "Demo set", "license": "odc-by"},
        )
    )
    card = (run_dir / "export" / "README.md").read_text()
    assert card.startswith("---\n")
    assert "Megatron-LM" not in card
    assert "| train | 54 | - |" in card
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["pretty_name"] == "Demo set"
    assert header["license"] == "odc-by"
    assert header["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "parquet/train-*.parquet"},
                {"split": "validation", "path": "parquet/validation-*.parquet"},
            ],
        }
    ]
    assert header["dataset_info"]["features"] == [
        {"name": "id", "dtype": "string"},
        {"name": "text", "dtype": "string"},
        {"name": "source", "dtype": "string"},
        {"name": "gopher_quality_v1.score", "dtype": "float64"},
        {"name": "length_v1.words", "dtype": "int64"},
    ]
    assert [(s["name"], s["num_examples"]) for s in header["dataset_info"]["splits"]] == [
        ("train", 54),
        ("validation", 6),
    ]
    meta = pq.ParquetFile(run_dir / "export" / "parquet" / "train-00000-of-00001.parquet").metadata
    assert meta.row_group(0).column(1).compression == "ZSTD"


def test_parquet_shards_are_bounded_by_bytes(run_dir):
    # 256 bytes per shard: each shard closes at the row that reaches it (the 64-byte row overhead counts)
    run_phase(make_ctx(run_dir, {"formats": ["parquet"], "val_fraction": 0.0, "parquet_shard_bytes": 256}))
    files = sorted((run_dir / "export" / "parquet").glob("train-*.parquet"))
    sizes = [pq.read_table(f) for f in files]
    assert sum(t.num_rows for t in sizes) == 60
    assert not list((run_dir / "export" / "parquet").glob("validation-*"))
    for t in sizes[:-1]:
        text_bytes = sum(len(x.encode()) + 64 for x in t.column("text").to_pylist())
        last = len(t.column("text")[-1].as_py().encode()) + 64
        assert 256 <= text_bytes < 256 + last
