"""The pipeline's proxy phase runs ``proxy.mix`` after its measurement, as ``curate mix`` would, on the
measurement's own tokenizer and eval sets; without a ``mix:`` it runs none (the toy of test_mix.py at its
smallest: two spread candidates, one rung seed, no split seed, two confirmation seeds)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.proxy.phase import run_phase
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import WORDS, doc, tiny_section, write_rejected

SECTION = tiny_section(
    mix={"runs": 2, "singles": False, "split": 0, "confirm_seeds": 2, "n_boot": 10, "n_perm": 10}
)


def _toy_run(d):
    """kept/: three sources of three vocabularies and the held-out eval source ``docs``; rejected/: ten
    short documents."""
    rng = np.random.default_rng(0)
    (d / "kept").mkdir()
    texts, srcs = [], []
    for s, n, lo in (("a", 40, 0), ("b", 30, 10), ("c", 20, 20)):
        for _ in range(n):
            texts.append(" ".join(WORDS[i] for i in rng.integers(lo, lo + 11, 60)) + ".")
            srcs.append(s)
    texts += [doc(rng, 60) for _ in range(10)]
    srcs += ["docs"] * 10
    ids = [f"k{i}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "text": texts, "source": srcs}), d / "kept" / "part-00000.parquet")
    write_rejected(d, [f"zz {i} qq " * 40 for i in range(10)], ["gopher_quality_v1:short_doc"] * 10)
    return d


def _ctx(d, section):
    from curate.core.engine import InlineEngine

    config = {"name": "toy", "input": {"path": "x.jsonl", "format": "jsonl"}, "stages": [], "proxy": section}
    manifest = {"stages": [{"name": "read", "cpu_s": 1.0}]}
    return RunContext(
        run_dir=d,
        config=config,
        engine=InlineEngine(progress=False),
        manifest=manifest,
        section=parse(section),
    )


@pytest.fixture(scope="module")
def phase_with_mix(tmp_path_factory):
    d = _toy_run(tmp_path_factory.mktemp("mixphase"))
    return d, run_phase(_ctx(d, SECTION))


def test_the_phase_runs_the_mixture_search_after_the_measurement(phase_with_mix):
    d, summary = phase_with_mix
    mix = json.loads((d / "mix.json").read_text())
    assert summary["mix"] == {
        "chosen": mix["chosen"]["weights"],
        "decision": mix["decision"]["sentence"],
        "mix": "mix.json",
    }
    assert set(mix["chosen"]["weights"]) == {"a", "b", "c"}
    assert sum(mix["chosen"]["weights"].values()) == pytest.approx(1.0, abs=1e-5)
    # the measurement ran too, and the search used its tokenizer and eval sets (proxy/spec.json matched)
    goodput = json.loads((d / "goodput.json").read_text())
    assert set(goodput["recipes"]) >= {"raw", "curated"}
    assert summary["goodput"] == "goodput.json"
    assert mix["held_out_sources"] == ["docs"]
    names = [n for n in mix["mixtures"] if n != "predicted"]
    assert names == ["natural", "s00", "s01"]
    assert mix["regression"]["noise_ceiling"] is None  # split: 0 measures no second seed
    # rung 0: natural and the two draws on one seed; confirm: natural, chosen and the null on two (no
    # source alone was measured, so there is no best single source)
    assert mix["cost"]["runs"] == 3 + 3 * 2
    assert len(list((d / "proxy" / "mix").glob("*/*/seed*/result.json"))) == mix["cost"]["runs"]
    assert "search" not in summary
    assert "ablation" not in summary


def test_a_rerun_of_the_phase_reuses_every_mixture_run(phase_with_mix):
    d, summary = phase_with_mix
    runs = sorted((d / "proxy").glob("**/seed*/result.json"))
    stamps = {p: p.stat().st_mtime_ns for p in runs}
    again = run_phase(_ctx(d, SECTION))
    assert again["mix"] == summary["mix"]
    assert {p: p.stat().st_mtime_ns for p in sorted((d / "proxy").glob("**/seed*/result.json"))} == stamps


def test_without_a_mix_section_the_phase_runs_no_mixture_search(phase_with_mix, monkeypatch):
    import curate.proxy.design.mix

    d, _ = phase_with_mix

    def refuse(*args, **kwargs):
        raise AssertionError("run_mix called without proxy.mix")

    monkeypatch.setattr(curate.proxy.design.mix, "run_mix", refuse)
    section = {k: v for k, v in SECTION.items() if k != "mix"}
    assert "mix" not in run_phase(_ctx(d, section))  # the measurement's runs are all reused
