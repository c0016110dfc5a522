"""The runner: exact accounting, the run directory layout, resume after a kill, engine equivalence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.pipeline.validate import EmptyRunError
from curate.runtime.runner import AccountingError, RunDirError, Runner, run_pipeline
from tests.helpers import ROOT, pipeline, slow_main, write_inputs


def test_accounting_and_layout(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline(tmp_path / "in"))
    m = run_pipeline(cfg, tmp_path / "run", engine=InlineEngine())
    # 3 files x (40 docs + 1 malformed line + 1 text that normalizes to empty) = 126 rows; "Doc 1 from file 0"
    # occurs 6 times in each of files 0 and 2.
    assert m["accounting"] == {"input": 126, "kept": 12, "rejected": 111, "quarantined": 3, "balanced": True}
    stages = {s["name"]: s for s in m["stages"]}
    assert [s["name"] for s in m["stages"]] == ["read", "normalize_v1", "select"]
    assert stages["read"]["removed"] == {"quarantine:malformed_json": 3}
    assert stages["normalize_v1"]["removed"] == {"normalize_v1:empty": 3}
    assert stages["select"]["removed"] == {"select:not_doc1": 108}
    assert stages["select"]["docs_in"] == 120
    assert stages["select"]["docs_out"] == 12
    assert m["removed_by_reason"] == {
        "normalize_v1:empty": 3,
        "quarantine:malformed_json": 3,
        "select:not_doc1": 108,
    }
    kept = pq.read_table(sorted((tmp_path / "run" / "kept").glob("part-*.parquet"))[0])
    assert set(kept.column_names) == {"id", "text", "source", "url"}
    assert kept.column("text")[0].as_py() == "Doc 1 from file 0.\n\nEnd."
    rejected = [pq.read_table(f) for f in sorted((tmp_path / "run" / "rejected").glob("part-*.parquet"))]
    rows = [r for t in rejected for r in t.select(["id", "stage", "reason"]).to_pylist()]
    assert {"id": "f0-empty", "stage": "normalize_v1", "reason": "normalize_v1:empty"} in rows
    assert {"id": "in-0.jsonl:41", "stage": "read", "reason": "quarantine:malformed_json"} in rows
    assert len(rows) == 114
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["name"] == "t"
    assert manifest["versions"]["pyarrow"]
    assert all(k in manifest["stages"][1] for k in ("docs_in", "docs_out", "removed", "wall_s", "cpu_s"))


def test_accounting_failure_is_loud(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=1)
    runner = Runner(
        parse_pipeline(pipeline(tmp_path / "in")), tmp_path / "run", InlineEngine(), progress=False
    )
    manifest = runner.run()
    assert manifest["accounting"]["kept"] == 6
    # A kept part lost after the run (3 parts of 16 docs; the first holds 3 kept docs, ids 1, 8, 15): the check fails loudly.
    sorted((tmp_path / "run" / "kept").glob("part-*.parquet"))[0].unlink()
    stats = {s["name"]: s for s in manifest["stages"]}
    with pytest.raises(
        AccountingError,
        match=r"accounting does not balance: \{'input': 42, 'kept': 3, 'rejected': 35, "
        r"'quarantined': 1, 'balanced': False\}",
    ):
        runner._manifest(stats, ["read", "normalize_v1", "select"], {}, 0.0)


def test_other_pipeline_in_same_dir_is_refused(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=1)
    run_pipeline(parse_pipeline(pipeline(tmp_path / "in")), tmp_path / "run", engine=InlineEngine())
    other = parse_pipeline(pipeline(tmp_path / "in").replace("not_doc1", "other"))
    with pytest.raises(RunDirError, match="holds a run of a different pipeline or input"):
        run_pipeline(other, tmp_path / "run", engine=InlineEngine())


SLOW_MAIN = slow_main(0.15)


def _digest(run: Path) -> dict[str, str]:
    m = json.loads((run / "manifest.json").read_text())
    return {
        "kept": m["outputs"]["kept_sha256"],
        "rejected": m["outputs"]["rejected_sha256"],
        "acc": json.dumps(m["accounting"]),
    }


def test_resume_after_kill_gives_identical_output(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=8, n_docs=30)  # 16 units of 16 rows, 0.15 s each
    (tmp_path / "p.yaml").write_text(pipeline(tmp_path / "in", "  - transform: sleepy_test_v1\n"))
    (tmp_path / "slow_main.py").write_text(SLOW_MAIN)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cmd(out: Path) -> list[str]:
        return [
            sys.executable,
            str(tmp_path / "slow_main.py"),
            "run",
            str(tmp_path / "p.yaml"),
            "--output",
            str(out),
            "--engine",
            "inline",
            "-q",
        ]

    subprocess.run(cmd(tmp_path / "whole"), check=True, env=env, capture_output=True)
    proc = subprocess.Popen(
        cmd(tmp_path / "killed"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    work = tmp_path / "killed" / "_work" / "s0"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(work.glob("done-*.json"))) < 4:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_done = len(list(work.glob("done-*.json")))
    assert 4 <= n_done < 16, "the run was not interrupted mid-way"
    assert not (tmp_path / "killed" / "manifest.json").exists()
    subprocess.run(cmd(tmp_path / "killed"), check=True, env=env, capture_output=True)
    assert _digest(tmp_path / "killed") == _digest(tmp_path / "whole")
    # The wall time sums both attempts; the killed one counts up to its last written file (> 0).
    m = json.loads((tmp_path / "killed" / "manifest.json").read_text())
    assert len(m["attempts_wall_s"]) == 2
    assert m["attempts_wall_s"][0] > 0
    assert m["wall_s"] == pytest.approx(sum(m["attempts_wall_s"]), abs=0.01)
    # A third run over a finished directory changes nothing.
    subprocess.run(cmd(tmp_path / "killed"), check=True, env=env, capture_output=True)
    assert _digest(tmp_path / "killed") == _digest(tmp_path / "whole")


@pytest.mark.ray
def test_ray_engine_output_equals_inline(tmp_path: Path, ray_engine) -> None:
    write_inputs(tmp_path / "in", n_files=4)
    cfg = parse_pipeline(pipeline(tmp_path / "in"))
    a = run_pipeline(cfg, tmp_path / "inline", engine=InlineEngine())
    b = run_pipeline(cfg, tmp_path / "ray", engine=ray_engine)
    assert a["outputs"] == b["outputs"]
    assert a["accounting"] == b["accounting"]


def test_filter_shorthand_is_one_funnel_row(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=1)
    text = f"""\
name: f
input: {{path: {tmp_path / "in"}/*.jsonl, format: jsonl}}
allow_empty: true
stages:
  - filter: gopher_quality_v1
"""
    m = run_pipeline(parse_pipeline(text), tmp_path / "run", engine=InlineEngine())
    s = {x["name"]: x for x in m["stages"]}["gopher_quality_v1"]
    # 41 valid documents (one malformed line is quarantined at read), all too short for Gopher's 50 words.
    assert (s["docs_in"], s["docs_out"]) == (41, 0)
    assert s["removed"] == {"gopher_quality_v1:short_doc": 41}
    assert m["accounting"] == {"input": 42, "kept": 0, "rejected": 41, "quarantined": 1, "balanced": True}
    # The manifest records the filter as its scorer and a select of its rules (what reselect reads).
    resolved = [(r["kind"], r["label"]) for r in m["stages_resolved"]]
    assert resolved == [("score", "gopher_quality_v1"), ("select", "gopher_quality_v1")]


def test_a_run_that_keeps_nothing_is_an_error_unless_allowed(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", n_files=1)
    text = f"""\
name: f
input: {{path: {tmp_path / "in"}/*.jsonl, format: jsonl}}
stages:
  - filter: gopher_quality_v1
"""
    out = tmp_path / "run"
    with pytest.raises(EmptyRunError) as e:
        run_pipeline(parse_pipeline(text), out, engine=InlineEngine())
    assert str(e.value) == (
        f"{out}: kept 0 of 42 documents (gopher_quality_v1:short_doc 41, quarantine:malformed_json 1); "
        f"see `curate inspect {out}`, loosen the thresholds, or set allow_empty: true "
        "(--set allow_empty=true) to accept an empty result"
    )
    # The outputs are written, so the run can be inspected.
    assert json.loads((out / "manifest.json").read_text())["accounting"]["kept"] == 0


def test_a_run_that_quarantines_everything_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("not json\n{broken\n")
    text = f"name: q\ninput: {{path: {tmp_path / 'in'}/*.jsonl, format: jsonl}}\nstages: []\n"
    out = tmp_path / "run"
    with pytest.raises(EmptyRunError) as e:
        run_pipeline(parse_pipeline(text), out, engine=InlineEngine())
    assert str(e.value) == (
        f"{out}: all 2 documents were quarantined (quarantine:malformed_json 2): is input.format (jsonl) "
        f"right for these files? See `curate inspect {out} --reason quarantine`, or set allow_empty: true "
        "(--set allow_empty=true) to accept an empty result"
    )
    m = run_pipeline(
        parse_pipeline(text, overrides=["allow_empty=true"]), tmp_path / "run2", engine=InlineEngine()
    )
    assert m["accounting"] == {"input": 2, "kept": 0, "rejected": 0, "quarantined": 2, "balanced": True}


def test_parts_read_back_by_the_run_skip_dictionary_encoding(tmp_path: Path) -> None:
    """A segment's parts that the next segment reads are written without Parquet dictionaries (texts are
    distinct: wasted work); the last segment's parts (copied to kept/) and rejected parts keep them."""
    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline(tmp_path / "in", "  - dedup: exact_dedup_v1\n"))
    run_pipeline(cfg, tmp_path / "run", engine=InlineEngine())

    def dictionary_columns(path: Path) -> set[str]:
        rg = pq.ParquetFile(path).metadata.row_group(0)
        cols = [rg.column(i) for i in range(rg.num_columns)]
        return {c.path_in_schema for c in cols if any("DICTIONARY" in e for e in c.encodings)}

    work = tmp_path / "run" / "_work"
    intermediate = sorted((work / "s0").glob("p*.parquet"))
    assert len(intermediate) == 9  # 3 files of 42 lines in parts of 16 documents
    assert all(dictionary_columns(p) == set() for p in intermediate)
    final = [p for p in (work / "s1").glob("p*.parquet") if pq.ParquetFile(p).metadata.num_rows]
    assert len(final) == 1  # the one that holds the first "Doc 1 from file 0" (the others are duplicates)
    assert all({"id", "text", "source"} <= dictionary_columns(p) for p in final)
    assert {"id", "text", "source"} <= dictionary_columns(next((work / "s0").glob("r*.parquet")))
