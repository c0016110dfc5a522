"""One run per run directory: a lock file in ``_work/`` that a second concurrent run is refused by.

A lock is a small JSON record: an owner id (random per run), the host, the process id and its start time,
and a heartbeat time a background thread renews every :data:`HEARTBEAT_S` seconds.

* A local directory takes the lock by creating the file with ``O_EXCL`` (one creator wins).
* An object store has no exclusive create: the run writes its record, waits :data:`SETTLE_S`, and reads it
  back; whoever's record is there then holds the lock (a contender that wrote in between sees another
  owner and gives up).

A lock is *stale* when its process is gone (same host: no such pid, or a pid of a later process) or its
heartbeat is older than :data:`STALE_S` (another host, or a store). A stale lock is taken over: locally
under a second ``O_EXCL`` file (``lock.json.break``) so that two runs finding the same stale lock do not
both take it, re-checking that the lock is still the stale one before it is replaced.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from curate.io.storage import Location, StorageError

LOCK = "lock.json"
HEARTBEAT_S = 30.0
STALE_S = float(os.environ.get("CURATE_LOCK_STALE_S", 300))
SETTLE_S = 1.0


class RunLockedError(RuntimeError):
    """Another run holds the run directory."""


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from /proc), or None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (killed, not yet reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def is_stale(rec: dict[str, Any], now: float | None = None) -> bool:
    """Whether the lock ``rec`` belongs to no running process (see the module docstring)."""
    now = time.time() if now is None else now
    if rec.get("host") == socket.gethostname() and isinstance(rec.get("pid"), int):
        pid = rec["pid"]
        if not _alive(pid):
            return True
        start = _proc_start(pid)
        if start is not None and rec.get("proc_start") not in (None, start):
            return True  # the pid now names a later process
        if start is not None:
            return False
    return now - float(rec.get("heartbeat", 0)) > STALE_S


def describe(rec: dict[str, Any]) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(rec.get("start", 0))))
    return f"pid {rec.get('pid')} on {rec.get('host')}, started {started}"


class RunLock:
    """The lock of one run directory; :meth:`acquire` it, :meth:`release` it (also a context manager)."""

    def __init__(self, run_dir: str | os.PathLike[str] | Location) -> None:
        self.run = Location.of(run_dir)
        self.loc = self.run.child("_work", LOCK)
        now = time.time()
        pid = os.getpid()
        self.rec: dict[str, Any] = {
            "owner": uuid.uuid4().hex,
            "host": socket.gethostname(),
            "pid": pid,
            "proc_start": _proc_start(pid),
            "start": now,
            "heartbeat": now,
        }
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _refuse(self, rec: dict[str, Any]) -> RunLockedError:
        return RunLockedError(
            f"{self.run} is in use by another run ({describe(rec)}); wait for it to finish or choose "
            f"another --output (a lock left by a killed run is taken over once its process is gone or "
            f"{STALE_S:.0f} s after its last heartbeat)"
        )

    def acquire(self) -> None:
        # A folder made only to hold the lock goes again at release when nothing else was written there.
        self._made = not self.run.remote and not self.run.local.exists()
        self.run.child("_work").makedirs()
        if self.run.remote:
            self._acquire_remote()
        else:
            self._acquire_local()
        self._beat = threading.Thread(target=self._heartbeat, name="curate-run-lock", daemon=True)
        self._beat.start()

    def _read(self) -> dict[str, Any] | None:
        try:
            if self.run.remote and not self.loc.exists():
                return None
            rec = json.loads(self.loc.read_bytes())
        except (FileNotFoundError, ValueError):
            return None  # gone, or a record half written by a creator just now
        return rec if isinstance(rec, dict) else None

    def _acquire_local(self) -> None:
        path = self.loc.local
        for _ in range(3):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                rec = self._read()
                if rec is None:
                    time.sleep(0.2)  # the creator is writing its record
                    rec = self._read()
                if rec is None or not is_stale(rec):
                    raise self._refuse(rec or {}) from None
                self._break_local(rec)
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(self.rec, f)
            return
        raise self._refuse(self._read() or {})

    def _break_local(self, stale: dict[str, Any]) -> None:
        """Remove the stale lock ``stale``, unless another run got there first."""
        brk = self.loc.local.with_name(LOCK + ".break")
        try:
            fd = os.open(brk, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if time.time() - brk.stat().st_mtime > 60:  # a breaker that died mid-way
                brk.unlink(missing_ok=True)
            return
        os.close(fd)
        try:
            if (self._read() or {}).get("owner") == stale.get("owner"):
                self.loc.local.unlink(missing_ok=True)
        finally:
            brk.unlink(missing_ok=True)

    def _acquire_remote(self) -> None:
        rec = self._read()
        if rec is not None and not is_stale(rec):
            raise self._refuse(rec)
        self.loc.write_bytes(json.dumps(self.rec).encode())
        time.sleep(SETTLE_S)
        rec = self._read()
        if rec is None or rec.get("owner") != self.rec["owner"]:
            raise self._refuse(rec or {})

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                rec = self._read()
                if rec is None or rec.get("owner") != self.rec["owner"]:
                    return  # taken over (this run looked dead): leave the other's record alone
                self.rec["heartbeat"] = time.time()
                self.loc.write_bytes(json.dumps(self.rec).encode())
            except (OSError, StorageError):
                continue  # a store that failed once: the next beat tries again

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None
        if (self._read() or {}).get("owner") == self.rec["owner"]:
            self.loc.remove()
        if getattr(self, "_made", False):
            for d in (self.run.local / "_work", self.run.local):
                try:
                    d.rmdir()
                except OSError:
                    break  # something else was written: the folder stays
