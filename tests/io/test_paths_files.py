"""Every file a pipeline names resolves once, at load, by one rule (curate/io/paths.py), and the runner,
the token counter and the export then use that location: a tokenizer beside the pipeline, run from
elsewhere; a tokenizer by file:// and s3:// URL, at run start and at export; ``curate export --tokenizer``
beside the run's pipeline; and ``repo_path``, the same rule without a pipeline."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import curate
from curate.core.errors import ConfigError, PhaseError
from curate.export import cli
from curate.io import paths
from curate.io.files import repo_path
from curate.pipeline.config import load_pipeline
from curate.runtime.tokens import token_counter

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "tests" / "export" / "data" / "tiny_tokenizer.json"
TEXTS = ["the quick brown fox", "jumps over the lazy dog", "Zebras zig-zag.", "Line one\nLine two"]


def _tokens(texts: list[str]) -> int:
    """What the committed tokenizer counts in ``texts`` (no special tokens): the expected counts."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    return sum(len(tok.encode(t, add_special_tokens=False).ids) for t in texts)


def _project(folder: Path, tokenizer: str, formats: str = "[parquet, megatron]") -> Path:
    """``folder/p.yaml`` reading ``in.jsonl`` beside it, with ``export.tokenizer: <tokenizer>``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "in.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    pipe = folder / "p.yaml"
    pipe.write_text(
        "name: beside\ninput: {path: in.jsonl, format: jsonl}\nstages: []\n"
        f"export: {{tokenizer: '{tokenizer}', formats: {formats}, val_fraction: 0}}\n"
    )
    return pipe


def _check_run(manifest: dict, run: Path, tokenizer_at: str) -> None:
    """The run counted with the committed tokenizer and exported with it, from where it was resolved."""
    assert manifest["tokens_unit"] == "tokenizer:tiny_tokenizer.json"
    read = manifest["stages"][0]
    assert read["tokens_out"] == _tokens(TEXTS)
    export = json.loads((run / "export" / "manifest.json").read_text())
    assert export["tokenizer"]["origin"] == tokenizer_at
    assert export["request"]["options"]["tokenizer"] == tokenizer_at
    assert (run / "export" / "tokenizer.json").read_bytes() == TOKENIZER.read_bytes()
    assert export["splits"]["train"]["tokens"] == _tokens(TEXTS) + len(TEXTS)  # one EOS per document


def test_the_cli_finds_a_tokenizer_beside_the_pipeline_from_the_repository_root(tmp_path: Path) -> None:
    pipe = _project(tmp_path / "x", "tiny_tokenizer.json")
    shutil.copyfile(TOKENIZER, tmp_path / "x" / "tiny_tokenizer.json")
    args = [str(pipe), "--output", str(tmp_path / "run"), "--engine", "inline", "--no-phases", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "curate", "run", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "tokens counted as tokenizer:tiny_tokenizer.json" in done.stdout


def test_a_tokenizer_beside_the_pipeline_serves_the_count_and_the_export(tmp_path: Path, monkeypatch) -> None:
    pipe = _project(tmp_path / "x", "tiny_tokenizer.json")
    shutil.copyfile(TOKENIZER, tmp_path / "x" / "tiny_tokenizer.json")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    cfg = load_pipeline(pipe)
    at = str(tmp_path / "x" / "tiny_tokenizer.json")
    assert cfg.export.tokenizer == at  # resolved once, at load
    assert cfg.raw["export"]["tokenizer"] == "tiny_tokenizer.json"  # the manifest keeps it as written
    manifest = curate.run(pipe, output=tmp_path / "run", engine="inline")
    _check_run(manifest, tmp_path / "run", at)


def test_a_tokenizer_found_nowhere_is_refused_at_load_naming_the_key_the_value_and_the_places(
    tmp_path: Path, monkeypatch
) -> None:
    pipe = _project(tmp_path / "x", "tok.json")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(ConfigError) as e:
        load_pipeline(pipe)
    looked = [tmp_path / "elsewhere" / "tok.json", tmp_path / "x" / "tok.json", paths.REPO_ROOT / "tok.json"]
    assert str(e.value) == (
        f"{pipe}:4: export.tokenizer: tok.json does not exist (looked for {', '.join(map(str, looked))}); "
        "give a Hugging Face tokenizer.json (a path or a URL) or a name (gpt2, proxy)"
    )


def test_a_tokenizer_by_file_url_is_its_local_path(tmp_path: Path) -> None:
    shutil.copyfile(TOKENIZER, tmp_path / "tiny_tokenizer.json")
    at = str(tmp_path / "tiny_tokenizer.json")
    pipe = _project(tmp_path / "x", f"file://{at}")
    assert load_pipeline(pipe).export.tokenizer == at
    _check_run(curate.run(pipe, output=tmp_path / "run", engine="inline"), tmp_path / "run", at)


def test_a_tokenizer_in_a_bucket_serves_the_count_and_the_export(s3, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CURATE_CACHE", str(tmp_path / "cache"))  # the object's local copy
    s3.fs.put_file(str(TOKENIZER), f"{s3.bucket}/tok/tiny_tokenizer.json")
    url = f"s3://{s3.bucket}/tok/tiny_tokenizer.json"
    pipe = _project(tmp_path / "x", url)
    assert load_pipeline(pipe).export.tokenizer == url  # an object store's URL as written
    _check_run(curate.run(pipe, output=tmp_path / "run", engine="inline"), tmp_path / "run", url)


def test_a_missing_object_is_refused_at_run_start_naming_the_key(s3, tmp_path: Path) -> None:
    url = f"s3://{s3.bucket}/tok/nope.json"
    with pytest.raises(FileNotFoundError) as e:
        token_counter({"tokenizer": url})
    assert str(e.value) == (
        f"export.tokenizer: {url} does not exist (no such object); give a Hugging Face tokenizer.json or "
        "remove the key (tokens are then counted as whitespace words)"
    )
    pipe = _project(tmp_path / "x", url)
    with pytest.raises(FileNotFoundError, match=r"^export\.tokenizer: s3://.*/nope\.json does not exist"):
        curate.run(pipe, output=tmp_path / "run", engine="inline", phases=False)
    assert not (tmp_path / "run" / "kept").exists()  # refused before any stage ran


def test_export_tokenizer_on_the_command_line_is_found_beside_the_runs_pipeline(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """``--tokenizer``: the working directory first, then the folder of the pipeline the run recorded."""
    pipe = _project(tmp_path / "x", "gpt2", formats="[parquet]")
    curate.run(pipe, output=tmp_path / "run", engine="inline")
    beside = tmp_path / "x" / "tiny_tokenizer.json"
    shutil.copyfile(TOKENIZER, beside)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    parser = argparse.ArgumentParser(prog="curate")
    cli.register(parser.add_subparsers(dest="command", required=True))
    argv = ["export", str(tmp_path / "run"), "--format", "megatron", "--tokenizer", "tiny_tokenizer.json"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    export = json.loads((tmp_path / "run" / "export" / "manifest.json").read_text())
    assert export["tokenizer"]["origin"] == str(beside)
    shutil.copyfile(TOKENIZER, tmp_path / "elsewhere" / "tiny_tokenizer.json")  # the working directory wins
    args = parser.parse_args([*argv, "--overwrite"])
    assert args.func(args) == 0
    export = json.loads((tmp_path / "run" / "export" / "manifest.json").read_text())
    assert export["tokenizer"]["origin"] == str(tmp_path / "elsewhere" / "tiny_tokenizer.json")
    args = parser.parse_args([*argv[:-1], "nope.json", "--overwrite"])
    with pytest.raises(PhaseError) as e:
        args.func(args)
    looked = [
        tmp_path / "elsewhere" / "nope.json",
        tmp_path / "x" / "nope.json",
        paths.REPO_ROOT / "nope.json",
    ]
    assert str(e.value).startswith(
        f"export.tokenizer: nope.json does not exist (looked for {', '.join(map(str, looked))})"
    )


def test_repo_path_is_the_same_rule_without_a_pipeline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shipped = "models/proxy_tokenizer_python_docs.json"
    assert repo_path(shipped) == paths.REPO_ROOT / shipped  # from any directory
    assert repo_path(shipped).is_file()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "proxy_tokenizer_python_docs.json").write_text("{}")
    assert repo_path(shipped) == tmp_path / shipped  # the working directory first
    assert repo_path("nowhere.json") == tmp_path / "nowhere.json"  # found nowhere: the working directory's
    assert paths.locate("s3://b/k/tok.json", key="k") == "s3://b/k/tok.json"
    assert paths.locate(f"file://{tmp_path}/models/proxy_tokenizer_python_docs.json", key="k") == str(
        tmp_path / shipped
    )
