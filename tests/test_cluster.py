"""A real local multi-node Ray cluster (a head and a worker node on this machine), and `ray job submit`.

The cluster (tests/ray_cluster.py, the session fixture ``local_cluster`` in tests/conftest.py) runs with
Ray's token authentication; the client side (`curate run --address`, `ray job submit`) gets the same
settings, and a client without the token is refused.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, pipeline, write_inputs
from tests.proxy.toy import TINY_TRAIN, WORDS, doc
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
            "--no-phases",  # the reference for kept/ and rejected/ only
            "-q",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    return _outputs(tmp_path / "inline")


@pytest.mark.ray
@pytest.mark.slow  # in `make test`: reliability/test_faults.py's driver-kill run on this cluster, same check
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


PROXY_PIPELINE = """\
name: job_proxy
input: {{path: '{d}/in-*.jsonl.gz', format: jsonl, batch_docs: 50}}
target:
  path: {d}/target.jsonl.gz
  raw_docs: 60
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
  - score: dsir_v1
{extra}proxy:
  model: proxy_tiny
  budget: 1024
  seeds: 1
  tokenizer: {{vocab_size: 300}}
  recipes:
    raw: {{from: raw}}
    toward_target: {{from: kept, select: [{{column: dsir_v1.resample_key, min_quantile: 0.5}}]}}
  controls: []
  eval:
    - {{name: heldout, holdout: 0.1}}
    - {{name: docs, kind: text, source: docs}}
  train: {train}
  n_boot: 20
"""


def _proxy_inputs(d: Path) -> None:
    """Two input files of toy-vocabulary documents (40 from source ``docs``, the eval set; duplicates
    for the dedup), and a target sample of the first half of the vocabulary."""
    import numpy as np

    rng = np.random.default_rng(0)
    d.mkdir(parents=True, exist_ok=True)
    for f in range(2):
        rows = [{"id": f"f{f}-{i}", "text": doc(rng, 60), "source": "t"} for i in range(100)]
        rows += [{"id": f"f{f}-d{i}", "text": doc(rng, 60), "source": "docs"} for i in range(20)]
        rows += [dict(r, id=r["id"] + "-copy") for r in rows[:10]]
        with gzip.open(d / f"in-{f}.jsonl.gz", "wt") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows))
    half = WORDS[:15]
    target = [" ".join(half[i] for i in rng.integers(0, len(half), 50)) + "." for _ in range(30)]
    with gzip.open(d / "target.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(target)))


PERPLEXITY_DIFF = """\
  - score: perplexity_diff_v1     # fitted in the job's driver: trains a small LM there (torch, transformers)
    params: {tokens: 4096, seq_len: 32, batch_size: 4, vocab_size: 300}
"""


@pytest.mark.ray
@pytest.mark.parametrize(
    "extra", ["", pytest.param(PERPLEXITY_DIFF, marks=pytest.mark.slow, id="perplexity_diff")]
)
def test_ray_job_submit_of_a_pipeline_with_proxy_and_target(
    tmp_path: Path, local_cluster, extra: str
) -> None:
    """README's command, `ray job submit ... -- curate run P --output D`, for a pipeline with a `target:`
    section (target-aware scorers fitted in the job's driver) and a `proxy:` section (tokenizer, shards
    and proxy_tiny training runs on the cluster): the job succeeds, the manifest records the cluster, and
    kept/ and rejected/ equal an inline run's, digest for digest.
    The slow case adds perplexity_diff_v1, whose fit imports transformers in the driver after work ran on
    the worker node: it failed (FileNotFoundError from os.getcwd()) before the nodes had temp dirs of
    their own (tests/ray_cluster.py)."""
    _proxy_inputs(tmp_path)
    (tmp_path / "p.yaml").write_text(
        PROXY_PIPELINE.format(d=tmp_path, train=json.dumps(TINY_TRAIN), extra=extra)
    )
    expected = _inline_reference(tmp_path)
    out = tmp_path / "job"
    r = submit_job(local_cluster, f"curate run {tmp_path / 'p.yaml'} --output {out} -q")
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "succeeded" in r.stdout
    m = json.loads((out / "manifest.json").read_text())
    assert m["engine"]["kind"] == "ray"
    # the job's RAY_ADDRESS: the head's GCS port, at the address Ray gave the head (here the machine's)
    assert m["engine"]["address"].rsplit(":", 1)[1] == local_cluster["address"].rsplit(":", 1)[1]
    assert m["engine"]["nodes"] == 2
    assert m["accounting"]["balanced"]
    assert m["target"]
    proxy = m["phases"]["proxy"]
    assert proxy["runs"] == 2  # 2 recipes x 1 seed, trained as tasks on the cluster
    assert _outputs(out) == expected
    g = json.loads((out / "goodput.json").read_text())
    assert "toward_target" in g["recipes"]


JOB_CWD = """
import os, ray
ray.init()
@ray.remote(resources={"worker_0": 1})
def on_the_worker_node():
    return os.getcwd()
ray.get(on_the_worker_node.remote())
print("driver cwd ok:", os.getcwd() == os.environ["PWD"] or os.getcwd())
"""


@pytest.mark.ray
def test_a_job_driver_keeps_its_working_dir_when_work_starts_on_another_node(
    tmp_path: Path, local_cluster
) -> None:
    """The cause of the job-driver failures seen with a `proxy:` or target-aware pipeline: on one machine,
    nodes that share a temp dir share the runtime-env folder, and the worker node's agent, installing the
    job's --working-dir when the job's first task reaches it, deletes and unpacks again the folder the
    driver runs in (its os.getcwd() then raises FileNotFoundError; imports that resolve a relative path,
    such as transformers', fail). With a temp dir per node (as on separate machines) the driver's working
    dir survives."""
    (tmp_path / "job_cwd.py").write_text(JOB_CWD)
    r = submit_job(local_cluster, f"python {tmp_path / 'job_cwd.py'}")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "driver cwd ok:" in r.stdout
