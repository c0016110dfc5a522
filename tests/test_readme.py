"""Every command and Python example in README.md runs.

The commands are taken from the README's ```bash blocks as written, with two changes made here: `runs/`
points into a temporary directory, and `curate run` gets `--set input.limit=12 --engine inline
--no-phases` (12 documents per input file, no Ray start; `curate report` and `curate export` are examples
of their own) so the examples run in seconds. Examples that need a cluster or
are the test suite itself are listed in SKIPPED with the test that covers them; a README example that is
neither run nor listed fails `test_every_readme_command_is_covered`.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SKIPPED = {
    "make curate": "the demo itself (minutes of proxy training; timed in BENCHMARKS.md)",
    "make test": "this test suite",
    "source .venv/bin/activate": "the test runs the environment's own python",
    "curate train-classifier models/quality_fasttext.yaml": "trains fastText for minutes: tests/scorers/test_classify.py",
    "curate proxy runs/web": "trains proxy LMs for minutes: tests/proxy/test_phase.py, tests/test_cli.py",
    "curate ablate runs/web": "trains proxy LMs for minutes: tests/proxy/test_ablate.py",
    "curate search runs/web --spec search.yaml": "trains proxy LMs for minutes: tests/proxy/test_search.py",
    "curate mix runs/web_mix": "trains proxy LMs for minutes: tests/proxy/test_mix.py, tests/proxy/test_mix_phase.py",
    "curate run pipelines/web.yaml --address 10.0.0.1:6379 --output /shared/runs/web": "tests/test_cluster.py",
    "ray job submit --address http://127.0.0.1:8265 --working-dir . -- curate run pipelines/web.yaml "
    "--output /shared/runs/web": (
        "tests/test_cluster.py::test_ray_job_submit_of_a_pipeline_with_proxy_and_target"
    ),
    "export AWS_PROFILE=curation": "needs a bucket: tests/io/test_object_storage.py (a loopback S3 endpoint)",
    "curate run pipelines/web.yaml --input 's3://my-corpus/web/*.jsonl.gz' --output s3://my-runs/web": (
        "tests/io/test_object_storage.py::test_s3_run_equals_local_run_and_keeps_credentials_out"
    ),
    "aws s3 ls s3://my-runs/web/": "the AWS CLI is not a dependency; tests/io/test_object_storage.py lists it",
}
# The local S3 example runs as one sequence against its own moto server: test_readme_local_s3_example.
LOCAL_S3 = [
    "moto_server -H 127.0.0.1 -p 5000 '&'",
    "export AWS_ENDPOINT_URL=http://127.0.0.1:5000 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test",
    "python -c 'import s3fs; s3fs.S3FileSystem().mkdir('\"'\"'my-runs'\"'\"')'",
    "curate run pipelines/web.yaml --output s3://my-runs/web-local",
    "curate inspect s3://my-runs/web-local",
]
SKIPPED.update({cmd: "tests/test_readme.py::test_readme_local_s3_example" for cmd in LOCAL_S3})


def readme_commands() -> list[str]:
    """Command lines of the README's bash blocks, comments removed."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(shlex.join(words) if words[0] != "RAY_ADDRESS=..." else line)
    return out


def _prepare(cmd: str, tmp: Path) -> list[str]:
    words = [w if "://" in w else w.replace("runs/", f"{tmp}/runs/") for w in shlex.split(cmd)]
    args = words[1:] if words[0] == "curate" else words[3:]  # "curate ..." or "python -m curate ..."
    words = [sys.executable, "-m", "curate", *args]
    if args[0] == "run":
        words += [
            "--set",
            "input.limit=12",
            "--set",
            "allow_empty=true",
            "--engine",
            "inline",
            "--no-phases",
            "-q",
        ]
    return words


def _run(cmd: str, tmp: Path) -> int:
    """Run ``cmd`` through ``curate.cli.main`` in this process (models and imports load once)."""
    from curate.cli import main

    try:
        return main(_prepare(cmd, tmp)[3:])
    except SystemExit as e:  # --help and --version exit through argparse
        return int(e.code or 0)


def test_every_readme_command_is_covered() -> None:
    cmds = readme_commands()
    assert "curate select runs/rt --set gopher_quality_v1.word_count.min=20 --output runs/rt-loose" in cmds
    for cmd in cmds:
        covered = cmd in SKIPPED or cmd.startswith(("curate ", "python -m curate"))
        assert covered, f"README example not run by tests/test_readme.py: {cmd}"


@pytest.mark.corpora
def test_readme_commands_run(tmp_path: Path, corpora, monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    ran = 0
    for cmd in readme_commands():
        if cmd in SKIPPED:
            continue
        code = _run(cmd, tmp_path)
        out = capsys.readouterr()
        assert code == 0, f"{cmd}\n{out.out[-2000:]}\n{out.err[-3000:]}"
        ran += 1
    assert ran == 13  # every README command not in SKIPPED: run x3, inspect x2, report, export x2, --help,
    # --version, select x2, plan
    assert (tmp_path / "runs" / "rt-loose" / "manifest.json").is_file()
    assert (tmp_path / "runs" / "web" / "export" / "megatron").is_dir()
    assert (tmp_path / "runs" / "web" / "export" / "parquet").is_dir()  # added, megatron kept


@pytest.mark.corpora
def test_readme_python_example_runs(tmp_path: Path, corpora) -> None:
    # the first block: the API example (the second, entering the private network namespace before
    # curate.run, is what test_security.py's probe runs)
    code, _ = re.findall(r"```python\n(.*?)```", README, re.S)
    code = code.replace('"runs/', f'"{tmp_path}/runs/')
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("{'input': ")
    assert "'balanced': True" in lines[0]
    # The printed table is the one the README shows in its comment.
    shown = re.search(r"^# (\[\{.*?\}\])$", code.replace("\n#  ", " "), re.M | re.S)
    assert shown is not None
    assert lines[1] == shown.group(1).replace("\n", "")


@pytest.mark.corpora
def test_readme_local_s3_example(tmp_path: Path, corpora) -> None:
    """The README's local S3 block, as written, on a free port: moto_server, the variables, the bucket,
    a run into it (limited as the other examples) and an inspect that prints URLs."""
    import os
    import socket

    assert [c for c in readme_commands() if c in LOCAL_S3] == LOCAL_S3
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    moto = Path(sys.executable).parent / "moto_server"
    server = subprocess.Popen(
        [str(moto), *(w.replace("5000", port) for w in shlex.split(LOCAL_S3[0])[1:] if w != "&")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        env = {**os.environ, "CURATE_STAGE": str(tmp_path / "stage"), "PYTHONPATH": str(ROOT)}
        for assignment in shlex.split(LOCAL_S3[1])[1:]:
            key, value = assignment.split("=", 1)
            env[key] = value.replace("5000", port)
        for _ in range(100):  # the server takes a moment to listen
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(port))) == 0:
                    break
            time.sleep(0.1)
        outs = []
        for cmd in LOCAL_S3[2:]:
            words = shlex.split(cmd)
            words = [sys.executable, *words[1:]] if words[0] == "python" else _prepare(cmd, tmp_path)
            r = subprocess.run(words, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
            outs.append(r.stdout)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert outs[1].startswith("run web_en -> s3://my-runs/web-local\n")
    assert outs[2].startswith("stage ")  # inspect's funnel table, read from the bucket
    assert str(tmp_path / "stage") not in outs[1] + outs[2]
