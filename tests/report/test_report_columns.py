"""Every score column whose rules removed documents gets a histogram, however many columns a run has."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.report.data import load_run
from curate.report.html import _scores_section


def test_removing_columns_come_first_and_are_never_capped(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    cols = {f"s.c{i:02d}": rng.random(20) for i in range(40)}
    (tmp_path / "kept").mkdir()
    (tmp_path / "rejected").mkdir()
    pq.write_table(
        pa.table({"id": [f"k{i}" for i in range(20)], "text": ["t"] * 20, "source": ["x"] * 20, **cols}),
        tmp_path / "kept" / "part-00000.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": ["r0", "r1", "r2"],
                "text": ["t"] * 3,
                "source": ["x"] * 3,
                "s.c39": [0.1, 0.2, 0.3],
                "stage": ["select"] * 3,
                "reason": ["select:s.c39<0.5"] * 3,
            }
        ),
        tmp_path / "rejected" / "part-s0-00000.parquet",
    )
    rule = {"column": "s.c39", "min": 0.5, "max": None, "equals": None, "reason": None, "exclusive": False}
    manifest = {
        "stages_resolved": [
            {"name": "select", "label": "select", "kind": "select", "params": {"rules": [rule]}}
        ],
        "removed_by_reason": {"select:s.c39<0.5": 3},
        "accounting": {"input": 23, "kept": 20, "rejected": 3, "quarantined": 0, "balanced": True},
        "stages": [],
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    d = load_run(tmp_path)
    # s.c39 is the 40th column: past the cap of 32 others, yet first, with its removals.
    assert [h.column for h in d.histograms][:2] == ["s.c39", "s.c00"]
    assert len(d.histograms) == 33
    assert (d.histograms[0].removed, d.histograms[0].n_rejected) == (3, 3)
    html = _scores_section(d)
    assert "<details><summary>32 more score columns (no removals)</summary>" in html
    assert html.index('data-column="s.c39"') < html.index("<details>") < html.index('data-column="s.c00"')
