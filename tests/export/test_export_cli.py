"""The ``export`` verb, driven through argparse exactly as the main CLI will register it."""

from __future__ import annotations

import argparse
import json

import pytest

from curate.export import cli


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate")
    cli.register(p.add_subparsers(dest="command", required=True))
    return p


def test_help_shows_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["export", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "curate export runs/demo --format parquet --format megatron --format memmap" in out
    assert "--shard-tokens" in out
    assert "--val-fraction" in out
    assert "--engine {inline,ray}" in out


def test_cli_exports_with_flags_over_the_run_config(run_dir, tiny_tokenizer, capsys):
    args = parser().parse_args(
        [
            "export",
            str(run_dir),
            "--format",
            "memmap",
            "--format",
            "parquet",
            "--tokenizer",
            str(tiny_tokenizer),
            "--shard-tokens",
            "500",
            "--val-fraction",
            "0.5",
        ]
    )
    assert args.func(args) == 0
    manifest = json.loads((run_dir / "export" / "manifest.json").read_text())
    options = manifest["request"]["options"]
    # seed 3 comes from the run's own `export:` section; the flags override the rest
    assert (options["formats"], options["seed"], options["shard_tokens"], options["val_fraction"]) == (
        ["memmap", "parquet"],
        3,
        500,
        0.5,
    )
    assert manifest["splits"]["train"]["docs"] == 30 == manifest["splits"]["validation"]["docs"]
    out = capsys.readouterr().out
    assert out.startswith("export written in ")
    assert f"{run_dir / 'export'}\n" in out
    assert "  train              30 docs" in out
    assert args.func(args) == 0
    assert capsys.readouterr().out.startswith(f"export already complete: {run_dir / 'export'}")


def test_cli_reports_errors_with_exit_code_2(run_dir, tmp_path, capsys):
    from curate.cli import main

    assert main(["export", str(run_dir), "--format", "megatron"]) == 2
    err = capsys.readouterr().err
    # one line, before any work: no export folder, no proxy tokenizer picked silently
    assert err == (
        "curate export: error: export.tokenizer: formats megatron need the tokenizer your trainer uses: set "
        "export.tokenizer (--tokenizer on curate export) to a Hugging Face tokenizer.json or a name "
        "(gpt2: GPT-2's BPE, offline; proxy: this run's small proxy tokenizer), or export only parquet "
        "and/or hf_disk\n"
    )
    assert not (run_dir / "export").exists()
    assert main(["export", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"curate export: error: {tmp_path / 'nope'}: no such run directory\n"


def test_unknown_format_is_rejected_by_argparse(run_dir, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["export", str(run_dir), "--format", "arrow"])
    assert exit_.value.code == 2
    assert "invalid choice: 'arrow'" in capsys.readouterr().err


def _export(*argv: str) -> int:
    from curate.cli import main

    return main(["export", *argv])


def test_a_second_export_adds_its_format_and_overwrite_replaces(run_dir, tiny_tokenizer, capsys):
    export = run_dir / "export"
    assert _export(str(run_dir), "--format", "megatron", "--tokenizer", str(tiny_tokenizer)) == 0
    megatron_files = sorted(p.name for p in (export / "megatron").iterdir())
    assert megatron_files == [
        "train_00000.bin",
        "train_00000.idx",
        "validation_00000.bin",
        "validation_00000.idx",
    ]
    capsys.readouterr()
    # No --tokenizer again: the previous export's options carry over, and megatron/ stays.
    assert _export(str(run_dir), "--format", "parquet") == 0
    assert "  formats    megatron, parquet\n" in capsys.readouterr().out
    assert sorted(p.name for p in (export / "megatron").iterdir()) == megatron_files
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["request"]["options"]["formats"] == ["megatron", "parquet"]
    assert {f["format"] for f in manifest["files"]} == {"megatron", "parquet", "card", "tokenizer"}
    assert _export(str(run_dir), "--format", "parquet", "--overwrite") == 0
    out = capsys.readouterr().out
    assert not (export / "megatron").exists()
    # A Parquet-only export has no tokens: it prints documents only.
    assert "  train              59 docs\n" in out
    assert "tokens" not in out


def test_columns_choose_what_the_parquet_export_carries(run_dir, capsys):
    import pyarrow.parquet as pq

    def exported_columns() -> list[str]:
        return pq.read_schema(sorted((run_dir / "export" / "parquet").glob("train-*.parquet"))[0]).names

    card = run_dir / "export" / "README.md"
    assert _export(str(run_dir), "--format", "parquet", "--columns", "id,text") == 0
    assert exported_columns() == ["id", "text"]
    # the card lists the columns the export carries, never one --columns left out
    assert "Columns: `id`, `text` (no score columns).\n" in card.read_text()
    assert (
        _export(str(run_dir), "--format", "parquet", "--drop-columns", "*.score,source", "--overwrite") == 0
    )
    assert exported_columns() == ["id", "text", "length_v1.words"]
    assert (
        "Columns: `id`, `text` and the scores kept (`<stage>.<field>`): `length_v1.words`.\n"
        in card.read_text()
    )
    assert "gopher_quality_v1.score" not in card.read_text()
    capsys.readouterr()
    assert _export(str(run_dir), "--format", "parquet", "--columns", "id,words", "--overwrite") == 2
    assert capsys.readouterr().err == (
        "curate export: error: no column matches 'words'; columns: id, text, source, "
        "gopher_quality_v1.score, length_v1.words\n"
    )
    assert _export(str(run_dir), "--format", "parquet", "--columns", "id,source", "--overwrite") == 2
    assert "the export needs column(s) text; keep them in --columns" in capsys.readouterr().err
