"""Memory-allocator (and BLAS thread) settings for a ``curate`` process (the CLI calls :func:`configure`
before it imports numpy, polars, pyarrow or Ray).

A pipeline batch allocates and frees arrays of a few to tens of MB over and over (numpy through glibc's
malloc, polars through its own jemalloc, pyarrow through its memory pool). With their defaults each
freed block goes back to the kernel (glibc maps blocks over its dynamic threshold with ``mmap`` and trims
the heap's top; polars sets its jemalloc to purge freed pages after 0.5-1 s) and the next batch takes page
faults to get it again: on the web recipe ~700k minor faults and ~3 of ~30 CPU-s in the kernel. Here
glibc keeps freed memory for reuse (no trimming under 1 GiB, ``mmap`` only for blocks over 32 MiB), polars'
jemalloc does not purge, and pyarrow allocates through that same glibc heap: 8% less CPU on the web recipe.
The cost is that a process keeps the memory of its largest batches until it exits (peak RSS +20% there:
0.89 -> 1.08 GB; BENCHMARKS.md).

One setting of the same kind is not the allocator's: numpy's OpenBLAS keeps its idle threads spinning for
2^28 cycles (~0.1 s) after each multithreaded call before they sleep. The language filter's small matrix
products, one per batch, left one core busy-waiting through the reading and scoring that follow them: on the
web corpora ~3 CPU-s of ~11 for read + language ID, with no gain in wall time. ``OPENBLAS_THREAD_TIMEOUT=4``
(2^4 cycles, OpenBLAS's smallest) lets them sleep at once; large products still use every thread. The web
recipe's kept and rejected files stayed the same bytes (BENCHMARKS.md section 1; commit 18ee11b).

Settings go two ways: environment variables, which the processes this one starts read at their start, and
``mallopt`` for this process, whose glibc heap already runs. The embedded Ray runtime's actors inherit all of
them (checked in their ``/proc/<pid>/environ``); workers of a separate cluster keep their own environment.
A variable the user has set is left as it is; ``CURATE_ALLOCATOR=default`` turns all of this off.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

# glibc's mallopt parameters (malloc.h) and the environment variables it reads at start for the same.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
GLIBC = {
    "MALLOC_TRIM_THRESHOLD_": (_M_TRIM_THRESHOLD, 1 << 30),
    "MALLOC_TOP_PAD_": (_M_TOP_PAD, 64 << 20),
    "MALLOC_MMAP_THRESHOLD_": (_M_MMAP_THRESHOLD, 32 << 20),  # glibc's largest allowed value on 64-bit
}
OTHERS = {
    # polars' jemalloc: polars prepends its own decay times at import; jemalloc takes the last value
    "_RJEM_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1",
    "ARROW_DEFAULT_MEMORY_POOL": "system",  # pyarrow (read when its default pool is first made)
    "OPENBLAS_THREAD_TIMEOUT": "4",  # numpy's OpenBLAS (read when numpy loads): idle threads sleep at once
}


def configure() -> dict[str, str]:
    """Apply the settings (see the module docstring); returns the environment variables this call set."""
    if os.environ.get("CURATE_ALLOCATOR", "tuned") == "default":
        return {}
    set_here: dict[str, str] = {}
    for name, value in [*((n, str(v)) for n, (_, v) in GLIBC.items()), *OTHERS.items()]:
        if name not in os.environ:
            os.environ[name] = set_here[name] = value
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        try:
            mallopt = ctypes.CDLL("libc.so.6").mallopt
        except (OSError, AttributeError):
            return set_here
        for name, (param, _) in GLIBC.items():
            if name in set_here:
                mallopt(ctypes.c_int(param), ctypes.c_int(int(set_here[name])))
    return set_here
