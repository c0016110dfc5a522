"""sha256 manifests for model *folders* (Hugging Face ``save_pretrained`` output) checked before loading.

A folder's manifest is ``FOLDER/curate-manifest.json`` = ``{"files": {relative path: sha256}}`` over
every file in the folder (recursively) except the manifest itself. :func:`verify_folder` refuses a
folder whose listed files are missing or changed, or that holds weight files the manifest does not
list (a swapped-in ``pytorch_model.bin`` would otherwise be picked up by ``from_pretrained``).

The proxy trainer writes the manifest when it saves a model. For any other folder, create it once
you trust the files::

    python -m curate.io.integrity FOLDER            # write FOLDER/curate-manifest.json
    python -m curate.io.integrity --check FOLDER    # verify it

Limits: the check runs just before loading, so a file replaced between the check and the load is
not caught; files outside the folder (e.g. a perplexity tokenizer.json found above it) are not covered.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from curate.io.files import PathEscapeError, atomic_write_json, confined, sha256_file


class ModelIntegrityError(RuntimeError):
    """A model file whose sha256 does not match its manifest (or that has no manifest to check)."""


MANIFEST_NAME = "curate-manifest.json"
# Files a loader may deserialize as weights; an unlisted one is refused (pickle formats run code).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".pkl", ".h5", ".msgpack", ".gguf")

__all__ = ["MANIFEST_NAME", "ModelIntegrityError", "verify_folder", "write_folder_manifest"]


def _files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_NAME
    )


def write_folder_manifest(folder: str | Path) -> Path:
    """Write ``folder/curate-manifest.json`` listing the sha256 of every file in ``folder``; returns its path."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    manifest = {"files": {rel: sha256_file(str(folder / rel)) for rel in _files(folder)}}
    return atomic_write_json(folder / MANIFEST_NAME, manifest, indent=1, sort_keys=True)


def verify_folder(folder: str | Path) -> dict[str, str]:
    """Check ``folder`` against its manifest; return ``{relative path: sha256}``.

    Raises :class:`ModelIntegrityError` (naming the file) when the manifest is missing or unreadable, a
    listed file is missing or its sha256 differs, or a weight file (``WEIGHT_SUFFIXES``) is not listed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {folder} not found")
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise ModelIntegrityError(
            f"{folder}: no {MANIFEST_NAME} to verify the model against; if you trust the files, create it "
            f"with `python -m curate.io.integrity {folder}` (curate.io.integrity.write_folder_manifest), or set "
            f"the stage param `verify: false` to load it unchecked"
        )
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))["files"]
        if not isinstance(listed, dict):
            raise TypeError("files is not a mapping")
    except (ValueError, KeyError, TypeError) as e:
        raise ModelIntegrityError(f"{path}: unreadable manifest ({e}); refusing to load") from None
    for rel, expected in sorted(listed.items()):
        try:
            target = confined(folder, rel, resolve=True)
        except PathEscapeError:  # absolute, '..', or a link out of the folder
            raise ModelIntegrityError(
                f"{path}: entry {rel!r} points outside the folder; refusing to load"
            ) from None
        if not target.is_file():
            raise ModelIntegrityError(
                f"{folder}: {rel} is listed in {MANIFEST_NAME} but missing; refusing to load"
            )
        actual = sha256_file(str(target))
        if actual != expected:
            raise ModelIntegrityError(
                f"{folder}: {rel} has sha256 {actual}, the manifest expects {expected}; refusing to load "
                f"(restore the file, or rewrite the manifest only if you trust the change)"
            )
    unlisted = [rel for rel in _files(folder) if rel not in listed and rel.lower().endswith(WEIGHT_SUFFIXES)]
    if unlisted:
        raise ModelIntegrityError(
            f"{folder}: weight file(s) {', '.join(unlisted)} not listed in {MANIFEST_NAME}; refusing to load"
        )
    return dict(listed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m curate.io.integrity",
        description="Write (or --check) a model folder's sha256 manifest.",
    )
    ap.add_argument("folders", nargs="+", metavar="FOLDER")
    ap.add_argument("--check", action="store_true", help="verify instead of writing")
    args = ap.parse_args(argv)
    rc = 0
    for folder in args.folders:
        try:
            if args.check:
                n = len(verify_folder(folder))
                print(f"{folder}: ok ({n} files)")
            else:
                print(write_folder_manifest(folder))
        except (ModelIntegrityError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
