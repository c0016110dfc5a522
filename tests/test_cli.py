"""The command line: verbs discovered from subpackages, help with examples, embedded-runtime isolation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from curate.cli import _wants_embedded_ray, build_parser


def test_every_verb_is_registered_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    verbs = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert {"run", "inspect", "select", "report", "export", "proxy", "train-classifier"} <= verbs
    for verb in sorted(verbs):
        with pytest.raises(SystemExit):
            parser.parse_args([verb, "--help"])
        assert re.search(r"^examples?:$", capsys.readouterr().out, re.M), verb


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["run", "p.yaml"], {}, True),
        (["run", "p.yaml", "--engine", "ray"], {}, True),
        (["run", "p.yaml", "--engine", "inline"], {}, False),
        (["run", "p.yaml", "--engine=inline"], {}, False),
        (["run", "p.yaml", "--address", "10.0.0.1:6379"], {}, False),
        (["run", "p.yaml"], {"RAY_ADDRESS": "10.0.0.1:6379"}, False),
        (["inspect", "runs/x"], {}, False),
        ([], {}, False),
    ],
)
def test_only_an_embedded_run_enters_the_private_network(argv, env, expected, monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _wants_embedded_ray(argv) is expected


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from curate import __version__

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"curate {__version__}\n"


def test_a_cluster_that_wants_a_token_gives_one_line(monkeypatch) -> None:
    import ray

    from curate.core.engine import EngineError
    from curate.core.ray_engine import _connect

    def refuse(**kwargs):
        raise ray.exceptions.AuthenticationError("Authentication failed: InvalidAuthToken")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with pytest.raises(EngineError) as e:
        _connect(ray, "10.0.0.1:6379", {})
    assert str(e.value) == (
        "the Ray cluster at 10.0.0.1:6379 requires token authentication (on by default since Ray 2.60); "
        "RAY_AUTH_MODE is unset: set RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN_PATH=FILE or "
        "RAY_AUTH_TOKEN; `ray get-auth-token` on the head prints it). See docs/cluster.md"
    )
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    with pytest.raises(
        EngineError, match="this client's token is not the cluster's: set RAY_AUTH_TOKEN_PATH"
    ):
        _connect(ray, "10.0.0.1:6379", {})


@pytest.mark.ray
def test_ray_start_up_notices_go_to_the_run_log(tmp_path) -> None:
    import json
    import subprocess
    import sys

    (tmp_path / "in.jsonl").write_text(json.dumps({"text": "hello there"}) + "\n")
    (tmp_path / "p.yaml").write_text(
        f"name: q\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages: []\n"
    )
    cmd = [sys.executable, "-m", "curate", "run", str(tmp_path / "p.yaml"), "--output", str(tmp_path / "r")]
    r = subprocess.run([*cmd, "-q", "--no-phases"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    # What Ray prints depends on the machine (the token warning when it creates a token, the local-IP
    # notice inside the network namespace); whatever it is, it is in the log, not on the terminal.
    log = (tmp_path / "r" / "ray.log").read_text()
    assert re.search(r"Failed to determine local IP|Token authentication is enabled", log), log


def test_proxy_verb_ends_with_the_rebuilt_report_and_its_verdict(tmp_path, capsys) -> None:
    import argparse
    import json

    from curate.cli import _then_report
    from curate.core.engine import InlineEngine
    from curate.pipeline.config import parse_pipeline
    from curate.runtime.runner import run_pipeline

    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(4)))
    cfg = parse_pipeline(f"name: p\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages: []\n")
    run_pipeline(cfg, tmp_path / "run", engine=InlineEngine(), phases=False)

    def proxy_handler(args: argparse.Namespace) -> int:  # what curate/proxy/cli.py prints
        print(json.dumps({"recipes": {"raw": {}}}, indent=1))
        print("recipe               multiplier [CI]")
        return 0

    assert _then_report(proxy_handler)(argparse.Namespace(run_dir=str(tmp_path / "run"))) == 0
    out = capsys.readouterr().out
    assert out == (
        "recipe               multiplier [CI]\n"
        "kept 4 of 4 documents (100.0% of documents). No proxy runs (no goodput.json): whether the curation "
        "helps training is not measured.\n"
        f"report: {tmp_path / 'run' / 'report.html'}\n"
    )
    assert (tmp_path / "run" / "report.md").is_file()


def test_proxy_verb_prints_each_line_of_a_longer_verdict_card_unprefixed(
    tmp_path, monkeypatch, capsys
) -> None:
    import argparse

    import curate.report.build as build
    from curate.cli import _then_report

    card = "line one of the card\nline two\nline three"
    monkeypatch.setattr(
        build,
        "build_report_with_headline",
        lambda run_dir: ((run_dir / "report.html", run_dir / "report.md"), card),
    )
    assert _then_report(lambda args: 0)(argparse.Namespace(run_dir=str(tmp_path))) == 0
    assert (
        capsys.readouterr().out
        == f"line one of the card\nline two\nline three\nreport: {tmp_path / 'report.html'}\n"
    )


def test_the_summary_starts_on_its_own_line_after_progress_bars(tmp_path: Path) -> None:
    # in a log holding stdout and stderr, the first summary line must not run into the last bar
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"text": f"doc {i} " * 60}) + "\n" for i in range(5))
    )
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: bars\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages:\n  - dedup: exact_dedup_v1\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "curate",
            "run",
            str(pipe),
            "--engine",
            "inline",
            "--output",
            str(tmp_path / "r"),
            "--no-phases",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, as a log or `2>&1 | tee` has it
        timeout=300,
        check=True,
    ).stdout.decode()  # bytes: text mode would turn each "\r" into a line break
    (line,) = [x for x in out.split("\n") if "run bars ->" in x]
    assert line == f"run bars -> {tmp_path / 'r'}"  # no bar text (nor "\r") before it on its line


def test_a_finished_run_counts_its_own_units_whatever_the_new_pipeline_plans(tmp_path: Path, capsys) -> None:
    from curate.cli import main
    from tests.helpers import write_inputs

    write_inputs(tmp_path / "in", n_files=3, n_docs=5)
    pipe = tmp_path / "p.yaml"
    head = f"name: t\ninput: {{path: '{tmp_path}/in/*.jsonl', format: jsonl}}\nstages:\n  - transform: normalize_v1\n"
    pipe.write_text(head + "  - dedup: exact_dedup_v1\n")  # 2 segments over 3 files: 6 units
    run = tmp_path / "run"
    argv = ["run", str(pipe), "--output", str(run), "--engine", "inline", "-q", "--no-phases"]
    assert main(argv) == 0
    assert main(argv) == 0
    assert capsys.readouterr().err == "resuming: 6 of 6 units done\n"
    refusal = "that finished 6 of 6 units; rerun with --restart to discard it and start over, or choose another --output\n"
    # another pipeline, with a segment more (9 units) or fewer (3): the run in the folder finished 6 of 6
    for stages in ("  - dedup: exact_dedup_v1\n  - dedup: minhash_dedup_v1\n", ""):
        pipe.write_text(head + stages)
        assert main(argv) == 2
        assert capsys.readouterr().err.endswith(refusal)
    # a run.json written before it recorded its plan: the run's segment folders tell
    marker = run / "_work" / "run.json"
    marker.write_text(
        json.dumps(
            {k: v for k, v in json.loads(marker.read_text()).items() if k in ("fingerprint", "pipeline")}
        )
    )
    pipe.write_text(head + "  - dedup: exact_dedup_v1\n  - dedup: minhash_dedup_v1\n")
    assert main(argv) == 2
    assert capsys.readouterr().err.endswith(refusal)
