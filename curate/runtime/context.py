"""What a post-pipeline phase (proxy runs, export, report) receives from the runner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.core.engine import Engine
from curate.core.errors import PhaseError
from curate.core.params import Section
from curate.io import runfiles

if TYPE_CHECKING:
    from curate.io.stage import Mirror


@dataclass
class RunContext:
    """A finished (or resumed) pipeline run, handed to the phases in order (:data:`curate.compose.PHASES`):
    proxy, export, report.

    ``section`` is the phase's own section (:class:`curate.core.params.Section`), parsed once by the class
    registered under the phase's name (:data:`curate.core.registry.SECTIONS`): a ``ProxyConfig``,
    ``ExportOptions`` or ``ReportOptions`` (a verb on a finished run parses it from the run's manifest
    through the same class); a phase narrows it to its own class (``ProxyConfig.narrow(ctx.section)``).
    The phase writes only under ``run_dir`` and returns a dict recorded in ``manifest.json`` under its
    name.

    ``mirror``: for a run directory in object storage, the driver's local mirror of it (``run_dir`` is
    its folder); a phase whose tasks may run on other nodes hands them ``mirror.root()`` and moves files
    with ``mirror.send`` / ``mirror.receive``, so no task reads a path only the driver's disk has.
    """

    run_dir: Path
    config: dict[str, Any]
    engine: Engine
    manifest: dict[str, Any]
    section: Section | None = None
    pipeline_path: str | None = None
    mirror: Mirror | None = None

    @property
    def kept_dir(self) -> Path:
        return self.run_dir / "kept"

    @property
    def rejected_dir(self) -> Path:
        return self.run_dir / "rejected"

    def kept_files(self) -> list[Path]:
        """``kept/part-*.parquet``; in a mirror of a bucket run, named in the mirror and read from the
        bucket (:mod:`curate.io.runfiles`)."""
        return runfiles.parts(self.run_dir, "kept")

    def rejected_files(self) -> list[Path]:
        return runfiles.parts(self.run_dir, "rejected")

    def path(self, *parts: str) -> Path:
        """A path inside the run directory; refuses to leave it (e.g. through ``..``)."""
        p = (self.run_dir / Path(*parts)).resolve()
        root = self.run_dir.resolve()
        if p != root and root not in p.parents:
            raise PhaseError(f"{Path(*parts)}: outside the run directory {self.run_dir}")
        return p


def load_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no manifest; is {run_dir} a finished run directory?")
    return json.loads(path.read_text())
