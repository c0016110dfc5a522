"""The export manifest (checksums, counts, provenance), resume, and the phase's validation errors."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from curate.core.errors import PhaseError
from curate.export.exporter import verify_export
from curate.export.phase import run_phase
from tests.export.export_fixtures import make_ctx

SECTION = {"shard_tokens": 300, "val_fraction": 0.1, "seed": 11}


def test_manifest_checksums_counts_and_provenance(run_dir, tiny_tokenizer):
    run_phase(make_ctx(run_dir, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
    export = run_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    on_disk = {str(p.relative_to(export)) for p in export.rglob("*") if p.is_file()} - {"manifest.json"}
    assert listed == on_disk
    for f in manifest["files"]:
        data = (export / f["path"]).read_bytes()
        assert f["bytes"] == len(data)
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert verify_export(export) == []
    tok = manifest["tokenizer"]
    assert tok["sha256"] == hashlib.sha256(tiny_tokenizer.read_bytes()).hexdigest()
    assert (tok["vocab_size"], tok["eos_token"], tok["eos_id"]) == (400, "<|endoftext|>", 0)
    assert manifest["pipeline"]["config"] == {"name": "test_run", "export": {"seed": 3}}
    assert (
        manifest["pipeline"]["run_manifest_sha256"]
        == hashlib.sha256((run_dir / "manifest.json").read_bytes()).hexdigest()
    )
    assert (manifest["seed"], manifest["val_fraction"]) == (11, 0.1)
    assert manifest["splits"]["train"]["docs"] == 54
    assert manifest["splits"]["validation"]["docs"] == 6
    for fmt, ext, itemsize in (("megatron", ".bin", 2), ("memmap", ".bin", 2)):
        bins = [f for f in manifest["files"] if f["format"] == fmt and f["path"].endswith(ext)]
        assert all(f["bytes"] == f["tokens"] * itemsize for f in bins)
        assert (
            sum(f["tokens"] for f in bins)
            == manifest["splits"]["train"]["tokens"] + manifest["splits"]["validation"]["tokens"]
        )
    assert manifest["request"]["inputs"][0]["path"] == "kept/part-00000.parquet"
    assert sum(i["rows"] for i in manifest["request"]["inputs"]) == 60


def test_verify_reports_a_corrupted_and_a_missing_file(run_dir, tiny_tokenizer):
    run_phase(make_ctx(run_dir, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
    export = run_dir / "export"
    bin_path = export / "megatron" / "train_00000.bin"
    data = bytearray(bin_path.read_bytes())
    data[0] ^= 0xFF
    bin_path.write_bytes(bytes(data))
    (export / "memmap" / "validation_00000.doc_idx.npy").unlink()
    assert verify_export(export) == [
        "megatron/train_00000.bin: sha256 differs from the manifest",
        "memmap/validation_00000.doc_idx.npy: missing",
    ]


def test_rerun_resumes_and_a_changed_option_rewrites(run_dir, tiny_tokenizer):
    section = {**SECTION, "tokenizer": str(tiny_tokenizer)}
    first = run_phase(make_ctx(run_dir, section))
    mtime = (run_dir / "export" / "manifest.json").stat().st_mtime_ns
    again = run_phase(make_ctx(run_dir, section))
    assert again == {**first, "resumed": True}
    assert (run_dir / "export" / "manifest.json").stat().st_mtime_ns == mtime
    changed = run_phase(make_ctx(run_dir, {**section, "seed": 12, "formats": ["memmap"]}))
    assert changed["resumed"] is False
    assert changed["formats"] == ["memmap"]
    assert not (run_dir / "export" / "megatron").exists()
    assert not (run_dir / "export" / "README.md").exists()
    assert verify_export(run_dir / "export") == []


def test_same_options_give_identical_files(tmp_path, tiny_tokenizer):
    from tests.export.export_fixtures import TEXTS, make_run

    digests = []
    for name in ("a", "b"):
        run = make_run(tmp_path / name, TEXTS)
        run_phase(make_ctx(run, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
        m = json.loads((run / "export" / "manifest.json").read_text())
        digests.append({f["path"]: f["sha256"] for f in m["files"]})
    assert digests[0] == digests[1]


def test_the_proxy_tokenizer_only_by_name_and_then_said(run_dir, tiny_tokenizer, capsys):
    (run_dir / "proxy").mkdir()
    shutil.copy(tiny_tokenizer, run_dir / "proxy" / "tokenizer.json")
    with pytest.raises(
        PhaseError, match=r"^export.tokenizer: formats memmap need the tokenizer your trainer uses"
    ):
        run_phase(make_ctx(run_dir, {"formats": ["memmap"]}))  # never picked without being named
    summary = run_phase(make_ctx(run_dir, {"formats": ["memmap"], "tokenizer": "proxy"}))
    tok = summary["tokenizer"]
    assert (tok["name"], tok["file"]) == ("proxy", "tokenizer.json")
    assert tok["origin"] == (
        "the run's proxy tokenizer (proxy/tokenizer.json), fitted for the proxy runs: not a trainer's"
    )
    assert tok["sha256"] == hashlib.sha256(tiny_tokenizer.read_bytes()).hexdigest()
    assert (run_dir / "export" / "tokenizer.json").read_bytes() == tiny_tokenizer.read_bytes()
    assert summary["docs"] == {"train": 59, "validation": 1}  # default val_fraction 0.01 of 60 -> 1


def test_missing_tokenizer_is_a_clear_error(run_dir, tmp_path):
    with pytest.raises(PhaseError) as err:
        run_phase(make_ctx(run_dir, {"formats": ["parquet", "megatron"]}))
    assert str(err.value) == (
        "export.tokenizer: formats megatron need the tokenizer your trainer uses: set export.tokenizer "
        "(--tokenizer on curate export) to a Hugging Face tokenizer.json or a name (gpt2: GPT-2's BPE, "
        "offline; proxy: this run's small proxy tokenizer), or export only parquet and/or hf_disk"
    )
    with pytest.raises(PhaseError) as err:
        run_phase(make_ctx(run_dir, {"formats": ["megatron"], "tokenizer": "proxy"}))
    assert str(err.value) == (
        f"export.tokenizer: proxy names the run's proxy tokenizer, and the run has none at "
        f"{run_dir / 'proxy' / 'tokenizer.json'} (no proxy phase ran); name another tokenizer (gpt2, or a "
        "tokenizer.json)"
    )
    missing = tmp_path / "nope.json"
    with pytest.raises(PhaseError) as err:
        run_phase(make_ctx(run_dir, {"formats": ["megatron"], "tokenizer": str(missing)}))
    assert str(err.value) == (
        f"export.tokenizer: {missing} does not exist; give a Hugging Face tokenizer.json (a path or a URL) "
        "or a name (gpt2, proxy)"
    )
    assert not (run_dir / "export").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"format": ["parquet"]},
            "export.format: unknown key; valid keys: columns, drop_columns, eos_token, formats, license, "
            "mixture, mixture_by, mixture_tokens, mixture_unconfirmed, parquet_shard_bytes, parquet_shard_rows, "
            "pretty_name, "
            "seed, shard_tokens, tokenize_rows, tokenizer, val_fraction",
        ),
        (
            {"formats": ["parquet", "arrow"]},
            "export.formats[1]: expected one of 'parquet', 'megatron', 'memmap', 'hf_disk', got 'arrow'",
        ),
        ({"val_fraction": 1.0}, "export.val_fraction: expected a value in [0, 1), got 1.0"),
        ({"shard_tokens": 0}, "export.shard_tokens: expected a value >= 1, got 0"),
        ({"seed": "x"}, "export.seed: expected int, got str 'x'"),
        ({"columns": ["id", ""]}, "export.columns[1]: expected a column name or glob, got ''"),
    ],
)
def test_section_validation(run_dir, section, message):
    with pytest.raises(PhaseError) as err:
        run_phase(make_ctx(run_dir, section))
    assert str(err.value) == message


def test_eos_token_must_exist(run_dir, tiny_tokenizer):
    with pytest.raises(PhaseError, match=r"has no EOS token among </s>; name the one to append"):
        run_phase(make_ctx(run_dir, {"tokenizer": str(tiny_tokenizer), "eos_token": "</s>"}))


def test_no_kept_files_is_an_error(tmp_path):
    from tests.export.export_fixtures import make_run

    run = make_run(tmp_path / "run", ["a"], parts=1)
    for f in (run / "kept").glob("*"):
        f.unlink()
    with pytest.raises(PhaseError, match=r"no kept documents: .*kept/part-\*\.parquet matched nothing"):
        run_phase(make_ctx(run, {"formats": ["parquet"]}))


@pytest.mark.ray
def test_ray_engine_writes_the_same_files(run_dir, tiny_tokenizer, ray_engine, tmp_path):
    from tests.export.export_fixtures import TEXTS, make_run

    section = {**SECTION, "tokenizer": str(tiny_tokenizer), "tokenize_rows": 10}
    run_phase(make_ctx(run_dir, section, engine=ray_engine))
    inline = make_run(tmp_path / "inline", TEXTS)
    run_phase(make_ctx(inline, section))
    files = [json.loads((d / "export" / "manifest.json").read_text())["files"] for d in (run_dir, inline)]
    assert files[0] == files[1]
    assert len(files[0]) > 4
    assert np.array_equal(
        np.load(run_dir / "export" / "memmap" / "train_00000.doc_idx.npy"),
        np.load(inline / "export" / "memmap" / "train_00000.doc_idx.npy"),
    )
