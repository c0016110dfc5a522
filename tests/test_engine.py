"""Engine.shuffle at 1, 2 and many partitions, inline and on Ray: every key lands whole in key % p."""

from __future__ import annotations

import os
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


def test_ray_notices_that_matter_are_said_once_in_our_words_and_the_rest_stays_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from curate.core.ray_connect import RayOutput

    log = tmp_path / "ray.log"
    out = RayOutput(log)
    out.verbose = False  # as without curate -v, whatever level this test session logs at
    shm = (
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes "
        "available. This will harm performance!"
    )
    with caplog.at_level(logging.WARNING, logger="curate.core.ray_connect"):
        with out.starting():  # what Ray prints while it starts goes to the file, not to this process's fds
            os.write(2, f"{shm}\nToken authentication is enabled for this Ray cluster.\n".encode())
        for line in (shm, "(raylet) Task was killed due to the node running low on memory.", shm):
            out.notice(line)
    assert [r.getMessage() for r in caplog.records] == [
        "Ray keeps its objects on disk in /tmp: /dev/shm has only 0.1 GB free, so the run is slower; free "
        f"/dev/shm or make it larger (docker run --shm-size=...) (Ray's own words: {log})",
        "Ray stopped a worker because this machine ran low on memory; its work is retried. Fewer workers "
        f"(engine.num_cpus in the pipeline) or more memory avoid it (Ray's own words: {log})",
    ]
    assert log.read_text() == f"{shm}\nToken authentication is enabled for this Ray cluster.\n"


def test_ray_init_keeps_the_callers_sigterm_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import types

    from curate.core.ray_connect import keep_sigterm_handler

    installed: list[object] = []
    utils = types.SimpleNamespace(set_sigterm_handler=installed.append)
    fake_ray = types.SimpleNamespace(_private=types.SimpleNamespace(utils=utils))

    def ours(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def ray_init() -> None:  # what ray.init does to SIGTERM: its own Python handler, then its core worker's
        fake_ray._private.utils.set_sigterm_handler(lambda s, f: None)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    before = signal.signal(signal.SIGTERM, ours)
    try:
        with keep_sigterm_handler(fake_ray):
            ray_init()
        assert installed == []  # Ray's Python handler was never installed
        assert signal.getsignal(signal.SIGTERM) is ours
        assert fake_ray._private.utils.set_sigterm_handler == installed.append  # put back
        signal.signal(
            signal.SIGTERM, signal.SIG_DFL
        )  # a process with no handler of its own: Ray's, as before
        with keep_sigterm_handler(fake_ray):
            ray_init()
        assert len(installed) == 1
    finally:
        signal.signal(signal.SIGTERM, before)
