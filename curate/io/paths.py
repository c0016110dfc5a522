"""Where a path in a pipeline points: one rule for every file a pipeline names.

A pipeline names files in ``input.path``, ``target.path``, ``proxy.eval``, ``export.tokenizer`` and a
stage's ``model``, ``tokenizer``, ``seed_path`` or ``eval_paths``; ``curate export --tokenizer`` names
one on the command line. Each is resolved here, once, when the pipeline is loaded (the command line's
when it is parsed), and from then on used as resolved, by the runner, the workers and the phases alike:

* a URL of an object store (``s3://``, ``gs://``, ...: any fsspec protocol but the local ones) is
  taken as written;
* a ``file://`` (or ``local://``) URL is its local path;
* an absolute path is taken as written;
* a relative path is looked up, in order, in the working directory, the pipeline file's folder and the
  repository root (where ``models/`` and, beside a checkout, ``../shared`` sit); the first place where
  it names a file (a glob: where it matches one) wins, and the path is used as that absolute path.

A relative path that exists nowhere stays relative to the working directory (its absolute form is what
errors print), or, where the caller needs the file now (:func:`locate`), is an error that names the
key, the value as written and every place looked. :func:`curate.io.files.repo_path` is this rule
without a pipeline.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_PROTOCOLS = ("file", "local")
URL_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


class PathNotFound(FileNotFoundError):
    """A file a pipeline names that is in none of the places looked. ``key`` is the key that names it,
    ``value`` the path as written, ``looked`` the absolute paths tried, in order (not repeated in the
    message when the value was the one place)."""

    def __init__(self, key: str, value: str, looked: list[Path]) -> None:
        self.key, self.value, self.looked = key, value, looked
        where = "" if [str(p) for p in looked] == [value] else f" (looked for {', '.join(map(str, looked))})"
        super().__init__(f"{key}: {value} does not exist{where}")


def protocol(path: str | os.PathLike[str]) -> str | None:
    """The URL scheme of ``path`` (``s3``, ``gs``, ...), None for a local path (or ``file://``)."""
    m = URL_SCHEME.match(str(path))
    if not m or m.group(1).lower() in LOCAL_PROTOCOLS:
        return None
    return m.group(1).lower()


def is_remote(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an object store's URL (not a local path, nor a ``file://`` URL)."""
    return protocol(path) is not None


def local_form(path: str) -> str:
    """``path`` without a local URL scheme: ``file:///data/x.json`` is ``/data/x.json``."""
    m = URL_SCHEME.match(path)
    return path[m.end() :] if m and m.group(1).lower() in LOCAL_PROTOCOLS else path


def candidates(path: str, pipeline_path: str | None = None) -> list[Path]:
    """The absolute paths a local ``path`` may mean, in the order they are tried."""
    p = Path(os.path.expanduser(local_form(path)))
    if p.is_absolute():
        return [Path(os.path.normpath(p))]
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
    """The absolute local path ``path`` names (see the module docstring); an object store's URL comes
    back as ``Path(url)``, which a caller only prints: :func:`resolve_str` and :func:`locate` keep it as
    written."""
    if is_remote(path):
        return Path(path)
    cands = candidates(path, pipeline_path)
    return next((c for c in cands if _names_a_file(c)), cands[0])


def resolve_str(path: str, pipeline_path: str | None = None) -> str:
    """:func:`resolve` as a string; an object store's URL and an empty path unchanged."""
    return path if not path or is_remote(path) else str(resolve(path, pipeline_path))


def resolve_if_found(path: str, pipeline_path: str | None = None) -> str:
    """:func:`resolve_str` when the path names a file somewhere; else ``path`` as written (the stage that
    opens it reports it missing, with its own message)."""
    if not path or is_remote(path):
        return path
    found = resolve(path, pipeline_path)
    return str(found) if _names_a_file(found) else path


def locate(path: str, pipeline_path: str | None = None, *, key: str) -> str:
    """Where the file that ``key`` names as ``path`` is: an object store's URL as written, else the
    absolute path of the first place it exists. Raises :class:`PathNotFound` (naming ``key``, ``path``
    as written and every place looked) when it exists in none. An object is not looked up here: its
    reader reports one that is missing, naming the URL."""
    if is_remote(path):
        return path
    cands = candidates(path, pipeline_path)
    found = next((c for c in cands if _names_a_file(c)), None)
    if found is None:
        raise PathNotFound(key, path, cands)
    return str(found)
