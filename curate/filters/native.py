"""The one door to the native module (``curate/filters/_native.c``, a CPython extension).

``setup.py`` builds the extension when the package is installed (``pip install -e .``); it is optional, so
an install without a C compiler still works and the filters take their polars and numpy paths: the same
results, about 2.5x slower on web text. ``CURATE_NATIVE=0`` selects those paths even where the module is
built (benchmarks and the tests that hold the two paths equal use it). Both paths classify characters by
one rule, the interpreter's: letters and spaces are what ``str.isalpha()`` and ``str.isspace()`` say, never
polars' own (newer) Unicode tables (see :mod:`curate.filters.words_en`).

Everything else in the package reaches the extension through this module: :func:`active` gives it to a
filter when the filter should take it, :func:`path` says which path is in use and why (the run manifest
records it as ``native``), :data:`KERNELS` names what the module does, and :func:`large_strings`,
:func:`offsets` and :func:`data` hand Arrow buffers to its functions.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Literal, TypedDict

import numpy as np
import pyarrow as pa

# CURATE_NATIVE=0 makes the filters take their polars and numpy paths even where the native module is built.
NATIVE_ENV = "CURATE_NATIVE"
DISABLED = f"disabled by {NATIVE_ENV}=0"
NOT_BUILT = "not built"

# The kernels, each the module's functions that make it up (every one is in _native.pyi).
KERNELS: dict[str, tuple[str, ...]] = {
    # the spaCy-compatible English word split over a per-process chunk cache (curate.filters.words_en)
    "word_split": ("tables", "cache", "cache_add", "cache_len", "cache_clear", "scan", "emit"),
    # spaCy's sentencizer counts of C4's lines, from the same cache (curate.filters.c4)
    "sentences": ("sentence_tables", "sentences"),
    # Gopher's repeated paragraphs and lines (curate.filters.gopher_repetition)
    "dup_pieces": ("dup_pieces",),
    # Gopher's top and duplicated n-gram characters (curate.filters.gopher_repetition)
    "ngram_chars": ("ngram_chars",),
}

_MODULE: ModuleType | None
try:  # built when the package is installed
    from curate.filters import _native as _MODULE
except ImportError:  # no C compiler at install time: the polars and numpy paths alone
    _MODULE = None


class NativePath(TypedDict):
    """Which path the filters take: ``native``, or ``fallback`` with the reason (else None)."""

    path: Literal["native", "fallback"]
    reason: str | None


def built() -> bool:
    """Whether the extension is importable (compiled at install time)."""
    return _MODULE is not None


def path() -> NativePath:
    """The path the filters take in this process now: ``native``, or ``fallback`` because the module is
    switched off (``CURATE_NATIVE=0``, :data:`DISABLED`) or was not built (:data:`NOT_BUILT`)."""
    if _MODULE is None:
        return {"path": "fallback", "reason": NOT_BUILT}
    if os.environ.get(NATIVE_ENV, "1") == "0":
        return {"path": "fallback", "reason": DISABLED}
    return {"path": "native", "reason": None}


def enabled() -> bool:
    """Whether the filters take the native module's paths (built, and not switched off)."""
    return path()["path"] == "native"


def active() -> ModuleType | None:
    """The extension when the filters should take it (:func:`enabled`), else None."""
    return _MODULE if enabled() else None


def module() -> ModuleType:
    """The extension, switch or not (the word split's cache lives in it once made); raises when not built."""
    if _MODULE is None:
        raise RuntimeError("the native module curate.filters._native is not built")
    return _MODULE


def large_strings(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow large_string array (cast and combined as needed), the layout the kernels read."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if arr.type == pa.large_string() else arr.cast(pa.large_string())


def offsets(arr: pa.Array) -> np.ndarray:
    """The int64 offsets of a large_string or large_list array, its slice taken into account."""
    return np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]


def data(arr: pa.Array) -> pa.Buffer:
    """The data buffer of a large_string array (an empty buffer when it has none)."""
    return arr.buffers()[2] or pa.py_buffer(b"")
