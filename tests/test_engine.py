"""Engine.shuffle at 1, 2 and many partitions, inline and on Ray: every key lands whole in key % p."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

KEYS = [[5, 1, 9, 5, 12], [1, 3, 3, 7], [], [9, 9, 2]]


# The reduce must be importable on Ray workers, which cannot import this test module: a pyarrow method.
REDUCE = pa.Table.to_pydict


def _key_counts(partitions: list[dict]) -> list[dict[int, int]]:
    """Rows per key of each reduced partition."""
    out = []
    for cols in partitions:
        keys, counts = np.unique(np.asarray(cols.get("k", []), dtype=np.uint64), return_counts=True)
        out.append({int(k): int(c) for k, c in zip(keys, counts, strict=True)})
    return out


@pytest.fixture
def key_paths(tmp_path: Path) -> list[str]:
    paths = []
    for i, keys in enumerate(KEYS):
        p = tmp_path / f"k{i}.parquet"
        t = pa.table({"k": pa.array(keys, pa.uint64()), "row": pa.array(range(len(keys)), pa.int64())})
        pq.write_table(t, p)
        paths.append(str(p))
    return paths


def _expected(p: int) -> list[dict[int, int]]:
    out: list[dict[int, int]] = [{} for _ in range(p)]
    for keys in KEYS:
        for k in keys:
            out[k % p][k] = out[k % p].get(k, 0) + 1
    return out


@pytest.mark.parametrize("partitions", [1, 2, 7])
def test_inline_shuffle_groups_every_key_whole(inline_engine, key_paths, partitions):
    got = inline_engine.shuffle(key_paths, key="k", reduce=REDUCE, num_partitions=partitions)
    assert _key_counts(got) == _expected(partitions)


@pytest.mark.ray
@pytest.mark.parametrize("partitions", [1, 2, 7])
def test_ray_shuffle_groups_every_key_whole(ray_engine, key_paths, partitions):
    # partitions=1 is what a 1-CPU Ray run uses: it once handed the reduce a list instead of a table.
    got = ray_engine.shuffle(key_paths, key="k", reduce=REDUCE, num_partitions=partitions)
    assert _key_counts(got) == _expected(partitions)


@pytest.mark.ray
def test_ray_shuffle_defaults_to_one_partition_per_worker(ray_engine, key_paths):
    got = ray_engine.shuffle(key_paths, key="k", reduce=REDUCE)
    assert len(got) == ray_engine.num_workers
    assert _key_counts(got) == _expected(ray_engine.num_workers)


def test_shuffle_of_no_files_reduces_empty_partitions(inline_engine):
    assert inline_engine.shuffle([], key="k", reduce=REDUCE, num_partitions=3) == [{}, {}, {}]


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_ray_actor_pool_is_sized_by_the_cpus_alive_now(ray_engine, monkeypatch):
    """After a lost node the engine's worker count (taken at start) is stale: an actor pool sized by it
    has actors that never start, and the calls placed on them waited forever (the web recipe's node-loss
    test hung so, in the segment after the MinHash dedup). Here the embedded runtime has 2 CPUs and the
    engine believes it has 6: every item still finishes, on at most 2 actors."""
    import os

    monkeypatch.setattr(ray_engine, "num_workers", 6)
    got = ray_engine.map_worker(lambda: lambda item: (item, os.getpid()), list(range(8)))
    assert [item for item, _ in got] == list(range(8))
    assert len({pid for _, pid in got}) <= 2


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_ray_actor_pool_gives_no_work_to_an_actor_that_never_starts(ray_engine):
    """An actor of the pool that cannot start (its CPU held elsewhere, as after a lost node whose loss
    the cluster has not yet noticed) gets no work: the items go to the actors that started. Calls placed
    on every actor up front waited forever on that one (the slow web test's node-loss run hung so)."""
    import os

    import ray

    @ray.remote(num_cpus=1)
    class Blocker:
        def pid(self) -> int:
            return os.getpid()

    blocker = Blocker.remote()  # holds one of the runtime's 2 CPUs for the whole call
    try:
        ray.get(blocker.pid.remote())
        got = ray_engine.map_worker(lambda: lambda item: (item, os.getpid()), list(range(6)))
    finally:
        ray.kill(blocker)
    assert [item for item, _ in got] == list(range(6))
    assert len({pid for _, pid in got}) == 1
