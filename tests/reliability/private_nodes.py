"""Ray nodes that share no files (tests/ray_cluster.py's ``private_fs``), with object-storage credentials,
and a driver run inside the head's namespace; used by test_no_shared_disk.py and test_web_no_shared_disk.py."""

from __future__ import annotations

import subprocess
import sys

from tests.ray_cluster import on_head, start_local_cluster


def outputs(m: dict) -> dict:
    return {"outputs": m["outputs"], "accounting": m["accounting"], "removed": m["removed_by_reason"]}


def cluster_run(cluster: dict, yaml: str, out: str, prog: tuple[str, ...] = ()) -> subprocess.Popen:
    """`curate run` (or ``prog run``) as a driver inside the head's namespace (the pipeline file written
    to its /tmp, from the variable PIPELINE_YAML)."""
    script = 'mkdir -p /tmp/d && printf %s "$PIPELINE_YAML" > /tmp/d/p.yaml && exec "$@"'
    cmd = [*(prog or (sys.executable, "-m", "curate")), "run", "/tmp/d/p.yaml", "--output", out, "-q"]
    cmd += ["--address", cluster["address"]]
    return subprocess.Popen(
        on_head(cluster, ["sh", "-c", script, "sh", *cmd]),
        env={**cluster["env"], "PIPELINE_YAML": yaml},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_private_cluster(
    tmp_path_factory, s3_endpoint, workers: int, head_cpus: int = 1, gpu_workers: int = 0
):
    _, env = s3_endpoint
    aws = {k: v for k, v in env.items() if k.startswith("AWS_")}
    return start_local_cluster(
        tmp_path_factory.mktemp("auth"),
        workers=workers,
        prefix="rp",
        extra_env=aws,
        private_fs=True,
        head_cpus=head_cpus,
        gpu_workers=gpu_workers,
    )
