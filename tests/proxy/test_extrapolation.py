"""Nothing in ``goodput.json`` is extrapolated or read from an un-cooled checkpoint: a tiny proxy phase
(raw vs curated, the null and planted controls, a second ladder point) and a walk over every key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from curate.proxy.phase import run_phase
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import tiny_section, write_kept, write_rejected

# keys that came from a fitted tail or from checkpoints before T (removed); ``decision_agreement`` only
# at the top level (the ladder's, across finished points, is the one kept)
REMOVED = {
    "baseline_power_law",
    "bpb_at_T_over_4",
    "agreement_T_over_4_vs_T",
    "effective_tokens_per_device_hour",
    "learning_signal_curve",
    "at_T_over_4",  # a choice set's accuracy at T/4
}


def _walk(x: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """Every ``(path, key, value)`` of a JSON document, depth first."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield path, k, v
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _walk(v, f"{path}[{i}]")


@pytest.fixture(scope="module")
def goodput(tmp_path_factory) -> dict[str, Any]:
    from curate.core.engine import InlineEngine

    d = tmp_path_factory.mktemp("run")
    write_kept(d, np.random.default_rng(0))
    write_rejected(d, ["zz qq " * 30], ["s:x"])
    section = tiny_section(
        controls=["null", "planted"], ladder=[{"model": "proxy_tiny", "budget": 32 * 4 * 4, "seeds": 2}]
    )
    ctx = RunContext(
        run_dir=d, config={}, engine=InlineEngine(progress=False), manifest={}, section=parse(section)
    )
    run_phase(ctx)
    return json.loads((d / "goodput.json").read_text())


def test_no_removed_key_anywhere_and_every_multiplier_stays_in_its_measured_range(goodput):
    seen = list(_walk(goodput))
    assert [(p, k) for p, k, _ in seen if k in REMOVED] == []
    assert "decision_agreement" not in goodput
    assert [p for p, k, _ in seen if k == "decision_agreement"] == [".ladder"]
    # every multiplier-like block: a recipe's, a control's, the verdict's, each ladder point's, the MDE's
    blocks = [(f"{p}.{k}", v) for p, k, v in seen if "multiplier" in k and isinstance(v, dict)]
    blocks = [(p, v) for p, v in blocks if "value" in v or "worse" in v]  # not the kept/rejected ratio's map
    assert len(blocks) >= 2 * 4 + 3  # raw, curated, null, planted at two points; controls; verdict
    ranged = [(p, v) for p, v in blocks if v.get("range")]
    assert len(ranged) >= 2 * 4  # raw, curated, null, planted at the main point at least
    for p, v in ranged:  # inside the measured range; a value beyond it is the range's end, marked as a bound
        lo, hi = v["range"]
        for key in ("value", "ci_low", "ci_high"):
            x, mark = v.get(key), (v.get("bounds") or {}).get(key)
            if x is None:
                continue
            assert lo - 1e-9 <= x <= hi + 1e-9, (p, key, x, v["range"])
            assert mark in (None, ">", "<"), p
            if mark == ">":
                assert x == pytest.approx(hi), p
            if mark == "<":
                assert x == pytest.approx(lo), p


def test_the_curves_say_they_are_descriptive_and_agreement_is_across_finished_points(goodput):
    assert "no number in this file" in goodput["curves_note"]
    assert "not cooled down" in goodput["curves_note"]
    da = goodput["ladder"]["decision_agreement"]
    assert da["pairs"] == 1  # raw vs curated: controls are not compared
    assert da["points"] == ["proxy_tiny@512"]
    assert da["reference"] == "proxy_tiny@1024"
    small, ref = (goodput["ladder"]["points"][i]["recipes"] for i in (1, 0))
    same = np.sign(small["curated"]["bpb_at_T"] - small["raw"]["bpb_at_T"]) == np.sign(
        ref["curated"]["bpb_at_T"] - ref["raw"]["bpb_at_T"]
    )
    assert da["value"] == float(same)
    assert goodput["controls"]["planted"]["matched"]["of"] == "curated"
    assert 0 < goodput["controls"]["planted"]["matched"]["shares_with_baseline"] <= 1
    assert set(goodput["controls"]["decision"]) == {"supported", "reasons"}
