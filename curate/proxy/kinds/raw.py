"""``from: raw``: every valid input document, kept and rejected (quarantined rows never entered the
pipeline as documents): the data as it came, the usual baseline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.core.params import invalid
from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob


@dataclass(frozen=True)
class RawEntry:
    """A ``from: raw`` entry as written: nothing besides ``from:``."""


@register
@dataclass
class Raw(Recipe):
    """kept/ and every non-quarantined row of rejected/."""

    KIND = "raw"
    USER = True
    CURATED = False

    Params = RawEntry

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> list[Recipe]:
        for key in ("select", "without_stages", "sweep"):
            if key in spec:
                raise invalid(key, "applies to from: kept only (from: raw is every valid input document)")
        return super().from_spec(name, spec)

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        from curate.instrument.shards import ShardJob

        jobs = [
            ShardJob(src=str(f), out=str(out / f"kept-{i:05d}"), **common) for i, f in enumerate(files.kept)
        ]
        jobs += [
            ShardJob(src=str(f), out=str(out / f"rejected-{i:05d}"), rejected=True, **common)
            for i, f in enumerate(files.rejected)
        ]
        return jobs
