"""One run per run directory (curate/io/runlock.py), and what Ctrl-C leaves behind: two real ``curate run``
processes into one folder, a stale lock taken over, the lock in a bucket, and an interrupted run resumed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curate.io import runlock
from curate.io.runlock import RunLock, RunLockedError
from tests.helpers import ROOT, write_inputs

GATED_MAIN = """
import os, sys, time
from pathlib import Path
from curate.core.registry import STAGES
from curate.core.stage import Transform

GATE = Path(os.environ["GATE"])

@STAGES.add("gated_test_v1")
class Gated(Transform):
    '''Test-only: waits at the first part from file 1 until the test opens the gate.'''
    def process(self, table):
        if any(i.startswith("f1-") for i in table.column("id").to_pylist()):
            GATE.with_suffix(".waiting").touch()
            t0 = time.time()
            while not GATE.exists() and time.time() - t0 < 60:
                time.sleep(0.05)
        return table

from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    write_inputs(tmp_path / "in", n_files=3, n_docs=10)
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: t\ninput: {{path: '{tmp_path}/in/*.jsonl', format: jsonl}}\nstages:\n"
        "  - transform: normalize_v1\n  - transform: gated_test_v1\n  - dedup: exact_dedup_v1\n"
    )
    (tmp_path / "gated_main.py").write_text(GATED_MAIN)
    env = {**os.environ, "GATE": str(tmp_path / "gate"), "PYTHONPATH": str(ROOT)}
    return pipe, tmp_path / "run", env


def _run_cmd(tmp_path: Path, pipe: Path, out: Path, *more: str) -> list[str]:
    """``curate run PIPE --output OUT --engine inline -q`` through the gated entry point, plus ``more``."""
    main = str(tmp_path / "gated_main.py")
    return [sys.executable, main, "run", str(pipe), "--output", str(out), "--engine", "inline", "-q", *more]


def _start_gated(tmp_path: Path, pipe: Path, out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        _run_cmd(tmp_path, pipe, out, "--no-phases"),
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waiting = tmp_path / "gate.waiting"
    t0 = time.time()
    while not waiting.exists():
        assert p.poll() is None, p.communicate()
        assert time.time() - t0 < 60, "the first run never reached its gate"
        time.sleep(0.05)
    return p


def test_a_second_run_into_a_folder_in_use_exits_with_one_line_before_any_work(tmp_path: Path) -> None:
    pipe, out, env = _setup(tmp_path)
    first = _start_gated(tmp_path, pipe, out, env)
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    second = subprocess.run(
        _run_cmd(tmp_path, pipe, out),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.poll() is None  # refused while the first still runs
    assert second.returncode == 2
    assert second.stdout == ""
    [line] = second.stderr.splitlines()
    assert re.fullmatch(
        rf"curate run: error: {re.escape(str(out))} is in use by another run \(pid {first.pid} on "
        rf"{re.escape(socket.gethostname())}, started \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC\); wait for it to "
        r"finish or choose another --output \(a lock left by a killed run is taken over once its process is "
        r"gone or 300 s after its last heartbeat\)",
        line,
    ), line
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before  # wrote nothing
    (tmp_path / "gate").touch()
    out_text, err_text = first.communicate(timeout=60)
    assert first.returncode == 0, err_text
    assert "input 36 = kept 14 + rejected 19 + quarantined 3  (balanced)" in out_text
    assert not (out / "_work" / "lock.json").exists()  # released at the end


def test_ctrl_c_is_one_line_releases_the_lock_and_the_rerun_says_it_resumes(tmp_path: Path) -> None:
    pipe, out, env = _setup(tmp_path)
    first = _start_gated(tmp_path, pipe, out, env)  # file 0's unit is committed, file 1's is waiting
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130
    assert err.splitlines() == [
        "curate run: interrupted; what finished is kept. To resume, rerun: curate run "
        f"{pipe} --output {out} --engine inline -q --no-phases"
    ]
    assert not (out / "_work" / "lock.json").exists()
    (tmp_path / "gate").touch()
    again = subprocess.run(
        _run_cmd(tmp_path, pipe, out, "--no-phases"),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    # 3 reading units (one per file), 1 committed, and 3 applying exact_dedup_v1's state to their parts
    assert again.stderr.splitlines() == ["resuming: 1 of 6 units done"]


def _lock_record(**kw: object) -> dict[str, object]:
    now = time.time()
    return {"owner": "x" * 32, "host": "other-host", "pid": 1, "start": now, "heartbeat": now} | kw


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_lock_of_a_process_gone_is_taken_over_and_a_live_one_refuses(tmp_path: Path) -> None:
    lock = tmp_path / "run" / "_work" / "lock.json"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps(_lock_record(host=socket.gethostname(), pid=_dead_pid())))
    with RunLock(tmp_path / "run") as held:
        assert json.loads(lock.read_text())["owner"] == held.rec["owner"]
        with pytest.raises(RunLockedError, match=rf"in use by another run \(pid {os.getpid()} on "):
            RunLock(tmp_path / "run").acquire()
    assert not lock.exists()
    # another host's lock: alive while its heartbeat is fresh, stale after STALE_S
    lock.write_text(json.dumps(_lock_record()))
    with pytest.raises(RunLockedError, match=r"\(pid 1 on other-host, started "):
        RunLock(tmp_path / "run").acquire()
    lock.write_text(json.dumps(_lock_record(heartbeat=time.time() - runlock.STALE_S - 1)))
    with RunLock(tmp_path / "run"):
        assert json.loads(lock.read_text())["host"] == socket.gethostname()
    # a pid reused by a later process on this host: its start time differs
    lock.write_text(json.dumps(_lock_record(host=socket.gethostname(), pid=os.getpid(), proc_start="1")))
    with RunLock(tmp_path / "run"):
        pass


def test_the_lock_in_a_bucket_refuses_a_second_run_and_takes_over_a_stale_one(s3, monkeypatch) -> None:
    monkeypatch.setattr(runlock, "SETTLE_S", 0.1)
    url = f"s3://{s3.bucket}/runs/one"
    key = f"{s3.bucket}/runs/one/_work/lock.json"
    with RunLock(url) as held:
        assert json.loads(s3.fs.cat_file(key))["owner"] == held.rec["owner"]
        with pytest.raises(RunLockedError, match=rf"runs/one is in use by another run \(pid {os.getpid()}"):
            RunLock(url).acquire()
    assert not s3.fs.exists(key)
    s3.fs.pipe_file(key, json.dumps(_lock_record(heartbeat=time.time() - runlock.STALE_S - 1)).encode())
    with RunLock(url) as held:
        assert json.loads(s3.fs.cat_file(key))["owner"] == held.rec["owner"]


def test_a_lock_of_a_killed_process_not_yet_reaped_is_stale(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        rec = _lock_record(host=socket.gethostname(), pid=p.pid, proc_start=runlock._proc_start(p.pid))
        assert not runlock.is_stale(rec)
        p.kill()
        t0 = time.time()
        while Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.time() - t0 < 10
            time.sleep(0.01)
        assert runlock.is_stale(rec)  # a zombie: killed, its parent (this test) has not waited for it
    finally:
        p.kill()
        p.wait()
