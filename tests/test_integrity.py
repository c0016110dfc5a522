"""Model folders (Hugging Face ``save_pretrained`` output) are checked against their sha256 manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.io.integrity import MANIFEST_NAME, ModelIntegrityError, main, verify_folder, write_folder_manifest


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    (d / "sub").mkdir(parents=True)
    (d / "config.json").write_text('{"a": 1}')
    (d / "model.safetensors").write_bytes(b"\x00weights" * 100)
    (d / "sub" / "tokenizer.json").write_text("{}")
    return d


def test_manifest_round_trip(tmp_path):
    d = _folder(tmp_path)
    path = write_folder_manifest(d)
    assert path == d / MANIFEST_NAME
    files = json.loads(path.read_text())["files"]
    assert sorted(files) == ["config.json", "model.safetensors", "sub/tokenizer.json"]
    assert verify_folder(d) == files
    assert main(["--check", str(d)]) == 0


def test_tampered_weight_file_is_refused_by_name(tmp_path):
    d = _folder(tmp_path)
    write_folder_manifest(d)
    with open(d / "model.safetensors", "ab") as f:
        f.write(b"\x01")
    with pytest.raises(ModelIntegrityError, match=r"model\.safetensors has sha256 .* refusing to load"):
        verify_folder(d)


def test_missing_listed_file_is_refused(tmp_path):
    d = _folder(tmp_path)
    write_folder_manifest(d)
    (d / "sub" / "tokenizer.json").unlink()
    with pytest.raises(ModelIntegrityError, match=r"sub/tokenizer\.json is listed .* but missing"):
        verify_folder(d)


@pytest.mark.parametrize("extra", ["model-00002.safetensors", "pytorch_model.bin", "sub/x.pt"])
def test_unlisted_weight_file_is_refused(tmp_path, extra):
    d = _folder(tmp_path)
    write_folder_manifest(d)
    (d / extra).write_bytes(b"evil")
    with pytest.raises(ModelIntegrityError, match=rf"{extra.replace('.', '[.]')} not listed"):
        verify_folder(d)


def test_unlisted_non_weight_file_is_allowed(tmp_path):
    d = _folder(tmp_path)
    write_folder_manifest(d)
    (d / "README.md").write_text("notes")
    verify_folder(d)


def test_manifest_entry_outside_the_folder_is_refused(tmp_path):
    d = _folder(tmp_path)
    (tmp_path / "outside.bin").write_bytes(b"x")
    (d / MANIFEST_NAME).write_text(json.dumps({"files": {"../outside.bin": "0" * 64}}))
    with pytest.raises(ModelIntegrityError, match="outside the folder"):
        verify_folder(d)


def test_missing_manifest_is_refused_with_how_to_fix(tmp_path):
    d = _folder(tmp_path)
    with pytest.raises(ModelIntegrityError, match=r"python -m curate\.io\.integrity .*verify: false"):
        verify_folder(d)
    assert main([str(d)]) == 0  # the CLI writes it
    verify_folder(d)


def test_stages_verify_unless_told_not_to(tmp_path):
    pytest.importorskip("torch")
    from curate.scorers.perplexity import Perplexity, PerplexityParams
    from curate.scorers.synthesize import Synthesize, SynthesizeParams
    from tests.scorers.tiny_lm import build_tiny_lm

    d = build_tiny_lm(tmp_path / "lm", steps=1)
    (d / MANIFEST_NAME).unlink()
    with pytest.raises(ModelIntegrityError, match=r"no curate-manifest.json"):
        Synthesize(SynthesizeParams(model=str(d), device="cpu")).setup()
    with pytest.raises(ModelIntegrityError, match=r"no curate-manifest.json"):
        Perplexity(PerplexityParams(model=str(d))).setup()
    Synthesize(SynthesizeParams(model=str(d), device="cpu", verify=False)).setup()  # explicit opt-out loads

    write_folder_manifest(d)
    with open(d / "model.safetensors", "ab") as f:
        f.write(b"\x00")
    with pytest.raises(ModelIntegrityError, match=r"model\.safetensors has sha256"):
        Synthesize(SynthesizeParams(model=str(d), device="cpu")).setup()
    with pytest.raises(ModelIntegrityError, match=r"model\.safetensors has sha256"):
        Perplexity(PerplexityParams(model=str(d))).setup()
