"""Cheap, well-mixed hashes of document ids: the keys of the coupled training streams
(:class:`curate.instrument.streams.DocStream`) and of the sampled controls' memberships."""

from __future__ import annotations

import numpy as np


def unit_hash(hids: np.ndarray, salt: int) -> np.ndarray:
    """A uniform draw in [0, 1) per document id hash, a function of ``(salt, id)`` only (splitmix64)."""
    return (
        mix64(np.asarray(hids, dtype=np.uint64) ^ mix64(np.array([salt], dtype=np.uint64))) >> np.uint64(11)
    ).astype(np.float64) / float(1 << 53)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic): a cheap, well-mixed hash."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
