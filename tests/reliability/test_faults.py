"""Faults: a Ray worker SIGKILLed mid-stage, and the driver SIGKILLed mid-run, leave no trace in the output.

How the work survives (see docs/reliability.md):
* a killed worker: ``RayEngine`` runs segment work on actors whose failed calls go to a live actor, up to
  ``engine.max_retries`` (3) times, and collect / shuffle partition / shuffle reduce tasks with
  ``max_retries`` = 3; a unit's outputs are written atomically before its ``done-*.json``, so a retried
  unit overwrites nothing half-written;
* a killed driver: the rerun of the same command skips every unit whose ``done-*.json`` exists and every
  global stage whose ``g<i>.state.pkl`` + summary exist (the stage checkpoints), and redoes the rest.

Each test compares with an uninterrupted inline run: the manifest digests of kept/ and rejected/ and the
accounting are equal, and every input row id comes out exactly once.
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
import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import write_inputs
from tests.reliability import fault_stages  # noqa: F401  (registers the fault_* test stages)

ROOT = Path(__file__).resolve().parents[2]


def fault_pipeline(inp: Path, *, where: str = "", pid_file: str = "", log_file: str = "") -> str:
    """normalize → fault scorer → select → exact dedup → MinHash dedup; ``where`` picks the stage that stalls."""

    def params(name: str, phase: str | None = None) -> str:
        stall = pid_file if where == (f"{name}:{phase}" if phase else name) else ""
        extra = f", phase: {phase}" if phase else ""
        return f"{{pid_file: '{stall}', log_file: '{log_file}'{extra}}}"

    ex_phase = where.split(":")[1] if where.startswith("exact:") else "collect"
    mh_phase = where.split(":")[1] if where.startswith("minhash:") else "collect"
    return f"""\
name: faults
input: {{path: '{inp}/*.jsonl', format: jsonl, batch_docs: 16}}
stages:
  - transform: normalize_v1
  - score: fault_score_test_v1
    params: {params("score")}
  - select:
      - {{column: fault_score_test_v1.chars, min: 5, reason: too_short}}
  - dedup: fault_exact_dedup_test_v1
    params: {params("exact", ex_phase)}
  - dedup: fault_minhash_dedup_test_v1
    params: {params("minhash", mh_phase)}
"""


def output_ids(run: Path) -> list[str]:
    files = sorted((run / "kept").glob("part-*.parquet")) + sorted((run / "rejected").glob("part-*.parquet"))
    return [i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]


def digests(m: dict) -> dict:
    return {"outputs": m["outputs"], "accounting": m["accounting"], "removed": m["removed_by_reason"]}


def _reference(d: Path, *, n_files: int, n_docs: int) -> dict:
    write_inputs(d / "in", n_files=n_files, n_docs=n_docs)
    m = run_pipeline(parse_pipeline(fault_pipeline(d / "in")), d / "ref", engine=InlineEngine())
    ids = output_ids(d / "ref")
    # Every input row (n_docs + 2 lines per file) comes out once; dedup and select both had work to do.
    assert len(ids) == len(set(ids)) == m["accounting"]["input"] == n_files * (n_docs + 2)
    assert m["removed_by_reason"]["fault_exact_dedup_test_v1:duplicate"] > 0
    return {"input": d / "in", "manifest": m, "ids": sorted(ids)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The input (8 files x 40 docs, many duplicates, malformed lines) and its uninterrupted inline run."""
    return _reference(tmp_path_factory.mktemp("faults"), n_files=8, n_docs=40)


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory) -> dict:
    """The same with 3 files x 20 docs (6 parts): for the fast tests."""
    return _reference(tmp_path_factory.mktemp("faults_small"), n_files=3, n_docs=20)


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


RUN_MAIN = """
import sys
from tests.reliability import fault_stages  # registers the test stages
from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""


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


@pytest.mark.ray
def test_driver_sigkill_mid_dedup_on_a_cluster_then_rerun_resumes(
    small_reference: dict, tmp_path: Path, local_cluster
) -> None:
    """The fast version (in `make test`): the driver is a client of a running two-node cluster, so no
    runtime starts or dies with it. It is also CI's proof that `curate run --address` on several nodes
    gives the inline run's output (test_cluster.py's plain multi-node run is `slow`). It is SIGKILLed while the exact dedup's apply is in flight on the
    cluster; the same command finishes the run with identical output, redoing neither segment 0 nor the
    exact dedup's reduce (its checkpoint)."""
    pid_file, log_file = tmp_path / "stalled.pid", tmp_path / "calls.log"
    (tmp_path / "p.yaml").write_text(
        fault_pipeline(
            small_reference["input"], where="exact:apply", pid_file=str(pid_file), log_file=str(log_file)
        )
    )
    (tmp_path / "main.py").write_text(RUN_MAIN)
    cmd = [sys.executable, str(tmp_path / "main.py"), "run", str(tmp_path / "p.yaml")]
    cmd += ["--output", str(tmp_path / "run"), "--address", local_cluster["address"], "-q"]
    env = local_cluster["env"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not pid_file.exists() and proc.poll() is None:
            time.sleep(0.05)
        assert pid_file.exists(), "the run never reached the dedup apply"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    work = tmp_path / "run" / "_work"
    assert len(list((work / "s0").glob("done-*.json"))) == 3  # segment 0 finished before the kill ...
    assert (work / "g0.state.pkl").exists()  # ... and so did the exact dedup reduce (its checkpoint)
    assert not (tmp_path / "run" / "manifest.json").exists()
    calls_before = len(log_file.read_text().splitlines())
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["engine"]["address"] == local_cluster["address"]
    assert m["engine"]["nodes"] == 2  # `curate run --address` on two nodes: the inline run's output
    assert digests(m) == digests(small_reference["manifest"])
    assert sorted(output_ids(tmp_path / "run")) == small_reference["ids"]
    # The rerun redid neither segment 0 (no scoring) nor the exact dedup's collect: its only collects are
    # the MinHash dedup's, one per part of segment 1.
    rerun = [ln.split(" ", 1)[1] for ln in log_file.read_text().splitlines()[calls_before:]]
    assert not [c for c in rerun if c.startswith("score ")]
    assert sum(c.startswith("collect ") for c in rerun) == len(list((work / "s1").glob("done-*.json")))
