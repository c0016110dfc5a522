"""A run folder with a mix.json (``curate mix``) gets the mixture section in report.html and report.md."""

from __future__ import annotations

import json
from pathlib import Path

from curate.report.build import build_report

MIX = {
    "by": "source",
    "sources": [{"name": "a"}, {"name": "b"}],
    "horizon": 10_000,
    "max_epochs": 4.0,
    "mixtures": {
        "natural": {
            "weights": {"a": 0.5, "b": 0.5},
            "max_epochs": 1.0,
            "within_epoch_limit": True,
            "measured_bpb": {"rung0": 3.2},
            "heldout_predicted_bpb": 3.25,
        },
        "predicted": {
            "weights": {"a": 0.1, "b": 0.9},
            "max_epochs": 1.8,
            "within_epoch_limit": True,
            "measured_bpb": {},
        },
    },
    "regression": {"model": "linear", "held_out": 1, "spearman": {"value": None, "ci": [None, None]}},
    "chosen": {
        "name": "predicted",
        "weights": {"a": 0.1, "b": 0.9},
        "predicted_bpb": 3.05,
        "predicted_interval": [3.0, 3.1],
    },
}


def test_a_runs_mix_json_is_reported_and_absent_without_it(run_dir: Path) -> None:
    html_path, md_path = build_report(run_dir)
    assert 'href="#mixture"' not in html_path.read_text()
    (run_dir / "mix.json").write_text(json.dumps(MIX))
    html_path, md_path = build_report(run_dir)
    html, md = html_path.read_text(), md_path.read_text()
    assert '<a href="#mixture">mixtures</a>' in html
    assert 'id="mixture"' in html
    assert "a 0.10, b 0.90" in html
    assert "a 0.10, b 0.90" in md  # the chosen weights
