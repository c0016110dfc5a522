"""Faults: a Ray worker SIGKILLed mid-stage, and the driver SIGKILLed mid-run, leave no trace in the output.

How the work survives (see docs/reliability.md):
* a killed worker: ``RayEngine`` runs segment work on actors whose failed calls go to a live actor, up to
  ``engine.max_retries`` (3) times, and collect / shuffle partition / shuffle reduce tasks with
  ``max_retries`` = 3; a unit's outputs are written atomically before its ``done-*.json``, so a retried
  unit overwrites nothing half-written;
* a killed driver: the rerun of the same command skips every unit whose ``done-*.json`` exists and every
  global stage whose ``g<i>.state.pkl`` + summary exist (the stage checkpoints), and redoes the rest.

Each test compares with an uninterrupted inline run: the manifest digests of kept/ and rejected/ and the
accounting are equal, and every input row id comes out exactly once. The pipeline and the reference runs
are in tests/reliability/fault_runs.py; the driver killed on a two-node cluster is in tests/test_cluster.py
(beside the other tests of that cluster, which is started once for them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.reliability.fault_runs import RUN_MAIN, digests, fault_pipeline, output_ids, reference_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The input (8 files x 40 docs, many duplicates, malformed lines) and its uninterrupted inline run."""
    return reference_run(tmp_path_factory.mktemp("faults"), n_files=8, n_docs=40)


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory) -> dict:
    """The same with 3 files x 20 docs (6 parts): for the fast tests."""
    return reference_run(tmp_path_factory.mktemp("faults_small"), n_files=3, n_docs=20)


class Killer:
    """Watches ``pid_file``; as soon as a pid appears there, SIGKILLs that process (or ``victim`` instead)."""

    def __init__(self, pid_file: Path, victim: int | None = None) -> None:
        self.pid_file, self.victim = pid_file, victim
        self.stalled: int | None = None
        self.killed: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.pid_file.exists():
                self.stalled = int(self.pid_file.read_text())
                target = self.victim or self.stalled
                os.kill(target, signal.SIGKILL)
                self.killed = target
                return
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _retried_elsewhere(log_file: Path, killed: int) -> bool:
    """The killed process's last call (the stalled one) was later made again by another process."""
    lines = [ln.split(" ", 1) for ln in log_file.read_text().splitlines()]
    last = max(i for i, (pid, _) in enumerate(lines) if int(pid) == killed)
    what = lines[last][1]
    return any(int(pid) != killed and w == what for pid, w in lines[last + 1 :])


SLOW = pytest.mark.slow


@pytest.mark.ray
@pytest.mark.parametrize(
    "where",
    [
        pytest.param("score", marks=SLOW),
        pytest.param("exact:collect", marks=SLOW),
        "exact:reduce",  # in `make test`, on the small input: a shuffle reduce task of a global stage
        pytest.param("exact:apply", marks=SLOW),
        pytest.param("minhash:reduce", marks=SLOW),
    ],
)
def test_worker_sigkill_mid_stage_gives_identical_output(
    where: str, request: pytest.FixtureRequest, tmp_path: Path, ray_engine
) -> None:
    # the fast case (`make test`) on the 6-part input; the slow ones on the 24-part input
    reference = request.getfixturevalue("small_reference" if where == "exact:reduce" else "reference")
    pid_file, log_file = tmp_path / "stalled.pid", tmp_path / "calls.log"
    cfg = parse_pipeline(
        fault_pipeline(reference["input"], where=where, pid_file=str(pid_file), log_file=str(log_file))
    )
    killer = Killer(pid_file)
    try:
        m = run_pipeline(cfg, tmp_path / "run", engine=ray_engine)
    finally:
        killer.stop()
    assert killer.killed is not None, "no worker was killed"
    assert killer.killed != os.getpid(), "the driver was killed, not a worker"
    assert _retried_elsewhere(log_file, killer.killed), "the killed worker's work item was not retried"
    assert digests(m) == digests(reference["manifest"])
    assert m["accounting"]["balanced"]
    assert sorted(output_ids(tmp_path / "run")) == reference["ids"]


def _descendants(pid: int) -> set[int]:
    try:
        return {c.pid for c in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


LEAKED_AGENTS = {"ray::DashboardAgent", "ray::RuntimeEnvAgent"}


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace").strip()
    except OSError:
        return "?"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.ray
@pytest.mark.slow
def test_driver_sigkill_mid_dedup_then_rerun_gives_identical_output(reference: dict, tmp_path: Path) -> None:
    """Kill the driver (an embedded Ray run) while a dedup apply is in flight; the same command resumes."""
    pid_file, log_file = tmp_path / "stalled.pid", tmp_path / "calls.log"
    (tmp_path / "p.yaml").write_text(
        fault_pipeline(
            reference["input"], where="exact:apply", pid_file=str(pid_file), log_file=str(log_file)
        )
    )
    (tmp_path / "main.py").write_text(RUN_MAIN)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    cmd = [
        sys.executable,
        str(tmp_path / "main.py"),
        "run",
        str(tmp_path / "p.yaml"),
        "--output",
        str(tmp_path / "run"),
        "--engine",
        "ray",
        "-q",
    ]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree: set[int] = set()
    try:
        deadline = time.time() + 240
        while time.time() < deadline and not pid_file.exists() and proc.poll() is None:
            tree |= _descendants(proc.pid)
            time.sleep(0.05)
        assert pid_file.exists(), "the run never reached the dedup apply"
        tree |= _descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # The embedded runtime (GCS, raylet, workers) shares the driver's fate. Ray 2.60 leaves its two
        # agents behind (measured: still alive 45 s later); they are the only survivors, killed below.
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(p) and _name(p) not in LEAKED_AGENTS for p in tree):
            time.sleep(0.2)
        left = sorted(_name(p) for p in tree if _alive(p))
        assert set(left) <= LEAKED_AGENTS, f"processes of the killed run survived it: {left}"
    finally:
        for p in tree:  # only the killed run's own processes, by pid
            if _alive(p):
                os.kill(p, signal.SIGKILL)
    work = tmp_path / "run" / "_work"
    assert len(list((work / "s0").glob("done-*.json"))) == 8  # segment 0 finished before the kill ...
    assert (work / "g0.state.pkl").exists()  # ... and so did the exact dedup reduce (its checkpoint)
    assert not (tmp_path / "run" / "manifest.json").exists()
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert digests(m) == digests(reference["manifest"])
    assert sorted(output_ids(tmp_path / "run")) == reference["ids"]
    # The rerun did not redo the finished work: no second collect of the exact dedup, one apply per part.
    calls = [ln.split(" ", 1)[1] for ln in log_file.read_text().splitlines()]
    assert sum(c.startswith("score ") for c in calls) == 24  # 8 files x 3 batches, each scored once
