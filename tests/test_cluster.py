"""A real local multi-node Ray cluster (a head and a worker node on this machine), and `ray job submit`.

The cluster (tests/ray_cluster.py, the fixture ``local_cluster`` in tests/conftest.py) runs with Ray's
token authentication; the client side (`curate run --address`, `ray job submit`) gets the same settings,
and a client without the token is refused, in one line. Every test of `make test` that needs this cluster
is in this file, so that it is started once for them and stopped when they are done.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, pipeline, write_inputs
from tests.proxy.toy import TINY_TRAIN, WORDS, doc
from tests.ray_cluster import BIN, submit_job
from tests.reliability.fault_runs import RUN_MAIN, digests, fault_pipeline, output_ids, reference_run


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
@pytest.mark.slow  # in `make test`: the driver-kill run on this cluster below, same check
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


@pytest.mark.ray
@pytest.mark.parametrize("token", [None, "0" * 64])
def test_a_cluster_client_without_its_token_gets_one_line(local_cluster, tmp_path, token) -> None:
    """`curate run --address` without the cluster's token (no auth mode, or another token): exit 2 and one
    line that says what to set, before any work. Ray's client tries the cluster 20 times, 1 s apart, before
    it gives up (ray/_private/node.py, NUM_REDIS_GET_RETRIES): two tries give the same refusal."""
    write_inputs(tmp_path / "in", n_files=1, n_docs=5)
    (tmp_path / "p.yaml").write_text(pipeline(tmp_path / "in"))
    env = {k: v for k, v in local_cluster["env"].items() if not k.startswith("RAY_AUTH_TOKEN")}
    env["RAY_NUM_REDIS_GET_RETRIES"] = "2"
    if token is None:
        env.pop("RAY_AUTH_MODE", None)
    else:
        env["RAY_AUTH_TOKEN"] = token
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "curate",
            "run",
            str(tmp_path / "p.yaml"),
            "--output",
            str(tmp_path / "run"),
            "-q",
            "--address",
            local_cluster["address"],
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    fix = (
        "RAY_AUTH_MODE is unset: set RAY_AUTH_MODE=token"
        if token is None
        else "this client's token is not the cluster's: set RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN to it"
    )
    assert line.startswith(
        f"curate run: error: the Ray cluster at {local_cluster['address']} requires token authentication "
        f"(on by default since Ray 2.60); {fix}"
    ), line
    assert not (tmp_path / "run" / "_work" / "lock.json").exists()


@pytest.fixture(scope="module")
def fault_reference(tmp_path_factory) -> dict:
    """tests/reliability/fault_runs.py's input, 3 files x 20 docs (6 parts), and its inline run."""
    return reference_run(tmp_path_factory.mktemp("faults_small"), n_files=3, n_docs=20)


@pytest.mark.ray
def test_driver_sigkill_mid_dedup_on_a_cluster_then_rerun_resumes(
    fault_reference: dict, tmp_path: Path, local_cluster
) -> None:
    """The driver killed mid-dedup, in `make test` (reliability/test_faults.py's embedded-Ray version is
    `slow`): the driver is a client of a running two-node cluster, so no runtime starts or dies with it.
    It is also CI's proof that `curate run --address` on several nodes gives the inline run's output (the
    plain multi-node run above is `slow`). It is SIGKILLed while the exact dedup's apply is in flight on
    the cluster; the same command finishes the run with identical output, redoing neither segment 0 nor
    the exact dedup's reduce (its checkpoint)."""
    pid_file, log_file = tmp_path / "stalled.pid", tmp_path / "calls.log"
    (tmp_path / "p.yaml").write_text(
        fault_pipeline(
            fault_reference["input"], where="exact:apply", pid_file=str(pid_file), log_file=str(log_file)
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
    assert digests(m) == digests(fault_reference["manifest"])
    assert sorted(output_ids(tmp_path / "run")) == fault_reference["ids"]
    # The rerun redid neither segment 0 (no scoring) nor the exact dedup's collect: its only collects are
    # the MinHash dedup's, one per part of segment 1.
    rerun = [ln.split(" ", 1)[1] for ln in log_file.read_text().splitlines()[calls_before:]]
    assert not [c for c in rerun if c.startswith("score ")]
    assert sum(c.startswith("collect ") for c in rerun) == len(list((work / "s1").glob("done-*.json")))


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
