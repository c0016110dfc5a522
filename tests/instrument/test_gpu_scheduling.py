"""Proxy runs ask Ray for a GPU from the cluster's resources, not the driver's CUDA; a run that got a
GPU but found no CUDA says so in its result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from curate.core.engine import InlineEngine, assigned_gpus
from curate.instrument.device import gpu_assigned_without_cuda

ROOT = Path(__file__).resolve().parents[2]


def test_no_gpus_anywhere_means_no_gpu_request() -> None:
    assert InlineEngine().cluster_gpus() == 0.0
    assert assigned_gpus() == []
    assert gpu_assigned_without_cuda() is False


@pytest.mark.ray
def test_embedded_cpu_runtime_has_no_gpus(ray_engine) -> None:
    assert ray_engine.cluster_gpus() == 0.0
    assert ray_engine.map(lambda _: (assigned_gpus(), gpu_assigned_without_cuda()), [0]) == [([], False)]


PROBE = """
import json, os
import ray
from curate.core.engine import RayEngine, assigned_gpus
from curate.instrument.device import gpu_assigned_without_cuda
from curate.core.stage import Resources

def probe(_):
    return ray.get_runtime_context().get_node_id(), assigned_gpus(), gpu_assigned_without_cuda()

engine = RayEngine(address=os.environ["RAY_ADDRESS"], progress=False)
gpu_nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU")]
runs = engine.map(probe, list(range(4)), resources=Resources(num_cpus=0.5, num_gpus=0.25))
print(json.dumps({"cluster_gpus": engine.cluster_gpus(), "gpu_nodes": gpu_nodes, "runs": runs}))
"""


@pytest.mark.ray
@pytest.mark.slow
def test_gpu_work_lands_on_the_gpu_worker_of_a_cpu_head(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.ray_cluster import start_local_cluster

    with start_local_cluster(tmp_path_factory.mktemp("auth"), workers=1, gpu_workers=1, prefix="rg") as cl:
        env = dict(cl["env"], RAY_ADDRESS=cl["address"])
        r = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["cluster_gpus"] == 1.0
    assert len(out["gpu_nodes"]) == 1
    assert [run[0] for run in out["runs"]] == out["gpu_nodes"] * 4  # never on the CPU-only head
    assert all(run[1] == ["0"] and run[2] is True for run in out["runs"])  # CPU torch: says so
