"""A real local multi-node Ray cluster on this machine (a head and worker nodes, one CPU each), for tests.

The cluster runs with Ray's token authentication (RAY_AUTH_MODE=token, a token file of its own); the
client side (`curate run --address`, `ray job submit`) gets the same settings. The cluster's processes
are found by their private temp dir and stopped at the end, leaving other Ray sessions alone.
Used by tests/test_cluster.py, tests/reliability/test_scaleout.py, tests/io/test_object_storage.py and
tests/instrument/test_gpu_scheduling.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes() -> list[tuple[int, str]]:
    """(pid, NUL-separated command line) of every process this user can read."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            out.append((int(pid), Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")))
        except OSError:
            continue
    return out


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process this user can read."""
    out = {}
    for pid, _ in _processes():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            out[pid] = int(stat.rsplit(")", 1)[1].split()[1])  # the name in (...) may hold spaces
    return out


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


# An empty /tmp per node; a checkout that itself lives under /tmp (CI's clone may) is bound back in, or
# the node would not find its own environment (.venv) once the tmpfs hides it.
_PRIVATE_FS = (
    'if [ -n "$CURATE_KEEP" ]; then mkdir -p /run/curate-keep && mount --bind "$CURATE_KEEP" /run/curate-keep; fi'
    " && mount -t tmpfs tmpfs /tmp && mkdir -p /tmp/home"
    ' && if [ -n "$CURATE_KEEP" ]; then mkdir -p "$CURATE_KEEP" && mount --bind /run/curate-keep "$CURATE_KEEP"; fi'
    ' && exec "$@"'
)


def _kill_cluster(temp_dir: str, token: Path) -> None:
    """Stop the cluster's processes: those whose command line names its temp dir, those whose
    environment marks them as this cluster's (Ray starts a client server whose command line has
    neither), and every process they started. Ray renames its agents ``ray::DashboardAgent`` by writing
    over their command line, and the title can run over ``/proc/PID/environ`` too, marker included: the
    agents are found as their raylet's children, while it lives. They outlive a SIGTERM of the raylet,
    and a SIGKILL when it had no time to stop them (seen with two test processes on 2 cores)."""
    needle = f"CURATE_TEST_CLUSTER={token}\0".encode()
    ours: set[int] = set()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        ours |= {pid for pid, cmd in _processes() if temp_dir in cmd or needle in _environ(pid)}
        parents = _parents()
        while grown := {pid for pid, ppid in parents.items() if ppid in ours} - ours:
            ours |= grown
        ours.discard(os.getpid())
        for pid in ours:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(1)


def _cluster_env(token: Path, *, extra_env: dict[str, str] | None, private_fs: bool) -> dict[str, str]:
    """The environment of every node's processes and of the cluster's clients: token auth on, this
    environment's ``curate``, no ``RAY_ADDRESS`` of the caller's (see :func:`start_local_cluster`)."""
    env = dict(
        os.environ,
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN_PATH=str(token),
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=str(ROOT),
        # this environment's scripts first (as on a node where the project is installed): `ray job
        # submit -- curate run ...` runs the same `curate` as the tests
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **(extra_env or {}),
    )
    env.pop("RAY_ADDRESS", None)
    if private_fs:
        # the token file is in the test's /tmp, which the nodes do not see: pass the token itself
        env.pop("RAY_AUTH_TOKEN_PATH")
        env.update(RAY_AUTH_TOKEN=token.read_text(), HOME="/tmp/home")
        env["CURATE_KEEP"] = str(ROOT) if str(ROOT).startswith("/tmp/") else ""
    env["CURATE_TEST_CLUSTER"] = str(token)  # marks every process of this cluster, for _kill_cluster
    return env


def _start_worker(
    i: int,
    ray_cmd: list[str],
    port: int,
    temp_dir: str,
    common: list[str],
    gpus: list[str],
    ports: list[str],
    env: dict,
) -> None:
    """``ray start`` worker node ``i`` (one CPU, the custom resource ``worker_<i>``) into the head at ``port``.

    Each worker node gets its own temp dir, as on a machine of its own: nodes that share one (Ray's
    default on one machine) share the runtime-env folder, and a worker node's agent, installing a job's
    --working-dir there, deletes and unpacks again the folder that the job's driver on the head runs in
    (Ray's `overwrite=True` for working_dir); the driver's cwd is then gone (os.getcwd() raises
    FileNotFoundError). tests/test_cluster.py shows it.
    """
    tag = ["--resources", json.dumps({f"worker_{i}": 1})]
    subprocess.run(
        [
            *ray_cmd,
            "start",
            "--address",
            f"127.0.0.1:{port}",
            "--temp-dir",
            f"{temp_dir}-w{i}",
            *common,
            "--num-cpus",
            "1",
            *gpus,
            *tag,
            *ports,
        ],
        check=True,
        env=env,
        capture_output=True,
        timeout=180,
    )


@contextlib.contextmanager
def start_local_cluster(
    auth_dir: Path,
    *,
    workers: int,
    prefix: str = "rc",
    gpu_workers: int = 0,
    extra_env: dict[str, str] | None = None,
    private_fs: bool = False,
    head_cpus: int = 1,
) -> Iterator[dict]:
    """A head and ``workers`` worker nodes on this machine, token auth on, each node with one CPU; the
    last ``gpu_workers`` workers also declare one logical GPU (``--num-gpus 1``, no CUDA needed).
    Worker ``i`` also has the custom resource ``worker_<i>`` (so :func:`remove_worker` can find it).
    ``extra_env``: variables every node's processes get (e.g. object-storage credentials).
    ``private_fs``: every node in a mount namespace of its own with an empty ``/tmp`` (a tmpfs) and
    ``HOME=/tmp/home``, so no node sees a file another node (or the test) wrote there, as on separate
    machines; the project and its environment stay visible (the same software on every node). Run a
    driver inside the head's namespace with :func:`on_head`. Needs root (``unshare -m``).
    ``head_cpus``: 0 puts every task and actor on the worker nodes, never beside the driver (with
    ``private_fs``: no work can read a file the driver wrote on its own disk).

    Yields the GCS address, the job-server URL, the environment clients need (same auth settings) and
    the cluster's temp dir.
    """
    if not (BIN / "ray").exists():
        pytest.skip("the ray CLI is not installed in this environment")
    token = auth_dir / "token"
    token.write_text(secrets.token_hex(32))
    env = _cluster_env(token, extra_env=extra_env, private_fs=private_fs)
    temp_dir = f"/tmp/{prefix}-{uuid.uuid4().hex[:8]}"
    # each node in its own mount namespace with an empty /tmp (see private_fs)
    wrap = (
        ["unshare", "-m", "--propagation", "private", "sh", "-c", _PRIVATE_FS, "sh"] if private_fs else []
    )  # short: Ray's unix socket paths stay under 107 chars
    port, dash = _free_port(), _free_port()
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats"]

    def node_ports() -> list[str]:
        # The dashboard agent's HTTP port defaults to 52365 on every node; another Ray session on this machine
        # (the test session's embedded runtime) may hold it, and the job server then finds "no available agent".
        return ["--dashboard-agent-listen-port", str(_free_port())]

    head = [
        "--head",
        "--port",
        str(port),
        "--temp-dir",
        temp_dir,
        "--include-dashboard",
        "true",
        "--dashboard-host",
        "127.0.0.1",
        "--dashboard-port",
        str(dash),
    ]
    try:
        subprocess.run(
            [*wrap, str(BIN / "ray"), "start", *head, *common, "--num-cpus", str(head_cpus), *node_ports()],
            check=True,
            env=env,
            capture_output=True,
            timeout=180,
        )
        for i in range(workers):
            gpus = ["--num-gpus", "1"] if i >= workers - gpu_workers else []
            _start_worker(i, [*wrap, str(BIN / "ray")], port, temp_dir, common, gpus, node_ports(), env)
        yield {
            "address": f"127.0.0.1:{port}",
            "dashboard": f"http://127.0.0.1:{dash}",
            "env": env,
            "temp_dir": temp_dir,
        }
    finally:
        _kill_cluster(temp_dir, token)


def remove_worker(cluster: dict, i: int) -> int:
    """Kill worker node ``i``'s raylet (SIGKILL, as a lost machine): its workers die with it and Ray
    marks the node dead. Returns the raylet's pid."""
    for pid, cmd in _processes():
        if cluster["temp_dir"] in cmd and "raylet" in cmd.split("\0")[0] and f"worker_{i}" in cmd:
            os.kill(pid, signal.SIGKILL)
            return pid
    raise AssertionError(f"no raylet of worker_{i} in {cluster['temp_dir']}")


def remove_worker_when(
    cluster: dict, proc: subprocess.Popen, ready: Callable[[], bool], i: int = 1, wait_s: float = 300
) -> str:
    """Kill worker node ``i`` (:func:`remove_worker`) once ``ready()`` holds, polled while ``proc`` (a run's
    driver) runs; then wait for the run, which must succeed all the same. Returns its stderr."""
    deadline = time.time() + wait_s
    while time.time() < deadline and proc.poll() is None:
        if ready():
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before a node could be removed"
    remove_worker(cluster, i)
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return err


def submit_job(
    cluster: dict, entry: str, *, wait_s: float = 120, timeout: int = 600
) -> subprocess.CompletedProcess:
    """`ray job submit` of ``entry`` (a command line) to ``cluster``, with this repository as working dir.

    The head's job agent can take a while to register on a loaded machine; Ray then answers "No available
    agent" and asks to retry, which this does for up to ``wait_s`` seconds.
    """
    deadline = time.time() + wait_s
    while True:
        r = subprocess.run(
            [
                str(BIN / "ray"),
                "job",
                "submit",
                "--address",
                cluster["dashboard"],
                "--working-dir",
                str(ROOT),
                "--",
                *entry.split(),
            ],
            cwd=ROOT,
            env=cluster["env"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode == 0 or "No available agent" not in r.stderr or time.time() > deadline:
            return r
        time.sleep(3)


def on_head(cluster: dict, cmd: list[str]) -> list[str]:
    """``cmd`` run inside the head node's mount namespace (its private /tmp and HOME, see ``private_fs``):
    a driver there connects to the head's raylet as a driver on that machine would."""
    return _on_node(cluster["temp_dir"], cmd)


def on_worker(cluster: dict, i: int, cmd: list[str]) -> list[str]:
    """``cmd`` run inside worker node ``i``'s mount namespace: its Ray session (its workers' logs) is
    under ``<temp_dir>-w<i>`` there."""
    return _on_node(f"{cluster['temp_dir']}-w{i}", cmd)


def _on_node(temp_dir: str, cmd: list[str]) -> list[str]:
    for pid, line in _processes():
        argv = line.split("\0")
        if "raylet" in argv[0] and f"--temp_dir={temp_dir}" in argv:
            return ["nsenter", "-t", str(pid), "-m", "--", *cmd]
    raise AssertionError(f"no raylet in {temp_dir}")
