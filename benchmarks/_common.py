"""Shared benchmark helpers: peak memory of a process tree, machine description, the commit a figure
carries, corpus paths."""

from __future__ import annotations

import os
import platform
import subprocess
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


def _children(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def tree_rss(root: int | None = None) -> tuple[int, dict[str, int]]:
    """Summed VmRSS of a process and all its descendants (Ray's raylet and workers included), and the
    largest RSS per process name."""
    root = root or os.getpid()
    total, stack, seen, per = 0, [root], set(), {}
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            name, rss = "?", 0
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Name:"):
                        name = line.split()[1]
                    elif line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
        total += rss
        per[name] = max(per.get(name, 0), rss)
        stack += _children(pid)
    return total, per


def tree_rss_bytes(root: int | None = None) -> int:
    """Resident memory of a process and all its descendants."""
    return tree_rss(root)[0]


class PeakMemory:
    """Samples the process tree's summed RSS every ``interval`` s; ``peak`` is the maximum seen and
    ``per_process`` the largest RSS seen per process name."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak = 0
        self.per_process: dict[str, int] = {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        total, per = tree_rss()
        self.peak = max(self.peak, total)
        for k, v in per.items():
            self.per_process[k] = max(self.per_process.get(k, 0), v)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (x86 ``model name``; ARM ``Model`` or ``Hardware``),
    else ``platform.processor()``, else ``unknown cpu``."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = ""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in cpuinfo.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or "unknown cpu"


def machine() -> str:
    cpu = cpu_model()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}"


def commit(root: Path = ROOT) -> str:
    """The short hash of ``root``'s checked-out commit, which every committed figure carries; ``unknown``
    outside a git checkout (or without git). Read from ``root``, not the working directory, so that a
    study run from a worktree of a fixed commit records that commit."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
