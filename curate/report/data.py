"""What the report reads from a run directory, gathered cheaply and defensively.

Every input except ``manifest.json`` is optional: a run without proxy runs has no ``goodput.json``, a
run without an export has no ``export/manifest.json``, a run that rejected nothing has no
``rejected/`` parts. Large runs stay cheap: score histograms (:mod:`curate.report.histograms`) read
only the numeric score columns, and example documents (:mod:`curate.report.examples`) only the row
groups that hold a still-needed reason.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.filters.pii import masker
from curate.goodput.schema import Goodput, GoodputError, load
from curate.io import runfiles
from curate.report.examples import Example, sample_examples
from curate.report.histograms import Histogram, Threshold, histograms, score_columns
from curate.runtime.context import load_manifest

log = logging.getLogger(__name__)

GOODPUT = "goodput.json"
EXPORT_MANIFEST = Path("export") / "manifest.json"


@dataclass
class RunData:
    """Everything the report shows, loaded once."""

    run_dir: Path
    manifest: dict[str, Any]
    goodput: Goodput | None
    goodput_error: str | None
    export: dict[str, Any] | None
    histograms: list[Histogram]
    examples: dict[str, list[Example]]
    search: dict[str, Any] | None = None  # search.json (curate search), when the run has one
    mix: dict[str, Any] | None = None  # mix.json (curate mix), when the run has one


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    if not path.is_file():
        return None, None
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"{path.name} could not be read: {e}"
    if not isinstance(obj, dict):
        return None, f"{path.name} is not a JSON object"
    return obj, None


def _read_goodput(path: Path) -> tuple[Goodput | None, str | None]:
    """``goodput.json`` as its typed object, or why it could not be read (None, None: there is none)."""
    if not path.is_file():
        return None, None
    try:
        g = load(path)
    except GoodputError as e:
        return None, f"{path.name} could not be read: " + (f"{e.path}: {e.problem}" if e.path else e.problem)
    except OSError as e:
        return None, f"{path.name} could not be read: {e}"
    if not g.has("recipes"):
        return None, f"{path.name} has no 'recipes' mapping"
    return g, None


def thresholds(manifest: dict[str, Any]) -> dict[str, list[Threshold]]:
    """Bounds of every select rule in ``stages_resolved``, by column (``equals`` only when numeric)."""
    out: dict[str, list[Threshold]] = {}
    for st in manifest.get("stages_resolved") or []:
        rules = (st.get("params") or {}).get("rules") if isinstance(st, dict) else None
        for rule in rules or []:
            col = rule.get("column")
            if not col:
                continue
            for kind in ("min", "max", "equals"):
                v = rule.get(kind)
                if isinstance(v, bool) or not isinstance(v, int | float):
                    continue
                out.setdefault(col, []).append(
                    Threshold(col, kind, float(v), str(st.get("label") or st.get("name")))
                )
    return out


def removing_columns(manifest: dict[str, Any]) -> dict[str, int]:
    """Score column -> documents its select rules removed (only columns that removed any)."""
    from curate.runtime.manifest import deciding_columns

    by_reason = manifest.get("removed_by_reason") or {}
    out: dict[str, int] = {}
    for reason, column in deciding_columns(manifest).items():
        if by_reason.get(reason):
            out[column] = out.get(column, 0) + by_reason[reason]
    return out


def load_run(run_dir: str | Path, *, per_reason: int = 3, bins: int = 40) -> RunData:
    """Read a finished run directory (``manifest.json`` required; everything else optional)."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    goodput, gerr = _read_goodput(run_dir / GOODPUT)
    export, eerr = _read_json(run_dir / EXPORT_MANIFEST)
    if eerr:
        log.warning("report: %s", eerr)
    kept = runfiles.parts(run_dir, "kept")
    rejected = runfiles.parts(run_dir, "rejected")
    removing = removing_columns(manifest)
    cols = score_columns(kept + rejected, always=tuple(sorted(removing, key=lambda c: (-removing[c], c))))
    hists = histograms(kept, rejected, cols, thresholds(manifest), bins=bins)
    for h in hists:
        h.removed = removing.get(h.column, 0)
    by_reason = manifest.get("removed_by_reason") or {}
    reasons = sorted(by_reason, key=lambda r: (-by_reason[r], r))
    mask = masker(manifest.get("stages_resolved") or [])  # examples show no raw PII value
    examples = sample_examples(rejected, reasons, per_reason=per_reason, mask=mask)
    return RunData(
        run_dir=run_dir,
        manifest=manifest,
        goodput=goodput,
        goodput_error=gerr,
        export=export,
        histograms=hists,
        examples=examples,
        search=_read_json(run_dir / "search.json")[0],
        mix=_read_json(run_dir / "mix.json")[0],
    )
