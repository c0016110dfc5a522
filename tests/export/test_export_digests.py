"""Every file an export writes, byte for byte: the sha256 of each file of two small exports (all four
formats with a token export; parquet and hf_disk at mixture weights without one) against digests
committed in ``tests/export/data/export_digests.json``.

The digests were recorded from the writers as they stood before the formats moved behind one interface
(:mod:`curate.export.formats`), so the move is shown to change no byte; from then on they hold every
writer to its bytes. They depend on the libraries that write the files (pyarrow, datasets, numpy;
pinned in requirements.lock): the fixture records their versions, and a mismatch says so first.
``python -m tests.export.test_export_digests`` (from the repository root) re-records the fixture (only after a deliberate change
of an output or of those libraries: say which in the commit).

The tokenizer is a committed file (``data/tiny_tokenizer.json``), not one trained here, so a change of
the tokenizers library's training cannot move the digests. The two files that name the test's temporary
folder (``README.md``, ``manifest.json``) are hashed with it written as ``<tmp>``, and the manifest
without its timings (``seconds``, ``tokens_per_second``) and without the card's size and sha256 (which
count the folder's name; the card's own digest stands for them)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from curate.export.phase import run_phase
from tests.export.export_fixtures import TEXTS, make_ctx, make_run

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "export_digests.json"
TOKENIZER = DATA / "tiny_tokenizer.json"
LIBRARIES = ("pyarrow", "datasets", "numpy", "tokenizers")
TIMINGS = ("seconds", "tokens_per_second")

# name -> the export: section (a tokenizer named TOKENIZER is replaced by the copy's absolute path)
CASES: dict[str, dict[str, Any]] = {
    "tokens": {
        "formats": ["parquet", "megatron", "memmap", "hf_disk"],
        "tokenizer": "TOKENIZER",
        "val_fraction": 0.2,
        "shard_tokens": 300,
        "parquet_shard_rows": 20,
    },
    "text_mixture": {
        "formats": ["parquet", "hf_disk"],
        "val_fraction": 0.1,
        "mixture": {"web": 0.75, "books": 0.25},
        "parquet_shard_rows": 25,
    },
}


def export_digests(tmp: Path, case: str) -> dict[str, str]:
    """Export ``TEXTS`` as ``CASES[case]`` under ``tmp``; every file's sha256 (normalized as the module
    docstring says) by its path under ``export/``."""
    tok = tmp / "tok.json"
    shutil.copyfile(TOKENIZER, tok)
    run = make_run(tmp / "run", TEXTS)
    section = {k: (str(tok) if v == "TOKENIZER" else v) for k, v in CASES[case].items()}
    run_phase(make_ctx(run, section))
    out = {}
    for p in sorted((run / "export").rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(run / "export").as_posix()
        data = p.read_bytes()
        if rel in ("README.md", "manifest.json"):
            text = data.decode("utf-8").replace(str(tmp), "<tmp>")
            if rel == "manifest.json":
                manifest = json.loads(text)
                for key in TIMINGS:
                    manifest.pop(key)
                for entry in manifest["files"]:
                    if entry["path"] == "README.md":  # its size and sha256 count the folder's name
                        del entry["bytes"], entry["sha256"]
                text = json.dumps(manifest, indent=2, sort_keys=True)
            data = text.encode("utf-8")
        out[rel] = hashlib.sha256(data).hexdigest()
    return out


def versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in LIBRARIES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_file_of_an_export_has_its_recorded_bytes(case: str, tmp_path: Path) -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert versions() == recorded["versions"], (
        "the libraries that write export files differ from those the digests were recorded with; "
        "if only they changed, re-record: python -m tests.export.test_export_digests"
    )
    assert export_digests(tmp_path, case) == recorded["cases"][case]


def record(tmp: Path) -> None:
    """Write FIXTURE from the current writers."""
    cases = {}
    for case in sorted(CASES):
        (tmp / case).mkdir()
        cases[case] = export_digests(tmp / case, case)
    FIXTURE.write_text(json.dumps({"versions": versions(), "cases": cases}, indent=1) + "\n")
    print(f"{FIXTURE}: {sum(map(len, cases.values()))} files in {len(cases)} exports")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        record(Path(d))
