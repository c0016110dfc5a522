"""A real local multi-node Ray cluster (a head and a worker node on this machine), and `ray job submit`.

The cluster (tests/ray_cluster.py, the session fixture ``local_cluster`` in tests/conftest.py) runs with
Ray's token authentication; the client side (`curate run --address`, `ray job submit`) gets the same
settings, and a client without the token is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, pipeline, write_inputs
from tests.ray_cluster import BIN, submit_job


def _outputs(run: Path) -> dict:
    m = json.loads((run / "manifest.json").read_text())
    return {"outputs": m["outputs"], "accounting": m["accounting"]}


def _inline_reference(tmp_path: Path) -> dict:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "curate",
            "run",
            str(tmp_path / "p.yaml"),
            "--output",
            str(tmp_path / "inline"),
            "--engine",
            "inline",
            "-q",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    return _outputs(tmp_path / "inline")


@pytest.mark.ray
def test_multi_node_cluster_output_equals_embedded(tmp_path: Path, local_cluster) -> None:
    write_inputs(tmp_path / "in", n_files=6)
    (tmp_path / "p.yaml").write_text(pipeline(tmp_path / "in"))
    expected = _inline_reference(tmp_path)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "curate",
            "run",
            str(tmp_path / "p.yaml"),
            "--output",
            str(tmp_path / "cl"),
            "--address",
            local_cluster["address"],
            "-q",
        ],
        cwd=ROOT,
        env=local_cluster["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((tmp_path / "cl" / "manifest.json").read_text())
    assert m["engine"]["nodes"] == 2
    assert m["engine"]["address"] == local_cluster["address"]
    assert _outputs(tmp_path / "cl") == expected


@pytest.mark.ray
def test_ray_job_submit(tmp_path: Path, local_cluster) -> None:
    write_inputs(tmp_path / "in", n_files=3)
    (tmp_path / "p.yaml").write_text(pipeline(tmp_path / "in"))
    expected = _inline_reference(tmp_path)
    entry = f"{sys.executable} -m curate run {tmp_path / 'p.yaml'} --output {tmp_path / 'job'} -q"
    r = submit_job(local_cluster, entry)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "succeeded" in r.stdout
    assert _outputs(tmp_path / "job") == expected


@pytest.mark.ray
def test_a_client_without_the_token_is_refused(local_cluster) -> None:
    """The job server refuses a client that has the auth mode but not the token; with it, it answers."""
    env = {k: v for k, v in local_cluster["env"].items() if not k.startswith("RAY_AUTH_TOKEN")}

    def job_list(env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "ray"), "job", "list", "--address", local_cluster["dashboard"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = job_list(env)
    assert refused.returncode != 0
    assert "token" in (refused.stdout + refused.stderr).lower()
    ok = job_list(local_cluster["env"])
    assert ok.returncode == 0, ok.stderr[-2000:]
