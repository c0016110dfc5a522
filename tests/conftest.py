"""Shared fixtures: small tables, the real corpora (skipped when absent), one Ray session per test run."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


def corpora_path(*parts: str) -> Path:
    """A file under ../shared/corpora; the calling test is skipped, with the reason, when it is absent."""
    p = CORPORA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"needs {p} (../shared/corpora is absent on this machine)")
    return p


@pytest.fixture
def corpora() -> Path:
    if not CORPORA.exists():
        pytest.skip(f"needs {CORPORA} (../shared/corpora is absent on this machine)")
    return CORPORA


def make_table(texts: list[str], ids: list[str] | None = None, source: str = "test") -> pa.Table:
    """A batch with the base columns, as readers produce it."""
    ids = ids or [f"d{i}" for i in range(len(texts))]
    return pa.table({"id": ids, "text": texts, "source": [source] * len(texts)})


@pytest.fixture(scope="session")
def ray_engine():
    """One embedded Ray runtime for the whole test session (ray.init costs seconds)."""
    pytest.importorskip("ray")
    from curate.engine import RayEngine

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    engine = RayEngine(num_cpus=2, progress=False)
    yield engine
    engine.shutdown()


@pytest.fixture
def inline_engine():
    from curate.engine import InlineEngine

    return InlineEngine(progress=False)
