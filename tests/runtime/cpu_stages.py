"""Test-only stages that burn a known amount of CPU where the engine runs them (imported by the runtime
tests, and by Ray's workers when they unpickle a stage): an exact dedup whose every collect burns
``collect_cpu_s``, and a transform whose set-up burns ``setup_cpu_s``."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from curate.core.registry import STAGES
from curate.core.stage import Transform
from curate.dedup.exact import ExactDedup, ExactParams


def burn(seconds: float) -> float:
    """Spin until this process has used ``seconds`` of CPU since the call; returns the CPU used."""
    c0 = time.process_time()
    x = 0
    while time.process_time() - c0 < seconds:
        x += 1
    return time.process_time() - c0


@dataclass
class BurnExactParams(ExactParams):
    """exact_dedup_v1's params plus the CPU-seconds every collect burns."""

    collect_cpu_s: float = 0.2


@STAGES.add("burn_exact_dedup_test_v1")
class BurnExactDedup(ExactDedup):
    """Test-only: exact_dedup_v1 whose collect of every part burns ``collect_cpu_s`` CPU-seconds."""

    Params = BurnExactParams

    def collect(self, table: pa.Table) -> pa.Table:
        burn(self.params.collect_cpu_s)
        return super().collect(table)


@dataclass
class BurnSetupParams:
    """The CPU-seconds the transform's set-up burns."""

    setup_cpu_s: float = 0.3


@STAGES.add("burn_setup_test_v1")
class BurnSetup(Transform):
    """Test-only: a transform that changes nothing and burns ``setup_cpu_s`` CPU-seconds in ``setup``."""

    Params = BurnSetupParams

    def setup(self) -> None:
        burn(self.params.setup_cpu_s)

    def process(self, table: pa.Table) -> pa.Table:
        return table
