"""benchmarks/_common.py: ``machine()`` names the CPU model (it once never found it); ``commit()`` is the
commit of the checkout it is given, not of the working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks._common import ROOT, commit, cpu_model, machine

X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"


def test_cpu_model_reads_the_model_line_wherever_it_is() -> None:
    assert cpu_model(X86) == "AMD EPYC 7B13"  # the old loop stopped at the first line ("processor")
    assert cpu_model(ARM) == "Raspberry Pi 4 Model B Rev 1.4"


def test_machine_names_this_cpu() -> None:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    expected = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), None
    )
    if expected:
        assert f" cores ({expected}), " in machine()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_commit_is_the_given_checkouts_head_wherever_it_is_called_from(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f").write_text("x")
    _git(repo, "add", "f")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    monkeypatch.chdir(tmp_path)  # not a checkout: the answer must not come from here
    assert commit(repo) == _git(repo, "rev-parse", "--short", "HEAD")
    assert len(commit(repo)) >= 7
    assert commit(tmp_path / "nowhere") == "unknown"
    (tmp_path / "plain").mkdir()
    if (
        subprocess.run(["git", "-C", str(tmp_path / "plain"), "rev-parse"], capture_output=True).returncode
        == 0
    ):
        pytest.skip("the temp dir is inside a git checkout")
    assert commit(tmp_path / "plain") == "unknown"


def test_commit_defaults_to_this_repository() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert commit() == _git(ROOT, "rev-parse", "--short", "HEAD")
