"""Seeds until decided in the proxy phase: the measurement grows in stages of seeds, each pair is looked at
after each stage and keeps its call once decided, and the report holds the design's calls."""

from __future__ import annotations

import json

import numpy as np
import pytest

from curate.core.engine import InlineEngine
from curate.core.errors import PhaseError
from curate.proxy.phase import run_phase
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import tiny_section, write_kept, write_rejected


def _section(**extra):
    return tiny_section(
        recipes={"raw": {"from": "raw"}, "curated": {"from": "kept"}},
        controls=[],
        seeds=5,
        noise={"sd": 0.05, "dof": 40, "source": "a test's"},
        sequential={"effect": 0.08},
        **extra,
    )


def test_the_phase_stops_when_every_pair_is_decided_and_reports_the_designs_calls(tmp_path):
    rng = np.random.default_rng(0)
    write_kept(tmp_path, rng)
    write_rejected(tmp_path, [f"zz {i} qq " * 40 for i in range(20)], ["gopher_quality_v1:short_doc"] * 20)
    section = _section()
    cfg = parse(section)
    design = cfg.sequential.design(0.05, 1)
    assert design.looks == (3, 4, 5)
    ctx = RunContext(
        run_dir=tmp_path, config={}, engine=InlineEngine(progress=False), manifest={}, section=cfg
    )
    run_phase(ctx)
    g = json.loads((tmp_path / "goodput.json").read_text())
    mc = g["multiple_comparisons"]
    assert mc["method"] == "group-sequential"
    assert mc["design"]["looks"] == [3, 4, 5]
    row = mc["pairs"]["curated"]
    assert row["call"] in ("better", "worse", "not_called")
    looks_taken = [h["seeds"] for h in mc["history"]]
    assert looks_taken in ([3], [3, 4], [3, 4, 5])
    assert g["seeds"] == list(range(looks_taken[-1]))  # the report is the last stage's
    if row["call"] != "not_called":
        assert row["seeds"] == looks_taken[-1]
        assert abs(row["z"]) >= design.efficacy[row["look"]]
    assert g["verdict"]["call"] == row["call"]
    runs = sorted(p.parent.name for p in (tmp_path / "proxy" / "curated").glob("seed*/result.json"))
    assert runs == [f"seed{s}" for s in range(looks_taken[-1])]  # no seed past the stopping look trained


def test_a_sequential_section_needs_the_calibrated_noise():
    with pytest.raises(PhaseError, match=r"proxy.sequential: needs proxy.noise"):
        parse(tiny_section(sequential={"effect": 0.1}))
    with pytest.raises(PhaseError, match=r"^proxy.sequential.effect: expected a value > 0, got -1.0$"):
        parse(_section(**{}) | {"sequential": {"effect": -1}})


@pytest.mark.parametrize(("inconclusive_until", "looks"), [(0, [3]), (4, [3, 4]), (99, [3, 4, 5])])
def test_a_decided_run_goes_on_while_its_gate_is_inconclusive(monkeypatch, inconclusive_until, looks):
    """Every pair decided at the first look, but the planted control missed at a stated power below 0.95:
    the design goes on to its next look (until the gate is not inconclusive, or the last look), and the
    call made at the first look stands."""
    from types import SimpleNamespace

    from curate.proxy.design import sequential

    seen: list[int] = []
    calls_made: list[dict] = []

    def fake_measure(ctx, exp):
        n = len(exp.cfg.seeds)
        seen.append(n)
        calls_made.append(exp.calls({"curated": np.full(n, -0.5) + 0.01 * np.arange(n)}, ["curated"]))
        return SimpleNamespace(report={"controls": {"decision": {"inconclusive": n < inconclusive_until}}})

    monkeypatch.setattr(sequential, "measure", fake_measure)
    cfg = parse(_section())
    sequential.measure_until_decided(None, cfg)
    assert seen == looks
    assert [c["pairs"]["curated"]["look"] for c in calls_made] == [0] * len(looks)
    assert {c["pairs"]["curated"]["call"] for c in calls_made} == {"better"}
