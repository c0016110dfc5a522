"""SIGTERM takes Ctrl-C's path in every verb: KeyboardInterrupt in the main thread, the clean-up that
follows it (lock released, engine shut down), one line with the command that resumes, exit 128 + the
signal (130 for Ctrl-C, 143 for SIGTERM). With the embedded Ray runtime too: Ray's own SIGTERM handler
and its C++ stack dump (``*** SIGTERM received ... PC: @``) never run."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from curate.cli import interrupted_line, main
from tests.helpers import ROOT
from tests.terminal_helpers import noisy_env, noisy_run, ray_noise, without_bars


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["run", "p.yaml", "--output", "runs/a b", "--restart", "--set", "stages.0.params.form=NFKC"],
            "curate run: interrupted; what finished is kept. To resume, rerun: curate run p.yaml --output "
            "'runs/a b' --set stages.0.params.form=NFKC",
        ),
        (
            ["-v", "run", "p.yaml", "--rest"],  # argparse takes a prefix of --restart too
            "curate run: interrupted; what finished is kept. To resume, rerun: curate -v run p.yaml",
        ),
        (
            ["proxy", "runs/x", "--set", "seeds=5"],
            "curate proxy: interrupted; what finished is kept. To resume, rerun: curate proxy runs/x "
            "--set seeds=5",
        ),
        (
            ["mix", "runs/x", "--engine", "inline"],
            "curate mix: interrupted; what finished is kept. To resume, rerun: curate mix runs/x --engine inline",
        ),
        (
            ["ablate", "runs/x"],
            "curate ablate: interrupted; what finished is kept. To resume, rerun: curate ablate runs/x",
        ),
        (
            ["search", "runs/x"],
            "curate search: interrupted; what finished is kept. To resume, rerun: curate search runs/x",
        ),
        (
            ["export", "runs/x", "--format", "memmap", "--overwrite"],
            "curate export: interrupted. To finish, rerun: curate export runs/x --format memmap --overwrite",
        ),
        (["report", "runs/x"], "curate report: interrupted. To finish, rerun: curate report runs/x"),
        (
            ["select", "runs/x", "--set", "a.min=0.5", "--output", "runs/y"],
            "curate select: interrupted. To finish, rerun: curate select runs/x --set a.min=0.5 --output runs/y",
        ),
    ],
)
def test_an_interrupted_verb_names_the_command_that_resumes_it(argv: list[str], line: str) -> None:
    verb = next(a for a in argv if not a.startswith("-"))
    assert interrupted_line(verb, argv) == line


def test_sigterm_in_a_verb_is_ctrl_c_with_exit_143_and_the_handler_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import curate.proxy.cli

    reached: list[str] = []

    def terminated(args, key, run, *, required=True):  # the mixture search, stopped by `kill PID`
        reached.append(key)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises KeyboardInterrupt here, in the main thread
        raise AssertionError("SIGTERM did not interrupt the verb")

    monkeypatch.setattr(curate.proxy.cli, "run_spec_verb", terminated)
    before = signal.getsignal(signal.SIGTERM)
    t0 = time.monotonic()
    code = main(["mix", str(tmp_path / "run"), "--engine", "inline"])
    assert time.monotonic() - t0 < 20
    assert (reached, code) == (["mix"], 143)
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"curate mix: interrupted; what finished is kept. To resume, rerun: curate mix {tmp_path / 'run'} "
        "--engine inline\n"
    )
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.ray
def test_sigterm_stops_an_embedded_ray_run_cleanly_and_the_hint_resumes_it(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    cmd = noisy_run(tmp_path, "--no-phases")
    run = subprocess.Popen(
        cmd, env=noisy_env(gate), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    t0 = time.time()
    while not gate.with_suffix(".waiting").exists():  # file 0's unit is committed, file 1's waits
        assert run.poll() is None, run.communicate()
        assert time.time() - t0 < 90, "the run never reached its gate"
        time.sleep(0.05)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 143
    assert "SIGTERM received" not in out + err
    assert "PC: @" not in out + err
    assert ray_noise(out + err) == []
    *estimate, line = without_bars(err)  # the estimate said before the run, then the hint
    assert estimate[0].startswith("estimate on this machine")
    hint = (
        "curate run: interrupted; what finished is kept. To resume, rerun: "
        f"curate run {tmp_path / 'p.yaml'} --output {tmp_path / 'run'} --no-phases"
    )
    assert line == hint
    assert out == ""
    assert not (tmp_path / "run" / "_work" / "lock.json").exists()  # released on the way out
    # The hint's command, inline (no second Ray start here), resumes: 2 reading units, 1 committed, then 2
    # units applying exact_dedup_v1's state to their parts.
    gate.touch()
    again = shlex.split(line.split("rerun: ", 1)[1])
    assert again[:2] == ["curate", "run"]
    rerun = subprocess.run(
        [*cmd[:2], *again[1:], "--engine", "inline", "-q"],
        env=noisy_env(gate),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    # (then the noisy stage's own output: inline, it runs in this process)
    assert rerun.stderr.splitlines()[0] == "resuming: 1 of 4 units done"
    assert "input 20 = kept 14 + rejected 4 + quarantined 2  (balanced)" in rerun.stdout
