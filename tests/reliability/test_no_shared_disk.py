"""No shared disk: Ray nodes on one machine that cannot see each other's files (each in a mount namespace
of its own, with a private /tmp and HOME), the run directory and the input in a bucket (a loopback S3).

Everything one node writes for another must then go through the run directory's storage or through
Ray: the global stages' key tables, shuffle outputs, drop lists and pickled state (under ``_work/`` in
the bucket, :mod:`curate.io.scratch`), and the target-aware scorers' fits (uploaded to ``target/`` in
the bucket, fetched by the workers: ``curate.targeting.fitted.fetch_folder``). A worker that read a path
only the driver's disk has would fail here (it did, before: the key tables went to the driver's
``~/.cache/curate/stage``). The output equals the inline run's, digest for digest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import slow_main
from tests.ray_cluster import on_head, on_worker, remove_worker_when
from tests.reliability.private_nodes import cluster_run, outputs, start_private_cluster

WORDS = [
    "river",
    "stone",
    "cloud",
    "field",
    "light",
    "winter",
    "harbor",
    "garden",
    "signal",
    "paper",
    "orbit",
    "valley",
    "ember",
    "copper",
]

PIPELINE = """\
name: no_shared_disk
input: {{path: '{inp}/*.jsonl', format: jsonl, batch_docs: 20}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
  - dedup: minhash_dedup_v1
    params: {{threshold: 0.7}}
{extra}"""


def _inputs(s3, n_files: int, n_docs: int) -> str:
    """``n_files`` files of ``n_docs`` 40-word documents, with exact copies and near copies (one word
    changed) of earlier files' documents; uploaded to the bucket. Returns the input URL prefix."""
    rng = np.random.default_rng(0)
    docs = [[" ".join(rng.choice(WORDS, 40)) for _ in range(n_docs)] for _ in range(n_files)]
    for f in range(1, n_files):
        docs[f][:3] = docs[f - 1][3:6]  # exact copies
        for i in range(3, 6):  # near copies
            words = docs[f - 1][i + 3].split()
            words[7] = "meadow"
            docs[f][i] = " ".join(words)
    for f, texts in enumerate(docs):
        body = "".join(json.dumps({"id": f"f{f}-{i}", "text": t}) + "\n" for i, t in enumerate(texts))
        s3.fs.pipe_file(f"{s3.bucket}/in/part-{f}.jsonl", body.encode())
    return f"s3://{s3.bucket}/in"


def _target(s3) -> str:
    """A ``target:`` section over a target sample in the bucket (documents of the first half of the
    vocabulary), for dsir_v1, which the driver fits and every node applies."""
    rng = np.random.default_rng(1)
    texts = [" ".join(rng.choice(WORDS[:7], 40)) for _ in range(20)]
    body = "".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    s3.fs.pipe_file(f"{s3.bucket}/target/target.jsonl", body.encode())
    return f"target:\n  path: s3://{s3.bucket}/target/target.jsonl\n  raw_docs: 60\n"


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory, s3_endpoint):
    """A head without CPUs (the driver's node: no task or actor runs there) and one worker node with a
    logical GPU (``--num-gpus 1``, no CUDA), sharing no files: every task runs where the driver's disk is
    out of reach, and the proxy phase sees a cluster with a GPU its driver does not have."""
    with start_private_cluster(
        tmp_path_factory, s3_endpoint, workers=1, head_cpus=0, gpu_workers=1
    ) as cluster:
        yield cluster


def test_the_nodes_share_no_files(private_cluster, tmp_path: Path) -> None:
    """The harness itself: the head's /tmp is not the test's, and a worker node's is not the head's."""
    (tmp_path / "mine").write_text("x")
    r = subprocess.run(
        on_head(private_cluster, ["sh", "-c", f"ls {tmp_path}/mine; ls -d {private_cluster['temp_dir']}-w0"]),
        capture_output=True,
        text=True,
    )
    assert "No such file" in r.stderr
    assert r.stderr.count("No such file") == 2, r.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_a_node_lost_between_the_dedups_on_nodes_that_share_no_disk(
    tmp_path_factory, s3_endpoint, s3
) -> None:
    """Three nodes sharing no files; a worker node killed (its raylet SIGKILLed) while the segment between
    the exact and the MinHash dedup runs (slowed by a test transform): the output equals the inline run's."""
    src = _inputs(s3, n_files=8, n_docs=40)
    sleepy = PIPELINE.replace(
        "  - dedup: minhash_dedup_v1", "  - transform: sleepy_test_v1\n  - dedup: minhash_dedup_v1"
    )
    inline = run_pipeline(
        parse_pipeline(PIPELINE.format(inp=src, extra="")), f"s3://{s3.bucket}/inline", engine=InlineEngine()
    )
    with start_private_cluster(tmp_path_factory, s3_endpoint, workers=2) as cluster:
        prog = (sys.executable, "-c", slow_main(0.5))
        proc = cluster_run(cluster, sleepy.format(inp=src, extra=""), f"s3://{s3.bucket}/cluster", prog)
        segment = f"{s3.bucket}/cluster/_work/s2"
        remove_worker_when(
            cluster,
            proc,
            lambda: s3.fs.exists(segment) and len(s3.fs.glob(f"{segment}/done-*.json", refresh=True)) >= 3,
        )
    m = json.loads(s3.fs.cat_file(f"{s3.bucket}/cluster/manifest.json"))
    assert m["engine"]["nodes"] == 3
    assert outputs(m) == outputs(inline)


COSTLY_MAIN = """
import sys, time, uuid
import ray
from curate.io.readers import JsonlSource
from curate.io.storage import Location
from curate.core.registry import SOURCES, STAGES
from curate.core.stage import Transform

def mark(url, **fields):
    fields["node"] = ray.get_runtime_context().get_node_id()
    Location.of(url).child(f"{uuid.uuid4().hex}.json").write_json(fields)

@SOURCES.add("jsonl_costly_test")
class CostlyJsonl(JsonlSource):
    '''Test-only: JSONL read as a costly source (the target scan keeps its shards' batches for segment 0);
    every read of a shard leaves a mark (shard, node) in the bucket, so that the test counts them.'''
    costly_read = True

    def read(self, shard):
        time.sleep(READ_SLEEP_S)
        mark(BUCKET_URL + "/reads", shard=shard.key)
        yield from super().read(shard)

@STAGES.add("sleepy_test_v1")
class Sleepy(Transform):
    '''Test-only: a slow transform in segment 0 that marks where each part of which shard ran.'''
    def process(self, table):
        mark(BUCKET_URL + "/seg0", shards=sorted(set(table.column("source").to_pylist())))
        time.sleep(1.0)
        return table

from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _costly_main(s3, read_sleep_s: float = 0.0) -> tuple[str, ...]:
    """The curate CLI with the test-only costly source and sleepy transform, marking into ``s3``'s bucket."""
    script = COSTLY_MAIN.replace("BUCKET_URL", repr(f"s3://{s3.bucket}")).replace(
        "READ_SLEEP_S", repr(read_sleep_s)
    )
    return (sys.executable, "-c", script)


def _marks(s3, folder: str) -> list[dict]:
    """The marks the test-only source (``reads``) or transform (``seg0``) left in the bucket."""
    if not s3.fs.exists(f"{s3.bucket}/{folder}"):
        return []
    return [json.loads(s3.fs.cat_file(p)) for p in s3.fs.ls(f"{s3.bucket}/{folder}", refresh=True)]


KEEP_MAIN = """
import sys

import pyarrow as pa

from curate.io import shardcache
from curate.io.sources import Shard

shardcache.write(sys.argv[1], Shard(2, sys.argv[2], "part-2"), [pa.table({"x": [1, 2]}), pa.table({"x": [3]})])
"""


def test_batches_one_process_kept_in_the_bucket_another_reads(s3, tmp_path: Path) -> None:
    """The fast half of the node-loss test below: the shard cache lives in the run's bucket, not on the
    keeping node. A process in its own folder (as a node with its own disk) keeps a shard's batches under
    ``_work/source`` in the bucket and leaves no file in its folder; this process, which shares no folder
    with it, reads them back, and only for that shard."""
    from curate.io import shardcache
    from curate.io.sources import Shard

    cache = shardcache.folder(f"s3://{s3.bucket}/run/_work")
    node = tmp_path / "node"
    node.mkdir()
    env = {**s3.env, "CURATE_STAGE": str(node / "stage"), "PYTHONPATH": str(Path(__file__).parents[2])}
    src = f"s3://{s3.bucket}/in/part-2.jsonl"
    r = subprocess.run(
        [sys.executable, "-c", KEEP_MAIN, cache, src], cwd=node, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert list(node.rglob("*")) == []  # nothing kept on the keeping node's disk
    got = shardcache.batches(cache, Shard(2, src, "part-2"))
    assert got is not None
    assert [t.column("x").to_pylist() for t in got] == [[1, 2], [3]]
    assert shardcache.batches(cache, Shard(3, src, "part-3")) is None


@pytest.mark.ray
@pytest.mark.slow
def test_a_node_lost_in_segment_0_another_reads_the_batches_it_kept(
    tmp_path_factory, s3_endpoint, s3
) -> None:
    """The shard cache across nodes: two worker nodes that share no files scan a costly source (each keeps
    the batches of the shards it scanned in the bucket); one is killed (its raylet SIGKILLed) while segment
    0 runs, so the survivor runs the rest of segment 0, reading batches the lost node kept. Every shard is
    still read from the source exactly once, at least one shard's segment 0 ran on the other node than its
    scan, and the output equals the inline run's."""
    src = _inputs(s3, n_files=8, n_docs=40)
    base = PIPELINE.format(inp=src, extra="  - score: dsir_v1\n") + _target(s3)
    inline = run_pipeline(parse_pipeline(base), f"s3://{s3.bucket}/inline", engine=InlineEngine())
    slow = base.replace("format: jsonl", "format: jsonl_costly_test").replace(
        "  - dedup: exact_dedup_v1", "  - transform: sleepy_test_v1\n  - dedup: exact_dedup_v1"
    )
    # reads slow enough that the scan uses both nodes
    prog = _costly_main(s3, read_sleep_s=0.5)
    with start_private_cluster(tmp_path_factory, s3_endpoint, workers=2, head_cpus=0) as cluster:
        proc = cluster_run(cluster, slow, f"s3://{s3.bucket}/cluster", prog)
        # kill a node once a part of segment 0 began (the sleepy transform's first mark)
        remove_worker_when(cluster, proc, lambda: bool(_marks(s3, "seg0")))

    m = json.loads(s3.fs.cat_file(f"{s3.bucket}/cluster/manifest.json"))
    assert outputs(m) == outputs(inline)
    scans = _marks(s3, "reads")
    assert sorted(r["shard"] for r in scans) == sorted({r["shard"] for r in scans})  # each read once
    assert len(scans) == 8
    scanned_on = {r["shard"]: r["node"] for r in scans}
    assert len(set(scanned_on.values())) == 2  # both worker nodes scanned (and kept) shards
    crossed = {k for p in _marks(s3, "seg0") for k in p["shards"] if p["node"] != scanned_on[k]}
    assert crossed, "no shard's segment 0 ran on another node than its scan"
    assert not s3.fs.exists(f"{s3.bucket}/cluster/_work/source")


PROXY = """\
proxy:
  model: proxy_tiny
  budget: 2048
  seeds: 1
  tokenizer: {vocab_size: 300}
  recipes:
    raw: {from: raw}
    curated: {from: kept}
  controls: []
  eval:
    - {name: heldout, holdout: 0.2}
  train: TRAIN
  n_boot: 20
"""


def _bpb(results: dict[str, dict]) -> dict[str, dict]:
    return {run: r["final_bpb"] for run, r in results.items()}


@pytest.mark.ray
def test_dedup_and_proxy_on_nodes_that_share_no_disk_equal_the_inline_run(
    private_cluster, s3, tmp_path: Path
) -> None:
    """Exact + MinHash dedup and a target-aware scorer (dsir_v1, fitted by the driver), then the proxy
    phase and an export, on a worker node that cannot see the driver's disk (the head has no CPUs), run
    directory and input in a bucket. The global stages' scratch goes to the bucket beside the parts, and
    so does the scorer's fit, which the worker node fetches from there; kept/ and rejected/ equal the
    inline run's, digest for digest.

    The input is read as a costly source (the test-only ``jsonl_costly_test``, which marks every read of a
    shard in the bucket): the shard cache (curate.io.shardcache) without a shared disk. The target scan,
    on the worker node, keeps each shard's batches under the run directory's ``_work/source/`` in the
    bucket; segment 0 reads them from there instead of the source, and the driver (on the head, which sees
    neither the worker's disk nor its files) deletes them once segment 0 is done. Every shard is read from
    the source exactly once, and the output equals the inline run's over the plain JSONL source, which
    reads every shard twice.

    The proxy phase there: shard tasks read kept/ and rejected/ from the bucket and upload their shards;
    training tasks fetch their shards into the worker's own cache and upload their run folders. Every run is
    SIGKILLed once, right after its step-8 checkpoint (``faults``): Ray retries it, and since each attempt
    starts from an empty working folder and the fault would fire again from any earlier step, finishing
    shows the run resumed from the checkpoint it had uploaded. bpb equals the inline run's (training is
    deterministic given the seed), and the driver's mirror holds the curves but no model weights. The
    export (memmap, tokenized on the worker node) equals the inline run's, file for file.

    One cluster run proves all three (each cluster run costs a driver, a dedup and a dsir fit on the
    worker node): the shard cache, the dedups and scorer, and the phases."""
    from tests.proxy.toy import TINY_TRAIN

    src = _inputs(s3, n_files=4, n_docs=30)
    base = PIPELINE.format(inp=src, extra="  - score: dsir_v1\n") + _target(s3)
    base += "export: {formats: [memmap], tokenizer: proxy}\n"  # tokenized on the worker node
    local_yaml = base + PROXY.replace("TRAIN", json.dumps(TINY_TRAIN))
    killed = dict(TINY_TRAIN, faults={7: "kill"})  # after the checkpoint at step 8 (ckpt_every: 4)
    cluster_yaml = base + PROXY.replace("TRAIN", json.dumps(killed).replace('{"7": "kill"}', "{7: kill}"))
    costly_yaml = cluster_yaml.replace("format: jsonl", "format: jsonl_costly_test")
    assert costly_yaml != cluster_yaml
    inline = run_pipeline(
        parse_pipeline(local_yaml), tmp_path / "inline", engine=InlineEngine(progress=False)
    )
    assert inline["removed_by_reason"]["exact_dedup_v1:duplicate"] >= 9
    assert inline["removed_by_reason"]["minhash_dedup_v1:near_duplicate"] >= 3
    runs = ["raw/seed0", "curated/seed0"]
    want = {r: json.loads((tmp_path / "inline" / "proxy" / r / "result.json").read_text()) for r in runs}
    proc = cluster_run(private_cluster, costly_yaml, f"s3://{s3.bucket}/cluster", _costly_main(s3))
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    root = f"{s3.bucket}/cluster"
    m = json.loads(s3.fs.cat_file(f"{root}/manifest.json"))
    assert m["engine"]["nodes"] == 2
    assert outputs(m) == outputs(inline)
    # the shard cache: every shard read from the source once (the scan's reads; segment 0 read the kept
    # batches), and the kept batches deleted once segment 0 was done
    assert sorted(r["shard"] for r in _marks(s3, "reads")) == [f"part-{i}.jsonl" for i in range(4)]
    assert not s3.fs.exists(f"{root}/_work/source")
    # the global stages' scratch went to the bucket, beside the parts
    assert s3.fs.exists(f"{root}/_work/g0.state.pkl")
    assert s3.fs.glob(f"{root}/_work/g1/minhash_dedup_v1.cc/drops/p*.parquet")
    # ... and so did the target-aware scorer's fit, which the worker node fetched from there
    assert s3.fs.glob(f"{root}/target/dsir_v1-*/dsir.npz")
    assert m["stages"]
    got = {r: json.loads(s3.fs.cat_file(f"{root}/proxy/{r}/result.json")) for r in runs}
    assert _bpb(got) == _bpb(want)
    # each run was killed once and resumed from the checkpoint it had uploaded: its worker said so in the
    # worker node's Ray session logs (workers' lines stay there, not forwarded to the driver)
    logs = f"{private_cluster['temp_dir']}-w0/session_latest/logs"
    worker_log = subprocess.run(
        on_worker(private_cluster, 0, ["sh", "-c", f"cat {logs}/worker-*"]),
        capture_output=True,
        text=True,
    ).stdout
    for r in runs:
        assert f"proxy/{r}: an earlier attempt stopped; resuming from its stored checkpoint" in worker_log
    assert [g["steps"] for g in got.values()] == [w["steps"] for w in want.values()]
    # the phase's GPU decision: the cluster has a GPU (the CPU-only driver does not), so every run asked
    # Ray for proxy.gpu_fraction of one and got it on the GPU worker; its torch has no CUDA, which it says
    assert [(g["device"], g["gpu_assigned_without_cuda"]) for g in got.values()] == [("cpu", True)] * 2
    assert [w["gpu_assigned_without_cuda"] for w in want.values()] == [False, False]
    assert "kill" in parse_pipeline(cluster_yaml).raw["proxy"]["train"]["faults"][7]
    # the run folders are in the bucket: weights, curves; no checkpoint left behind
    for r in runs:
        assert s3.fs.exists(f"{root}/proxy/{r}/model/curate-manifest.json")
        assert s3.fs.exists(f"{root}/proxy/{r}/metrics.jsonl")
        assert not s3.fs.exists(f"{root}/proxy/{r}/ckpt.pt")
    mirror = subprocess.run(
        on_head(private_cluster, ["sh", "-c", "cd /tmp/home/.cache/curate/stage && find . -type f"]),
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sum(f.endswith("/raw/seed0/metrics.jsonl") for f in mirror) == 1, mirror
    assert not [f for f in mirror if "/model/" in f or f.endswith("ckpt.pt")]
    exp = json.loads(s3.fs.cat_file(f"{root}/export/manifest.json"))
    local_exp = json.loads((tmp_path / "inline" / "export" / "manifest.json").read_text())
    assert [(f["path"], f["sha256"]) for f in exp["files"]] == [
        (f["path"], f["sha256"]) for f in local_exp["files"]
    ]
    goodput = json.loads(s3.fs.cat_file(f"{root}/goodput.json"))
    assert set(goodput["recipes"]) == {"raw", "curated"}
    assert m["phases"]["proxy"]["runs"] == 2
