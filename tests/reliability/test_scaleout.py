"""Scale-out: a local cluster of a head and TWO worker nodes (token auth) runs the web pipeline via
``ray job submit``; kept/ and rejected/ equal the embedded run's, byte for byte (manifest digests).

The cluster's processes are found by its private temp dir and stopped at the end (never ``ray stop``:
other Ray sessions share this machine).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import corpora_path
from tests.ray_cluster import start_local_cluster, submit_job

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

WEB_PIPELINE = """\
name: web_scaleout
input: {{path: '{inp}/*.jsonl', format: jsonl, batch_docs: 100}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
  - dedup: minhash_dedup_v1
"""


@pytest.fixture(scope="module")
def three_node_cluster(tmp_path_factory):
    with start_local_cluster(tmp_path_factory.mktemp("auth"), workers=2, prefix="rs") as cluster:
        yield cluster


def _web_inputs(d: Path) -> None:
    """600 real web documents in 3 files, plus exact and near copies across files."""
    d.mkdir(parents=True)
    docs = []
    for name in ("c4_en.jsonl.gz", "webtext.jsonl.gz", "news.jsonl.gz"):
        with gzip.open(corpora_path("web", name), "rt") as f:
            docs.append([json.loads(next(f)) for _ in range(200)])
    docs[1][:20] = [dict(r, id=f"copy-{r['id']}") for r in docs[0][:20]]
    docs[2][:20] = [dict(r, id=f"near-{r['id']}", text=r["text"] + " Read more.") for r in docs[0][20:40]]
    for i, rows in enumerate(docs):
        (d / f"web-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _outputs(run: Path) -> dict:
    m = json.loads((run / "manifest.json").read_text())
    return {"outputs": m["outputs"], "accounting": m["accounting"], "removed": m["removed_by_reason"]}


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.corpora
def test_three_node_job_submit_equals_embedded_run(tmp_path: Path, three_node_cluster) -> None:
    _web_inputs(tmp_path / "in")
    (tmp_path / "web.yaml").write_text(WEB_PIPELINE.format(inp=tmp_path / "in"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "curate",
            "run",
            str(tmp_path / "web.yaml"),
            "--output",
            str(tmp_path / "embedded"),
            "--engine",
            "ray",
            "-q",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    embedded = _outputs(tmp_path / "embedded")
    assert embedded["removed"]["exact_dedup_v1:duplicate"] >= 20
    assert embedded["removed"]["minhash_dedup_v1:near_duplicate"] >= 15

    entry = f"{sys.executable} -m curate run {tmp_path / 'web.yaml'} --output {tmp_path / 'job'} -q"
    r = submit_job(three_node_cluster, entry, wait_s=100)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    m = json.loads((tmp_path / "job" / "manifest.json").read_text())
    assert m["engine"]["nodes"] == 3
    assert m["engine"]["num_workers"] == 3
    assert _outputs(tmp_path / "job") == embedded


@pytest.mark.ray
@pytest.mark.slow
def test_cluster_refuses_a_client_without_the_token(three_node_cluster) -> None:
    env = {k: v for k, v in three_node_cluster["env"].items() if not k.startswith("RAY_AUTH_TOKEN")}
    r = subprocess.run(
        [str(BIN / "ray"), "job", "list", "--address", three_node_cluster["dashboard"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0
    assert "token" in (r.stdout + r.stderr).lower()
    ok = subprocess.run(
        [str(BIN / "ray"), "job", "list", "--address", three_node_cluster["dashboard"]],
        env=three_node_cluster["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
