"""Shared by the terminal and signal tests: a ``curate`` entry point with a test-only stage that talks on
every channel a worker has, the command line and environment of a run through it, and what counts as
Ray's output in a terminal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from tests.helpers import ROOT, write_inputs

# A `curate` entry point with a test-only stage that talks on every channel a worker has. It enters the
# private network first, as `curate` itself does, since defining the stage imports curate (threads).
NOISY_MAIN = """
import os, sys
from curate.runtime.netns import enter_private_network
enter_private_network()

import logging, time, warnings
from pathlib import Path
from curate.core.registry import STAGES
from curate.core.stage import Transform

@STAGES.add("noisy_test_v1")
class Noisy(Transform):
    '''Test-only: prints, warns and logs in the worker; with GATE set, waits at file 1's part until the
    test opens the gate (GATE.waiting says it got there).'''
    def process(self, table):
        print("NOISY-STDOUT from the stage", flush=True)
        print("NOISY-STDERR from the stage", file=sys.stderr, flush=True)
        warnings.warn("NOISY-WARNING from the stage")
        logging.getLogger("noisy").warning("NOISY-LOG from the stage")
        gate = os.environ.get("GATE")
        if gate and any(i.startswith("f1-") for i in table.column("id").to_pylist()):
            Path(gate + ".waiting").touch()
            t0 = time.time()
            while not Path(gate).exists() and time.time() - t0 < 60:
                time.sleep(0.05)
        return table

from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""

RAY_NOISE = [
    ("a worker line", re.compile(r"pid=\d+")),
    ("an ANSI escape", re.compile("\x1b")),
    ("Ray's Python WARNING", re.compile(r"WARNING \S+\.py:\d+ --")),
    ("Ray's token-auth notice", re.compile("Token authentication")),
    ("a C++ log line", re.compile(r"\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\] \S+\.(cc|h):\d+")),
    ("the stage's own output", re.compile("NOISY-")),
]


def noisy_run(tmp_path: Path, *args: str, gate: Path | None = None) -> list[str]:
    """The command line of ``curate run`` through NOISY_MAIN on a tiny pipeline of two files (normalize,
    the noisy stage, exact dedup) into ``tmp_path/run``; the embedded Ray engine."""
    write_inputs(tmp_path / "in", n_files=2, n_docs=8)
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: t\ninput: {{path: '{tmp_path}/in/*.jsonl', format: jsonl}}\nengine: {{num_cpus: 1}}\n"
        "stages:\n  - transform: normalize_v1\n  - transform: noisy_test_v1\n  - dedup: exact_dedup_v1\n"
    )
    (tmp_path / "noisy_main.py").write_text(NOISY_MAIN)
    main = str(tmp_path / "noisy_main.py")
    return [sys.executable, main, "run", str(pipe), "--output", str(tmp_path / "run"), *args]


def noisy_env(gate: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "GATE")}
    env["PYTHONPATH"] = str(ROOT)
    if gate is not None:
        env["GATE"] = str(gate)
    return env


def ray_noise(text: str) -> list[str]:
    """Each kind of Ray output found in ``text`` (empty when the terminal is clean)."""
    return [what for what, pattern in RAY_NOISE if pattern.search(text)]


def without_bars(stderr: str) -> list[str]:
    """The lines of ``stderr`` less the progress bars (tqdm redraws a bar after a carriage return)."""
    pieces = re.split(r"[\r\n]", stderr)
    return [p for p in pieces if p.strip() and not re.search(r"\d+%\|.*\| \d+/\d+ \[", p)]


def worker_logs(run_dir: Path) -> Path:
    """The session log folder that the run's ray.log names."""
    text = (run_dir / "ray.log").read_text()
    m = re.search(r"^Ray session logs: (\S+);", text, re.M)
    assert m, text
    return Path(m[1])
