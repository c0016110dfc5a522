"""What a user sees in the terminal of a real ``curate run`` on the embedded Ray runtime: curate's progress
and summary only. Ray's worker lines (``(noisy pid=123) ...``, coloured), its WARNINGs (token auth) and
its C++ log lines stay out; the run's ``ray.log`` says where the workers' output went, and it is there."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers import ROOT
from tests.terminal_helpers import noisy_env, noisy_run, ray_noise, without_bars, worker_logs


@pytest.mark.ray
def test_a_ray_run_shows_curate_output_only_and_its_log_says_where_the_workers_wrote(tmp_path) -> None:
    r = subprocess.run(
        noisy_run(tmp_path), env=noisy_env(), cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert ray_noise(r.stdout + r.stderr) == []
    # stderr: the estimate said before the run, then progress bars only (and the newline after the last);
    # stdout: the run's summary
    estimate = without_bars(r.stderr)
    assert estimate[0].startswith("estimate on this machine (1 core, ray engine, load ")
    assert all(line.startswith("  ") for line in estimate[1:])
    assert r.stdout.startswith(f"run t -> {tmp_path / 'run'}\n")
    assert "input 20 = kept 14 + rejected 4 + quarantined 2  (balanced)" in r.stdout
    assert r.stdout.endswith(f"report: {tmp_path / 'run' / 'report.html'}\n")  # the card, then the report
    # Ray's start-up notices are in the run's log, and the workers' output is where that log says
    logs = worker_logs(tmp_path / "run")
    outs = "".join(p.read_text(errors="replace") for p in logs.glob("worker-*.out"))
    errs = "".join(p.read_text(errors="replace") for p in logs.glob("worker-*.err"))
    assert "NOISY-STDOUT from the stage" in outs
    assert "NOISY-STDERR from the stage" in errs
    assert "NOISY-WARNING from the stage" in errs
