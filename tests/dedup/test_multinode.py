"""The same dedup output on the inline engine and on a local two-node Ray cluster (own process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.ray
def test_two_node_cluster_matches_inline():
    pytest.importorskip("ray")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "multinode_check.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, proc.stderr[-4000:]
    out = json.loads(line[0][7:])
    assert out["nodes"] == 2
    assert out["exact"]
    assert out["minhash"]
    assert out["lines"]
    assert out["exact_rejected"] == 20
    assert out["minhash_rejected"] == 40
