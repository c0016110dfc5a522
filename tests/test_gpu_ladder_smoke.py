"""benchmarks/gpu_ladder.sh in its CPU smoke mode: the GPU study's mechanics (the transfer pipeline with its
ladder set from the command line, the per-run table, the study's JSON and figure) without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.corpora,
    pytest.mark.skipif(
        not (ROOT.parent / "shared" / "corpora" / "clean" / "wikipedia.jsonl.gz").exists(),
        reason="needs ../shared/corpora",
    ),
]


def test_the_smoke_mode_runs_the_transfer_study_with_its_ladder(tmp_path):
    env = {**os.environ, "GPU_LADDER_SMOKE": "1", "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", "benchmarks/gpu_ladder.sh", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (out,) = tmp_path.glob("gpu_ladder-*")
    study = json.loads((out / "study.json").read_text())
    assert [p["name"] for p in study["points"]] == ["proxy_tiny@8192", "proxy_1m@16384"]
    assert study["reference"] == "proxy_1m@16384"
    assert set(study["points"][0]["recipes"]) == {
        "raw",
        "curated",
        "no_language",
        "no_url_filter",
        "no_gopher",
        "no_c4",
        "no_fineweb",
        "no_minhash",
        "gopher_only",
        "exact_dedup_only",
        "language_only",
        "dsir_half",
        "dsir_quarter",
        "dsir_three_quarters",
        "dsir_tenth",
        "dsir_bottom_half",
        "classifier",
        "classifier_quarter",
        "classifier_tenth",
        "classifier_bottom_half",
        "moore_lewis",
        "moore_lewis_quarter",
        "random_half",
        "random_quarter",
        "random_tenth",
        "null",
        "planted",
    }
    assert [p["seeds"] for p in study["points"]] == [[0, 1], [2, 3]]  # proxy.disjoint_seeds
    assert study["decision_accuracy"]["proxy_tiny@8192"]["all_pairs_weighted"]["pairs"] == 300
    assert ">decision accuracy</text>" in (out / "study.svg").read_text()
    rows = (out / "runs.md").read_text().splitlines()[2:]
    assert len(rows) == 2 * 27 * 2  # two points x 27 recipes (raw, 24 recipes, two controls) x two seeds
    assert "exit 0" in (out / "wall_s.txt").read_text()
