"""CPU-seconds are counted where the work ran: Ray's tasks, actors (their set-up included) and shuffle
tasks report their own process CPU to the engine, and a stage's funnel row, the manifest's ``cpu`` block
and each phase's record add the workers' CPU to the driver's."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from tests.helpers import pipeline, write_inputs
from tests.runtime.cpu_stages import burn

BURN = 0.25  # CPU-seconds a task burns
SLACK = 0.6  # the wrapper's own time, pickling, the process's other threads: an upper bound, loaded machine


def _burn(seconds: float) -> float:
    return burn(seconds)


def _burning_worker() -> object:
    burn(BURN)  # the worker's set-up
    return _burn


def _reduce_burning(table: pa.Table) -> int:
    burn(BURN)
    return table.num_rows


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_map_adds_each_tasks_cpu_to_the_engine(ray_engine) -> None:
    before, by_desc = ray_engine.worker_cpu_s, ray_engine.cpu_by_desc.get("burn test", 0.0)
    own = ray_engine.map(_burn, [BURN] * 4, desc="burn test")
    spent = ray_engine.worker_cpu_s - before
    assert all(x >= BURN for x in own)
    assert sum(own) <= spent <= sum(own) + SLACK
    assert ray_engine.cpu_by_desc["burn test"] - by_desc == pytest.approx(spent)


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_map_worker_adds_the_set_up_and_every_call(ray_engine) -> None:
    before = ray_engine.worker_cpu_s
    own = ray_engine.map_worker(_burning_worker, [BURN] * 3, desc="burn workers")
    spent = ray_engine.worker_cpu_s - before
    # 3 calls, and one set-up per actor started (1 or 2 on the session's 2 CPUs)
    assert sum(own) + BURN <= spent <= sum(own) + 2 * BURN + SLACK


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_shuffle_adds_its_reduce_tasks(ray_engine, tmp_path: Path) -> None:
    import numpy as np
    import pyarrow.parquet as pq

    paths = []
    for i in range(2):
        p = tmp_path / f"k{i}.parquet"
        pq.write_table(pa.table({"key": pa.array(np.arange(100, dtype=np.uint64) + i)}), p)
        paths.append(str(p))
    before = ray_engine.worker_cpu_s
    rows = ray_engine.shuffle(paths, key="key", reduce=_reduce_burning, num_partitions=2, desc="burn shuffle")
    spent = ray_engine.worker_cpu_s - before
    assert sum(rows) == 200
    assert 2 * BURN <= spent <= 2 * BURN + SLACK


def test_inline_work_is_this_process_cpu_not_a_workers() -> None:
    engine = InlineEngine()
    c0 = engine.cpu_s()
    own = engine.map(_burn, [BURN] * 2, desc="inline burn")
    assert engine.worker_cpu_s == 0.0  # the work ran here: time.process_time() has it
    assert sum(own) <= engine.cpu_s() - c0 <= sum(own) + SLACK
    assert sum(own) <= engine.cpu_by_desc["inline burn"] <= sum(own) + SLACK


def _run(tmp_path: Path, engine: object, extra: str) -> dict:
    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline(tmp_path / "in", extra))
    return run_pipeline(cfg, tmp_path / "run", engine=engine, phases=False)  # type: ignore[arg-type]


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_a_global_stages_row_holds_its_collect_tasks_cpu_on_ray(ray_engine, tmp_path: Path) -> None:
    """Collect runs as Ray tasks, one per part: the driver's own CPU never saw it, the row now does."""
    extra = f"  - dedup: burn_exact_dedup_test_v1\n    params: {{collect_cpu_s: {BURN}}}\n"
    m = _run(tmp_path, ray_engine, extra)
    row = next(s for s in m["stages"] if s["name"] == "burn_exact_dedup_test_v1")
    markers = (tmp_path / "run" / "_work" / "s0").glob("done-*.json")
    parts = sum(len(json.loads(f.read_text())["parts"]) for f in markers)
    assert parts == 9  # 3 files of 42 lines in parts of 16 documents: one collect task each
    assert parts * BURN <= row["cpu_s"]
    cpu = m["cpu"]
    assert cpu["stages_s"] == pytest.approx(sum(s["cpu_s"] for s in m["stages"]), abs=0.01)
    assert cpu["total_s"] == pytest.approx(cpu["stages_s"] + cpu["io_s"] + cpu["target_s"], abs=0.002)


def test_a_stages_set_up_is_in_its_row(tmp_path: Path) -> None:
    """Loading a model (here: burning CPU in ``setup``) is the stage's cost, counted once per worker."""
    extra = "  - transform: burn_setup_test_v1\n    params: {setup_cpu_s: 0.4}\n"
    m = _run(tmp_path, InlineEngine(), extra)
    row = next(s for s in m["stages"] if s["name"] == "burn_setup_test_v1")
    assert 0.4 <= row["cpu_s"] <= 0.4 + SLACK
    markers = sorted((tmp_path / "run" / "_work" / "s0").glob("done-*.json"))
    assert len(markers) == 3
    assert all("io_cpu_s" in m.read_text() for m in markers)
