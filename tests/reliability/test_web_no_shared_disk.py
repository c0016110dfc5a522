"""The web recipe on a cluster that looks like production: three Ray nodes that share no files (each in
a mount namespace of its own), input and run directory in a bucket (a loopback S3), real web documents,
both dedups. kept/ and rejected/ equal the embedded run's, digest for digest, with and without a worker
node killed (its raylet SIGKILLed) while the MinHash dedup runs. Slow (minutes): `make test-all`."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import corpora_path, slow_main
from tests.ray_cluster import remove_worker
from tests.reliability.private_nodes import cluster_run, outputs, start_private_cluster

ROOT = Path(__file__).resolve().parents[2]
WEB = Path(__file__).resolve().parents[2] / "pipelines" / "web.yaml"
FILES = ("c4_en.jsonl.gz", "webtext.jsonl.gz", "news.jsonl.gz", "commoncrawl_2019.jsonl.gz")


def _web_inputs(s3, per_file: int = 150) -> str:
    """``per_file`` real documents from each of four web corpora, one file each, plus 20 exact copies and
    20 near copies (a sentence appended) of the first file's documents; uploaded. Returns the URL prefix."""
    docs = []
    for name in FILES:
        with gzip.open(corpora_path("web", name), "rt") as f:
            docs.append([json.loads(next(f)) for _ in range(per_file)])
    docs[1][:20] = [dict(r, id=f"copy-{r['id']}") for r in docs[0][:20]]
    docs[2][:20] = [dict(r, id=f"near-{r['id']}", text=r["text"] + " Read more.") for r in docs[0][20:40]]
    for i, rows in enumerate(docs):
        body = "".join(json.dumps(r) + "\n" for r in rows)
        s3.fs.pipe_file(f"{s3.bucket}/web/web-{i}.jsonl", body.encode())
    return f"s3://{s3.bucket}/web"


def _recipe(src: str, *, sleepy: bool = False) -> str:
    """pipelines/web.yaml on ``src`` in parts of 50 documents; ``sleepy``: a test transform after the
    MinHash dedup that sleeps per part, so the run is still going when a node is removed."""
    text = WEB.read_text().replace(
        "input: {path: ../shared/corpora/web/*.jsonl.gz, format: jsonl}",
        f"input: {{path: '{src}/*.jsonl', format: jsonl, batch_docs: 50}}",
    )
    assert src in text, "pipelines/web.yaml's input line changed; update this test"
    return text + ("  - transform: sleepy_test_v1\n" if sleepy else "")


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.corpora
def test_web_recipe_on_three_nodes_sharing_no_disk_equals_embedded_with_and_without_a_lost_node(
    tmp_path_factory, s3_endpoint, s3, tmp_path: Path
) -> None:
    src = _web_inputs(s3)
    yaml = _recipe(src)
    (tmp_path / "web.yaml").write_text(yaml)
    cmd = [sys.executable, "-m", "curate", "run", str(tmp_path / "web.yaml"), "-q", "--engine", "ray"]
    embedded = subprocess.run(
        [*cmd, "--output", f"s3://{s3.bucket}/embedded"],
        cwd=ROOT,
        env={**s3.env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    want = outputs(json.loads(s3.fs.cat_file(f"{s3.bucket}/embedded/manifest.json")))
    assert want["removed"]["exact_dedup_v1:duplicate"] >= 20
    assert want["removed"]["minhash_dedup_v1:near_duplicate"] >= 15
    with start_private_cluster(tmp_path_factory, s3_endpoint, workers=2) as cluster:
        t0 = time.time()
        proc = cluster_run(cluster, yaml, f"s3://{s3.bucket}/cluster")
        _out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        plain_s = time.time() - t0
        m = json.loads(s3.fs.cat_file(f"{s3.bucket}/cluster/manifest.json"))
        assert m["engine"]["nodes"] == 3
        assert outputs(m) == want
        # again, a worker node lost while the MinHash dedup runs: as soon as its first key table is in
        # the bucket (the MinHash collect has started), before its reduce and apply are done
        t0 = time.time()
        prog = (sys.executable, "-c", slow_main(0.5))
        proc = cluster_run(cluster, _recipe(src, sleepy=True), f"s3://{s3.bucket}/lost", prog)
        keys = f"{s3.bucket}/lost/_work/g1"
        deadline = time.time() + 600
        while time.time() < deadline and proc.poll() is None:
            if s3.fs.glob(f"{keys}/k*.parquet", refresh=True):
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before a node could be removed"
        assert not s3.fs.exists(f"{s3.bucket}/lost/_work/g1.state.pkl")  # the MinHash reduce is not done
        remove_worker(cluster, 1)
        _out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        lost_s = time.time() - t0
    m = json.loads(s3.fs.cat_file(f"{s3.bucket}/lost/manifest.json"))
    assert outputs(m) == want
    print(
        f"web recipe, 3 nodes sharing no disk: {plain_s:.0f} s; with a node lost mid-MinHash: {lost_s:.0f} s"
    )
