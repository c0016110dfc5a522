"""``from: raw``: every valid input document, kept and rejected (quarantined rows never entered the
pipeline as documents): the data as it came, the usual baseline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.core.errors import PhaseError
from curate.proxy.errors import check_keys
from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob


@register
@dataclass
class Raw(Recipe):
    """kept/ and every non-quarantined row of rejected/."""

    KIND = "raw"
    USER = True
    CURATED = False

    @classmethod
    def from_spec(cls, name: str, spec: dict[str, Any], where: str) -> list[Recipe]:
        check_keys(spec, ["from", "select", "without_stages", "sweep"], where)
        if spec.get("select") or spec.get("without_stages") or spec.get("sweep"):
            raise PhaseError(f"{where}: select/without_stages apply to from: kept only")
        return [cls(name)]

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
