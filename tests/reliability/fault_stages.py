"""Test-only stages that stall once, at a chosen point, so a test can SIGKILL the process running them.

Each stage takes ``pid_file``: the first call (over all processes: the claim is an ``O_EXCL`` file)
writes its ``os.getpid()`` there and sleeps ``sleep_s``; every other call, including the retry of the
stalled one, runs normally. Every call appends ``<pid> <what>`` to ``log_file`` so a test can see
that the stalled work item was done again by another process. The stages compute exactly what their
parents compute: a run with an empty ``pid_file`` is the uninterrupted reference.

Importing this module registers the stages (``fault_score_test_v1``, ``fault_exact_dedup_test_v1``,
``fault_minhash_dedup_test_v1``); Ray workers import it by name, so the project root must be on their
``sys.path`` (it is: workers get the driver's ``sys.path``, and the subprocess tests set PYTHONPATH).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.stage import Scorer
from curate.dedup.exact import ExactDedup, ExactParams
from curate.dedup.minhash import MinhashDedup, MinhashParams


def stall_once(pid_file: str, sleep_s: float) -> bool:
    """If this is the first claim on ``pid_file``: publish our pid atomically and sleep. Returns True if it stalled."""
    if not pid_file:
        return False
    try:
        fd = os.open(pid_file + ".claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    tmp = f"{pid_file}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(str(os.getpid()))
    os.replace(tmp, pid_file)
    time.sleep(sleep_s)
    return True


def log_call(log_file: str, what: str) -> None:
    if log_file:
        with open(log_file, "a") as f:
            f.write(f"{os.getpid()} {what}\n")


def _first_id(table: pa.Table) -> str:
    return str(table.column(schema.ID)[0].as_py()) if table.num_rows else "-"


@dataclass
class FaultScoreParams:
    """pid_file: where the first call publishes its pid before stalling ('' = never stall).
    log_file: every call appends '<pid> <first id of the batch>'. sleep_s: how long the stall lasts."""

    pid_file: str = ""
    log_file: str = ""
    sleep_s: float = 120.0


@STAGES.add("fault_score_test_v1")
class FaultScore(Scorer):
    """Test-only scorer: ``<label>.chars`` = the text's length in characters; stalls once (see module doc)."""

    Params = FaultScoreParams

    def score(self, table: pa.Table) -> dict[str, Any]:
        p: FaultScoreParams = self.params
        log_call(p.log_file, f"score {_first_id(table)}")
        stall_once(p.pid_file, p.sleep_s)
        return {"chars": pc.utf8_length(table.column(schema.TEXT))}


def _hooked_reduce(pid_file: str, sleep_s: float, log_file: str, reduce: Any, table: pa.Table) -> Any:
    log_call(log_file, f"reduce {table.num_rows}")
    stall_once(pid_file, sleep_s)
    return reduce(table)


class _HookedEngine:
    """Delegates to an engine; its ``shuffle`` runs a reduce function that stalls once."""

    def __init__(self, engine: Any, hook: Any) -> None:
        self._engine, self._hook = engine, hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def shuffle(self, paths: Any, *, reduce: Any, **kwargs: Any) -> Any:
        return self._engine.shuffle(paths, reduce=functools.partial(self._hook, reduce), **kwargs)


class _FaultGlobal:
    """Mixin for a GlobalStage: stall once in ``phase`` (collect, reduce or apply)."""

    params: Any

    def _stall(self, phase: str, what: str) -> None:
        p = self.params
        log_call(p.log_file, f"{phase} {what}")
        if p.phase == phase:
            stall_once(p.pid_file, p.sleep_s)

    def collect(self, table: pa.Table) -> pa.Table:
        self._stall("collect", _first_id(table))
        return super().collect(table)  # type: ignore[misc]

    def reduce(self, key_paths: list[str], engine: Any) -> Any:
        p = self.params
        if p.phase == "reduce":
            engine = _HookedEngine(
                engine, functools.partial(_hooked_reduce, p.pid_file, p.sleep_s, p.log_file)
            )
        return super().reduce(key_paths, engine)  # type: ignore[misc]

    def apply(self, table: pa.Table, state: Any) -> pa.Table:
        self._stall("apply", _first_id(table))
        return super().apply(table, state)  # type: ignore[misc]


@dataclass
class FaultExactParams(ExactParams):
    """exact_dedup_v1's params plus phase (collect|reduce|apply), pid_file, log_file, sleep_s."""

    phase: str = "collect"
    pid_file: str = ""
    log_file: str = ""
    sleep_s: float = 120.0


@STAGES.add("fault_exact_dedup_test_v1")
class FaultExactDedup(_FaultGlobal, ExactDedup):
    """Test-only: exact_dedup_v1 that stalls once in ``phase``."""

    Params = FaultExactParams


@dataclass
class FaultMinhashParams(MinhashParams):
    """minhash_dedup_v1's params plus phase (collect|reduce|apply), pid_file, log_file, sleep_s."""

    phase: str = "collect"
    pid_file: str = ""
    log_file: str = ""
    sleep_s: float = 120.0


@STAGES.add("fault_minhash_dedup_test_v1")
class FaultMinhashDedup(_FaultGlobal, MinhashDedup):
    """Test-only: minhash_dedup_v1 that stalls once in ``phase``."""

    Params = FaultMinhashParams
