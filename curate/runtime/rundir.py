"""Emptying a run directory for a fresh start (``curate run --restart``, or a rerun after a run that
finished no unit of work), local or in object storage."""

from __future__ import annotations

from curate.io.runlock import LOCK
from curate.io.storage import Location


def clear_run_dir(out: Location, keep: tuple[str, ...] = ()) -> None:
    """Remove every file under ``out`` except the run lock (held by the run that clears) and ``keep``
    (paths relative to ``out``); local directories left empty go too. ``_work/`` is made again."""
    spared = {f"_work/{LOCK}", f"_work/{LOCK}.break", *keep}
    for rel, _, _ in out.walk_files():
        if rel not in spared:
            out.child(*rel.split("/")).remove()
    if not out.remote:
        for d in sorted(out.local.rglob("*"), key=lambda p: -len(p.parts)):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
    out.child("_work").makedirs()
