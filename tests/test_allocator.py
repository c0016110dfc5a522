"""curate.runtime.allocator: the settings a curate process gives its allocators, and what it leaves alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from curate.runtime.allocator import GLIBC, OTHERS

NAMES = [*GLIBC, *OTHERS, "CURATE_ALLOCATOR"]

# Runs configure() in a fresh interpreter (it sets variables and calls mallopt for the whole process), then
# reports what it set, the environment after it, and whether polars' jemalloc (loaded after) kept working.
PROBE = """
import json, os
from curate.runtime.allocator import configure, GLIBC, OTHERS
set_here = configure()
env = {k: os.environ.get(k) for k in [*GLIBC, *OTHERS]}
import polars as pl, pyarrow as pa
total = pl.Series(range(1_000_000)).sum()
print(json.dumps({"set": set_here, "env": env, "jemalloc": os.environ["_RJEM_MALLOC_CONF"],
                  "pool": pa.default_memory_pool().backend_name, "sum": total}))
"""


def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in NAMES}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc settings are Linux-only")
def test_configure_sets_every_unset_variable_and_pyarrow_allocates_from_the_system_pool() -> None:
    r = _probe()
    expected = {
        "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
        "MALLOC_TOP_PAD_": str(64 << 20),
        "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
        "_RJEM_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "OPENBLAS_THREAD_TIMEOUT": "4",
    }
    assert r["set"] == expected
    assert r["env"] == expected  # inherited by the processes this one starts (embedded Ray's workers)
    assert r["pool"] == "system"
    # polars prepends its own decay times (500 ms / 1 s) to the variable; jemalloc takes the last value
    assert r["jemalloc"] == "dirty_decay_ms:500,muzzy_decay_ms:1000,dirty_decay_ms:-1,muzzy_decay_ms:-1"
    assert r["sum"] == 499_999_500_000


def test_a_variable_the_user_set_is_kept() -> None:
    r = _probe(MALLOC_TOP_PAD_="4096", ARROW_DEFAULT_MEMORY_POOL="jemalloc", OPENBLAS_THREAD_TIMEOUT="20")
    assert set(r["set"]) == {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "_RJEM_MALLOC_CONF"}
    assert r["env"]["OPENBLAS_THREAD_TIMEOUT"] == "20"
    assert r["env"]["MALLOC_TOP_PAD_"] == "4096"
    assert r["env"]["ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"
    assert r["env"]["MALLOC_TRIM_THRESHOLD_"] == str(1 << 30)


def test_curate_allocator_default_changes_nothing() -> None:
    r = _probe(CURATE_ALLOCATOR="default")
    assert r["set"] == {}
    assert r["env"] == dict.fromkeys([*GLIBC, *OTHERS])
    assert r["pool"] != "system"
    assert r["jemalloc"] == "dirty_decay_ms:500,muzzy_decay_ms:1000"
