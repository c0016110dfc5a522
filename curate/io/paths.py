"""Where a relative path in a pipeline points: one rule for every file a pipeline names.

A relative path (``input.path``, ``target.path``, a ``proxy.eval`` file, and a stage's ``model``,
``tokenizer``, ``seed_path`` or ``eval_paths`` when it names a file) is looked up, in order, in the
working directory, the pipeline file's folder and the repository root (where ``../shared`` sits beside
a checkout); the first place where it names a file (a glob: where it matches one) wins, and from then
on the path is used as that absolute path, so errors print where it was looked for. A path that exists
nowhere stays relative to the working directory (its absolute form is what errors print). Absolute
paths and URLs are taken as written.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from curate.io.storage import is_remote

REPO_ROOT = Path(__file__).resolve().parents[2]


def candidates(path: str, pipeline_path: str | None = None) -> list[Path]:
    """The absolute paths a relative ``path`` may mean, in the order they are tried."""
    p = Path(path)
    if p.is_absolute():
        return [p]
    out = [Path.cwd() / p]
    if pipeline_path and pipeline_path != "<string>":
        out.append(Path(pipeline_path).resolve().parent / p)
    out.append(REPO_ROOT / p)
    return list(dict.fromkeys(Path(os.path.normpath(c)) for c in out))


def _names_a_file(p: Path) -> bool:
    s = str(p)
    if any(ch in s for ch in "*?["):
        return any(os.path.isfile(f) for f in glob.iglob(s, recursive=True))
    return p.exists()


def resolve(path: str, pipeline_path: str | None = None) -> Path:
    """The absolute path ``path`` names (see the module docstring); a URL comes back unchanged."""
    if is_remote(path):
        return Path(path)
    cands = candidates(path, pipeline_path)
    return next((c for c in cands if _names_a_file(c)), cands[0])


def resolve_str(path: str, pipeline_path: str | None = None) -> str:
    """:func:`resolve` as a string; URLs and empty paths unchanged."""
    return path if not path or is_remote(path) else str(resolve(path, pipeline_path))


def resolve_if_found(path: str, pipeline_path: str | None = None) -> str:
    """:func:`resolve_str` when the path names a file somewhere; else ``path`` as written (the stage that
    opens it reports it missing, with its own message)."""
    if not path or is_remote(path):
        return path
    found = resolve(path, pipeline_path)
    return str(found) if _names_a_file(found) else path
