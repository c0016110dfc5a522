"""Local-file mechanics in one place: atomic writes, checksums, and paths kept inside a root.

:mod:`curate.io.storage` chooses between a local path and an object store (fsspec); this module is the
local layer under it. Every file ``curate`` writes on a local disk goes through :func:`atomic_path` (or
one of the ``atomic_write_*`` helpers built on it): the bytes go to a temporary file beside the target,
which is renamed over the target only once it is complete. A crashed or retried worker therefore leaves
either the old file or the new one, never half of one, and at most a temporary file whose name holds
``.tmp`` (:class:`curate.io.stage.Mirror` never uploads those).

Paths that come from data (a manifest's file list, a key built from a document) are joined with
:func:`confined`, which refuses absolute paths and ``..`` parts, so they cannot name a file outside the
folder they belong to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from curate.io.paths import resolve

__all__ = [
    "PathEscapeError",
    "atomic_path",
    "atomic_save_npy",
    "atomic_save_npz",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "confined",
    "escapes",
    "restore_swapped",
    "sha256_file",
    "staged_dir",
    "temp_path",
]

CHUNK = 1 << 20  # bytes read at a time when hashing


class PathEscapeError(ValueError):
    """A relative path that would leave its root folder (absolute, or climbing out with ``..``)."""


def temp_path(path: str | os.PathLike[str]) -> Path:
    """The temporary name :func:`atomic_path` writes ``path`` under: beside it (same folder, so the rename
    stays on one filesystem), unique per process and thread, and containing ``.tmp``."""
    target = Path(path)
    return target.with_name(f"{target.name}.tmp{os.getpid()}-{threading.get_ident()}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``, on failure remove it.

    For writers that want a file name rather than bytes (``pq.write_table``, ``torch.save``,
    ``ndarray.tofile``, a fastText model's ``save_model``)::

        with atomic_path(out / "part-00000.parquet") as tmp:
            pq.write_table(table, tmp)

    Whatever the block raises propagates after the temporary file (or folder) is removed, and ``path``
    keeps its old content. The parent folder must exist. Note that ``np.save``/``np.savez`` add a suffix
    to a name lacking one: hand them an open file instead (``open(tmp, "wb")``).
    """
    target = Path(path)
    tmp = temp_path(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _aside(target: Path) -> Path:
    """Where :func:`staged_dir` moves a folder's old content during a swap (a hidden name holding ``.tmp``)."""
    return target.with_name(f".{target.name}.old.tmp{os.getpid()}")


def restore_swapped(path: str | os.PathLike[str]) -> None:
    """Finish or undo a folder swap of :func:`staged_dir` that a killed process left midway: when
    ``path`` is missing and its old content lies aside (``.<name>.old.tmp<pid>``), put it back; when
    ``path`` is there, remove what lies aside (the swap had completed). Staging folders of processes that
    are gone (``.<name>.tmp<pid>-<thread>``) are removed too."""
    target = Path(path)
    if not target.parent.is_dir():
        return
    for old in sorted(target.parent.glob(f".{target.name}.old.tmp*")):
        if not target.exists():
            os.replace(old, target)
        else:
            _remove(old)
    for stage in target.parent.glob(f".{target.name}.tmp*"):
        pid = stage.name.rpartition(".tmp")[2].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            _remove(stage)


@contextmanager
def staged_dir(path: str | os.PathLike[str], *, keep: Callable[[str], bool] | None = None) -> Iterator[Path]:
    """Yield an empty folder beside ``path`` to write a whole new version of the folder ``path`` into;
    when the block completes, it *becomes* ``path``; when the block raises (or the process is killed),
    ``path`` is left exactly as it was and the staging folder is removed.

    The swap is two renames on one filesystem: the old folder aside, the new one in; then the old is
    removed. Entries of the old folder for which ``keep(name)`` is true (files another writer owns) are
    moved into the new one first, unless it wrote an entry of that name. A process killed between the
    two renames leaves the old content aside, which :func:`restore_swapped` (called here first, and by
    readers that care) puts back. This is how a verb that rewrites a run's outputs (``curate export``,
    ``curate select --output``) never destroys the finished output it replaces::

        with staged_dir(run_dir / "export") as out:
            write_everything_into(out)      # a failure here leaves run_dir/export byte-identical
    """
    target = Path(path)
    restore_swapped(target)
    stage = target.with_name(f".{target.name}.tmp{os.getpid()}-{threading.get_ident()}")
    _remove(stage)
    stage.mkdir(parents=True)
    try:
        yield stage
    except BaseException:
        _remove(stage)
        raise
    old = None
    if target.exists():
        old = _aside(target)
        _remove(old)
        os.replace(target, old)
    os.replace(stage, target)
    if old is not None:
        if keep is not None:
            for entry in sorted(old.iterdir()):
                if keep(entry.name) and not (target / entry.name).exists():
                    os.replace(entry, target / entry.name)
        _remove(old)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path`` as a :class:`~pathlib.Path`."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (no newline translation); returns ``path``."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(
    path: str | os.PathLike[str],
    obj: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    allow_nan: bool = True,
    end: str = "",
) -> Path:
    """Write ``json.dumps(obj, ...) + end`` to ``path`` atomically; returns ``path``.

    The keywords are :func:`json.dumps`'s, so a caller keeps its file's exact bytes; ``end`` is what
    follows the document (``"\\n"`` for a file that ends in a newline).
    """
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, default=default, allow_nan=allow_nan)
    return atomic_write_text(path, text + end)


def atomic_save_npy(path: str | os.PathLike[str], array: Any) -> Path:
    """``np.save(path, array)`` atomically (to the exact name: no ``.npy`` is appended); returns ``path``."""
    import numpy as np

    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, array)
    return Path(path)


def atomic_save_npz(path: str | os.PathLike[str], **arrays: Any) -> Path:
    """``np.savez(path, **arrays)`` atomically (to the exact name: no ``.npz`` is appended); returns ``path``."""
    import numpy as np

    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)
    return Path(path)


def repo_path(path: str | os.PathLike[str]) -> Path:
    """The absolute path ``path`` names by the one rule for paths (:func:`curate.io.paths.resolve`,
    with no pipeline): absolute as given, else the working directory first, then the checkout's root,
    where ``models/`` lives, so ``models/quality_fasttext.ftz`` works from any directory. The path may
    not exist (the caller says what is missing)."""
    return resolve(os.fspath(path))


def sha256_file(path: str | os.PathLike[str], *, chunk: int = CHUNK) -> str:
    """Hex sha256 of the bytes of the file at ``path``, read ``chunk`` bytes at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def escapes(relpath: str | os.PathLike[str]) -> bool:
    """Whether the relative path ``relpath`` would leave the folder it is joined to: it is absolute (a
    leading ``/`` or ``\\``), or one of its parts is ``..``; an empty path also counts (it names the
    folder itself, not a file in it). Lexical only: nothing is resolved."""
    s = os.fspath(relpath).replace("\\", "/")
    if not s or s.startswith("/"):
        return True
    return ".." in PurePosixPath(s).parts


def confined(root: str | os.PathLike[str], relpath: str | os.PathLike[str], *, resolve: bool = False) -> Path:
    """``root / relpath``, refusing a ``relpath`` that would leave ``root``.

    Raises :class:`PathEscapeError` naming both when ``relpath`` is empty or absolute or has a ``..``
    part. With ``resolve``, symbolic links are followed too (the result is the resolved path, and a link
    pointing outside ``root`` is refused): for files about to be trusted, such as a model's weights.
    """
    if escapes(relpath):
        raise PathEscapeError(
            f"{os.fspath(relpath)!r}: outside {os.fspath(root)} "
            "(the path must be relative, without '..' parts)"
        )
    path = Path(root, relpath)
    if resolve:
        base, path = Path(root).resolve(), path.resolve()
        if base != path and base not in path.parents:
            raise PathEscapeError(f"{os.fspath(relpath)!r}: resolves outside {os.fspath(root)} (a link)")
    return path
