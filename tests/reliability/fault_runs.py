"""The fault tests' pipeline and reference runs, shared by tests/reliability/test_faults.py and the
driver-kill test on the two-node cluster in tests/test_cluster.py.

:func:`fault_pipeline` runs the test stages of :mod:`tests.reliability.fault_stages` (normalize → fault
scorer → select → exact dedup → MinHash dedup), one of them stalling where a test asks; :func:`reference`
is its uninterrupted inline run, which a run with a fault must equal: the manifest digests of kept/ and
rejected/, the accounting, and every input row id exactly once (:func:`output_ids`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import write_inputs
from tests.reliability import fault_stages  # noqa: F401  (registers the fault_* test stages)

# The curate CLI with the fault stages registered: a driver started as a subprocess.
RUN_MAIN = """
import sys
from tests.reliability import fault_stages  # registers the test stages
from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def fault_pipeline(inp: Path, *, where: str = "", pid_file: str = "", log_file: str = "") -> str:
    """normalize → fault scorer → select → exact dedup → MinHash dedup; ``where`` picks the stage that stalls."""

    def params(name: str, phase: str | None = None) -> str:
        stall = pid_file if where == (f"{name}:{phase}" if phase else name) else ""
        extra = f", phase: {phase}" if phase else ""
        return f"{{pid_file: '{stall}', log_file: '{log_file}'{extra}}}"

    ex_phase = where.split(":")[1] if where.startswith("exact:") else "collect"
    mh_phase = where.split(":")[1] if where.startswith("minhash:") else "collect"
    return f"""\
name: faults
input: {{path: '{inp}/*.jsonl', format: jsonl, batch_docs: 16}}
stages:
  - transform: normalize_v1
  - score: fault_score_test_v1
    params: {params("score")}
  - select:
      - {{column: fault_score_test_v1.chars, min: 5, reason: too_short}}
  - dedup: fault_exact_dedup_test_v1
    params: {params("exact", ex_phase)}
  - dedup: fault_minhash_dedup_test_v1
    params: {params("minhash", mh_phase)}
"""


def output_ids(run: Path) -> list[str]:
    files = sorted((run / "kept").glob("part-*.parquet")) + sorted((run / "rejected").glob("part-*.parquet"))
    return [i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]


def digests(m: dict) -> dict:
    return {"outputs": m["outputs"], "accounting": m["accounting"], "removed": m["removed_by_reason"]}


def reference_run(d: Path, *, n_files: int, n_docs: int) -> dict:
    """``n_files`` input files of ``n_docs`` documents (many duplicates, malformed lines) under ``d`` and
    their uninterrupted inline run: ``{"input", "manifest", "ids"}``."""
    write_inputs(d / "in", n_files=n_files, n_docs=n_docs)
    m = run_pipeline(parse_pipeline(fault_pipeline(d / "in")), d / "ref", engine=InlineEngine())
    ids = output_ids(d / "ref")
    # Every input row (n_docs + 2 lines per file) comes out once; dedup and select both had work to do.
    assert len(ids) == len(set(ids)) == m["accounting"]["input"] == n_files * (n_docs + 2)
    assert m["removed_by_reason"]["fault_exact_dedup_test_v1:duplicate"] > 0
    return {"input": d / "in", "manifest": m, "ids": sorted(ids)}
