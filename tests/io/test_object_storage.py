"""Object storage: a pipeline whose input, run directory and export are s3:// URLs, on a real S3 endpoint
(moto's server on loopback), gives the same bytes as a local run; credentials stay out of every output;
bad buckets, credentials, listings and objects fail in one line naming the URL; nothing half-written is
taken as done; names built from data cannot leave the run directory."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curate.core.engine import InlineEngine
from curate.io.storage import Location, StorageError, redact
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import S3_KEY_ID, S3_SECRET, slow_main
from tests.io.s3_runs import pipeline, s3_json, write_inputs

ROOT = Path(__file__).resolve().parents[2]


def upload_dir(s3, local: Path, prefix: str) -> str:
    for f in sorted(local.iterdir()):
        s3.fs.put_file(str(f), f"{s3.bucket}/{prefix}/{f.name}")
    return f"s3://{s3.bucket}/{prefix}"


def cli(args: list[str], env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "curate", *args],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )


def outputs(m: dict) -> dict:
    return {"outputs": m["outputs"], "accounting": m["accounting"], "removed": m["removed_by_reason"]}


# -- the whole path, embedded Ray in its private network namespace ---------------------------------------
@pytest.mark.ray
def test_s3_run_equals_local_run_and_keeps_credentials_out(s3, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in")
    export = "export: {formats: [parquet], val_fraction: 0.1}\n"
    local = run_pipeline(
        parse_pipeline(pipeline(f"{tmp_path}/in/*", export)), tmp_path / "local", engine=InlineEngine()
    )
    src = upload_dir(s3, tmp_path / "in", "corpus")
    (tmp_path / "p.yaml").write_text(pipeline(f"{src}/*", export))
    env = {**s3.env, "CURATE_STAGE": str(tmp_path / "stage")}
    r = cli(["run", str(tmp_path / "p.yaml"), "--output", f"s3://{s3.bucket}/runs/web", "-q"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    remote = s3_json(s3, "runs/web/manifest.json")
    assert outputs(remote) == outputs(local)
    assert remote["engine"]["kind"] == "ray"
    # The export went to the bucket too, byte-identical, its manifest written last.
    exp = s3_json(s3, "runs/web/export/manifest.json")
    local_exp = json.loads((tmp_path / "local" / "export" / "manifest.json").read_text())
    assert [f["sha256"] for f in exp["files"]] == [f["sha256"] for f in local_exp["files"]]
    for f in exp["files"]:
        assert s3.fs.size(f"{s3.bucket}/runs/web/export/{f['path']}") == f["bytes"]
    # No credential anywhere: objects, the local stage, the command's output.
    texts = [r.stdout, r.stderr]
    texts += [s3.fs.cat_file(k).decode("latin-1") for k in s3.fs.find(s3.bucket)]
    texts += [p.read_bytes().decode("latin-1") for p in (tmp_path / "stage").rglob("*") if p.is_file()]
    assert len(texts) > 20
    assert not [t for t in texts if S3_SECRET in t or S3_KEY_ID in t]


# -- resume: only committed units count ----------------------------------------------------------------------
def test_s3_resume_redoes_uncommitted_and_truncated_parts(s3, tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline(f"{upload_dir(s3, tmp_path / 'in', 'in')}/*"))
    out = f"s3://{s3.bucket}/run"
    whole = run_pipeline(cfg, out, engine=InlineEngine(progress=False))
    # Take the run back to "killed": no manifest, no final outputs, one unit without its marker (its
    # files written but not committed) and one committed unit whose part lost its tail.
    fs, run = s3.fs, f"{s3.bucket}/run"
    for k in fs.find(f"{run}/kept") + fs.find(f"{run}/rejected") + [f"{run}/manifest.json"]:
        fs.rm_file(k)
    fs.rm_file(f"{run}/_work/s0/done-00001.json")
    part = sorted(fs.glob(f"{run}/_work/s0/p00002-*.parquet"))[0]
    fs.pipe_file(part, fs.cat_file(part)[:100])
    with caplog.at_level(logging.WARNING, logger="curate.runtime.runner"):
        again = run_pipeline(cfg, out, engine=InlineEngine(progress=False))
    assert outputs(again) == outputs(whole)
    assert "missing or of another size; redoing unit 00002" in caplog.text
    assert fs.size(part) > 100


@pytest.mark.parametrize(
    ("n_files", "n_docs", "kill_after"),
    [
        (4, 40, 2),  # in `make test`: 12 parts after the dedup, killed after 2 (~10 s)
        pytest.param(12, 60, 4, marks=pytest.mark.slow),  # 48 parts, killed after 4
    ],
)
def test_s3_kill_mid_run_and_resume_gives_identical_output(
    s3, tmp_path: Path, n_files: int, n_docs: int, kill_after: int
) -> None:
    write_inputs(tmp_path / "in", n_files=n_files, n_docs=n_docs)
    src = upload_dir(s3, tmp_path / "in", "in")
    (tmp_path / "p.yaml").write_text(pipeline(f"{src}/*", "  - transform: sleepy_test_v1\n"))
    (tmp_path / "slow_main.py").write_text(SLOW_MAIN)
    env = {**s3.env, "PYTHONPATH": str(ROOT), "CURATE_STAGE": str(tmp_path / "stage")}

    def cmd(out: str) -> list[str]:
        return [
            sys.executable,
            str(tmp_path / "slow_main.py"),
            "run",
            str(tmp_path / "p.yaml"),
            "--output",
            out,
            "--engine",
            "inline",
            "-q",
        ]

    subprocess.run(cmd(f"s3://{s3.bucket}/whole"), check=True, env=env, capture_output=True, timeout=600)
    proc = subprocess.Popen(
        cmd(f"s3://{s3.bucket}/killed"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    segment = f"{s3.bucket}/killed/_work/s1"  # after the dedup: 3 parts per file, 0.3 s each
    n_parts = 3 * n_files

    def n_done() -> int:
        return len(s3.fs.glob(f"{segment}/done-*.json", refresh=True)) if s3.fs.exists(segment) else 0

    deadline = time.time() + 300
    while time.time() < deadline and n_done() < kill_after:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert kill_after <= n_done() < n_parts, "the run was not interrupted mid-way"
    assert not s3.fs.exists(f"{s3.bucket}/killed/manifest.json")
    subprocess.run(cmd(f"s3://{s3.bucket}/killed"), check=True, env=env, capture_output=True, timeout=600)
    assert outputs(s3_json(s3, "killed/manifest.json")) == outputs(s3_json(s3, "whole/manifest.json"))


SLOW_MAIN = slow_main(0.3)


# -- bad input: one line naming the URL ---------------------------------------------------------------------
def _one_line_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("curate run: error: "), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_bad_buckets_credentials_and_listings_fail_in_one_line(s3, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=1)
    src = upload_dir(s3, tmp_path / "in", "in")
    env = {**s3.env, "CURATE_STAGE": str(tmp_path / "stage")}

    def run(inp: str, out: str, env: dict[str, str] = env) -> subprocess.CompletedProcess:
        (tmp_path / "p.yaml").write_text(pipeline(inp))
        return cli(["run", str(tmp_path / "p.yaml"), "--output", out, "--engine", "inline", "-q"], env)

    _one_line_error(
        run("s3://no-such-bucket-x/in/*.jsonl", str(tmp_path / "o1")),
        "s3://no-such-bucket-x/in/*.jsonl",
        "does not exist",
    )
    _one_line_error(
        run(f"{src}/*", "s3://no-such-bucket-y/run"), "s3://no-such-bucket-y/run", "does not exist"
    )
    _one_line_error(
        run(f"s3://{s3.bucket}/nothing-here/*.jsonl", str(tmp_path / "o2")),
        f"s3://{s3.bucket}/nothing-here/*.jsonl",
        "matched no input files",
    )
    no_creds = {
        k: v for k, v in env.items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")
    }
    no_creds.update(
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none")
    )
    _one_line_error(run(f"{src}/*", str(tmp_path / "o3"), no_creds), f"{src}/*", "no credentials")
    # Nothing was taken as started or done in the bad output location, nor locally.
    assert not (tmp_path / "o1").exists() or not any((tmp_path / "o1").rglob("manifest.json"))


def test_a_truncated_object_is_quarantined_with_its_url(s3, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    write_inputs(tmp_path / "in", n_files=2)
    whole = (tmp_path / "in" / "in-0.jsonl.gz").read_bytes()
    (tmp_path / "in" / "in-0.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    src = upload_dir(s3, tmp_path / "in", "in")
    m = run_pipeline(
        parse_pipeline(pipeline(f"{src}/*")), f"s3://{s3.bucket}/run", engine=InlineEngine(progress=False)
    )
    assert m["accounting"]["balanced"]
    assert m["removed_by_reason"]["quarantine:truncated_file"] == 1
    from curate.io.storage import read_parquet

    rej = [
        r
        for f in Location.of(f"s3://{s3.bucket}/run/rejected").glob("part-*.parquet")
        for r in read_parquet(f).to_pylist()
    ]
    (row,) = [r for r in rej if r["reason"] == "quarantine:truncated_file"]
    assert row["detail"].startswith(f"{src}/in-0.jsonl.gz: stopped after line ")


# -- names cannot leave the run directory; URLs lose their credentials -----------------------------------
@pytest.mark.parametrize("parts", [("..", "x"), ("a", "..", "..", "b"), ("/etc/passwd",), ("s3://other/k",)])
def test_location_children_cannot_leave(parts: tuple[str, ...]) -> None:
    for root in ("s3://bucket/run", "/tmp/run"):
        with pytest.raises(StorageError, match="outside"):
            Location.of(root).child(*parts)
    assert (
        Location.of("s3://bucket/run").child("kept", "part-1.parquet").url
        == "s3://bucket/run/kept/part-1.parquet"
    )


def test_redact_removes_userinfo() -> None:
    assert redact("s3://KEY:SECRET@bucket/run") == "s3://bucket/run"
    assert redact("/local/path") == "/local/path"
    assert redact("cannot read s3://K:S@b/x: gone") == "cannot read s3://b/x: gone"
    from curate.io.storage import redact_all

    assert redact_all({"input": {"path": "s3://K:S@b/in/*"}, "n": [1, "gs://a:b@c/d"]}) == {
        "input": {"path": "s3://b/in/*"},
        "n": [1, "gs://c/d"],
    }
    assert str(Location.of("s3://KEY:SECRET@bucket/run")) == "s3://bucket/run"


def test_local_runs_are_unchanged(tmp_path: Path, monkeypatch) -> None:
    """A local run directory gets no stage, no scratch elsewhere: everything under it, as before."""
    write_inputs(tmp_path / "in", n_files=2)
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    run_pipeline(parse_pipeline(pipeline(f"{tmp_path}/in/*")), tmp_path / "run", engine=InlineEngine())
    assert (tmp_path / "run" / "_work" / "g0.state.pkl").exists()
    assert not (tmp_path / "stage").exists()


def test_run_dir_verbs_take_a_bucket_url(s3, tmp_path: Path, monkeypatch) -> None:
    """`curate inspect`, `select` and `export` on s3:// work on a local mirror and upload what they write."""
    from curate.cli import main

    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    write_inputs(tmp_path / "in", n_files=2)
    out = f"s3://{s3.bucket}/run"
    run_pipeline(
        parse_pipeline(pipeline(f"{tmp_path}/in/*")), out, engine=InlineEngine(progress=False), phases=False
    )
    assert main(["inspect", out, "--n", "1"]) == 0
    assert main(["select", out, "--output", str(tmp_path / "reselected")]) == 0
    assert json.loads((tmp_path / "reselected" / "manifest.json").read_text())["accounting"]["balanced"]
    assert main(["export", out, "--format", "parquet"]) == 0
    exp = s3_json(s3, "run/export/manifest.json")
    assert exp["files"]
    assert all(s3.fs.exists(f"{s3.bucket}/run/export/{f['path']}") for f in exp["files"])


# -- a cluster that looks like production: head + 2 workers, run directory in the bucket, a node lost ---
@pytest.fixture(scope="module")
def s3_cluster(tmp_path_factory, s3_endpoint):
    from tests.ray_cluster import start_local_cluster

    _, env = s3_endpoint
    aws = {k: v for k, v in env.items() if k.startswith("AWS_")}
    with start_local_cluster(
        tmp_path_factory.mktemp("auth"), workers=2, prefix="r3", extra_env=aws
    ) as cluster:
        yield cluster


@pytest.mark.slow
@pytest.mark.ray
def test_cluster_run_on_s3_survives_a_lost_worker_and_equals_embedded(s3, tmp_path: Path, s3_cluster) -> None:
    from tests.ray_cluster import remove_worker_when

    write_inputs(tmp_path / "in", n_files=8, n_docs=60)
    src = upload_dir(s3, tmp_path / "in", "in")
    (tmp_path / "p.yaml").write_text(pipeline(f"{src}/*", "  - transform: sleepy_test_v1\n"))
    (tmp_path / "slow_main.py").write_text(SLOW_MAIN)
    env = {**s3_cluster["env"], "CURATE_STAGE": str(tmp_path / "stage")}

    def cmd(out: str, *extra: str) -> list[str]:
        script, pipe = str(tmp_path / "slow_main.py"), str(tmp_path / "p.yaml")
        return [sys.executable, script, "run", pipe, "--output", out, "-q", *extra]

    embedded = subprocess.run(
        cmd(f"s3://{s3.bucket}/embedded"),
        env={**s3.env, "PYTHONPATH": str(ROOT), "CURATE_STAGE": str(tmp_path / "st0")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    proc = subprocess.Popen(
        cmd(f"s3://{s3.bucket}/cluster", "--address", s3_cluster["address"]),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    segment = f"{s3.bucket}/cluster/_work/s1"
    remove_worker_when(
        s3_cluster,
        proc,
        lambda: s3.fs.exists(segment) and len(s3.fs.glob(f"{segment}/done-*.json", refresh=True)) >= 3,
    )
    m = s3_json(s3, "cluster/manifest.json")
    assert m["engine"]["address"] == s3_cluster["address"]
    assert outputs(m) == outputs(s3_json(s3, "embedded/manifest.json"))


def test_model_and_eval_files_are_fetched_from_the_bucket(s3, tmp_path: Path, monkeypatch) -> None:
    """Loaders that open files by path (fastText, tokenizers, eval sets) get a cached local copy,
    fetched again when the object changes; a model's manifest comes along."""
    from curate.dedup.decontam import load_eval_items
    from curate.io.storage import local_copy

    monkeypatch.setenv("CURATE_CACHE", str(tmp_path / "cache"))
    s3.fs.pipe_file(f"{s3.bucket}/models/q.ftz", b"weights-1")
    s3.fs.pipe_file(f"{s3.bucket}/models/q.manifest.json", b"{}")
    url = f"s3://{s3.bucket}/models/q.ftz"
    first = Path(local_copy(url, also=(f"s3://{s3.bucket}/models/q.manifest.json",)))
    assert first.read_bytes() == b"weights-1"
    assert (first.parent / "q.manifest.json").exists()
    assert local_copy(url) == str(first)  # cached
    s3.fs.pipe_file(f"{s3.bucket}/models/q.ftz", b"weights-2")
    assert Path(local_copy(url)).read_bytes() == b"weights-2"
    s3.fs.pipe_file(f"{s3.bucket}/evals/boolq.jsonl", b'{"question": "is the sky blue", "answer": "yes"}\n')
    names, fields = load_eval_items([f"s3://{s3.bucket}/evals/*.jsonl"])
    assert names == ["boolq:0"]
    assert "is the sky blue" in fields[0]
    with pytest.raises(StorageError, match=f"s3://{s3.bucket}/models/missing.ftz: no such object"):
        local_copy(f"s3://{s3.bucket}/models/missing.ftz")
