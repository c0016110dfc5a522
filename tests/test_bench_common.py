"""benchmarks/_common.py: ``machine()`` names the CPU model (it once never found it)."""

from __future__ import annotations

from pathlib import Path

from benchmarks._common import cpu_model, machine

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
