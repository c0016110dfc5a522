"""Per-stage attribution on a tiny synthetic run: the exact recipe set, the structure of ablation.json,
the effects' arithmetic, and the CLI table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from curate.core.errors import PhaseError
from curate.proxy.cli import format_ablation
from curate.proxy.design.ablate import ablation_config, removed_by_stage, run_ablation
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import doc, tiny_section, write_kept, write_rejected

SECTION = tiny_section(ladder=[{"model": "proxy_tiny", "budget": 32 * 4 * 4}])
MANIFEST = {
    "config": {"proxy": SECTION},
    "stages": [
        {"name": "read", "cpu_s": 1.0},
        {"name": "exact_dedup_v1", "cpu_s": 1.0},
        {"name": "gopher_quality_v1", "cpu_s": 2.0},
        {"name": "fasttext_quality_v1", "cpu_s": 1.0},
    ],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(0)
    write_kept(d, rng)
    rej = [f"zz {i} qq " * 40 for i in range(12)] + [doc(rng, 60) for _ in range(8)] + ["bad"] * 5
    reasons = (
        ["gopher_quality_v1:short_doc"] * 12 + ["exact_dedup_v1:duplicate"] * 8 + ["quarantine:bad_utf8"] * 5
    )
    write_rejected(
        d, rej, reasons, [r.split(":")[0] if not r.startswith("quarantine") else "read" for r in reasons]
    )
    (d / "manifest.json").write_text(json.dumps(MANIFEST))
    return d


def test_removed_by_stage_counts_rejections_in_stage_order(run_dir):
    assert removed_by_stage(run_dir, MANIFEST) == {"exact_dedup_v1": 8, "gopher_quality_v1": 12}


def test_ablation_config_is_baseline_curated_and_one_recipe_per_stage():
    cfg, base, subject = ablation_config(parse(SECTION), ["exact_dedup_v1", "gopher_quality_v1"])
    assert (base, subject) == ("raw", "curated")
    recipes = {
        "raw": {"from": "raw"},
        "curated": {"from": "kept"},
        "without_exact_dedup_v1": {"from": "kept", "without_stages": ["exact_dedup_v1"]},
        "without_gopher_quality_v1": {"from": "kept", "without_stages": ["gopher_quality_v1"]},
    }
    assert cfg.recipes == parse({"recipes": recipes}).recipes
    assert cfg.controls == []
    assert cfg.ladder == []
    # the rest is the run's own proxy section, at its baseline, without the ladder
    assert cfg == parse(
        {k: v for k, v in SECTION.items() if k not in ("recipes", "ladder")}
        | {"baseline": "raw", "recipes": recipes, "controls": []}
    )


def test_ablation_writes_ablation_json_with_each_stage_effect(run_dir, inline_engine):
    ctx = RunContext(
        run_dir=run_dir,
        config=MANIFEST["config"],
        engine=inline_engine,
        manifest=MANIFEST,
        section=parse(SECTION),
    )
    ab = run_ablation(ctx)
    assert json.loads((run_dir / "ablation.json").read_text()) == ab
    assert not (run_dir / "goodput.json").exists()  # the ablation's report has its own place
    report = json.loads((run_dir / "ablation" / "goodput.json").read_text())
    assert set(report["recipes"]) == {"raw", "curated", "without_exact_dedup_v1", "without_gopher_quality_v1"}
    assert ab["recipes"] == ["raw", "curated", "without_exact_dedup_v1", "without_gopher_quality_v1"]
    assert (ab["baseline"], ab["subject"], ab["report"]) == ("raw", "curated", "ablation/goodput.json")
    assert ab["point"] == {"model": "proxy_tiny", "budget": 1024, "seeds": [0, 1]}
    assert ab["headline"] == ["docs"]
    assert list(ab["stages"]) == ["exact_dedup_v1", "gopher_quality_v1"]
    assert ab["skipped"] == {
        "fasttext_quality_v1": "removed no documents (its ablation is the curated recipe itself)"
    }
    for stage, n in (("exact_dedup_v1", 8), ("gopher_quality_v1", 12)):
        e = ab["stages"][stage]
        assert e["recipe"] == f"without_{stage}"
        assert e["removed_docs"] == n
        assert e["call"] in ("pays", "costs", "not_called")
        d = e["diff_bpb_with_minus_without"]
        assert d["n"] == 2
        assert d["value"] == pytest.approx(np.mean(e["per_seed_diff"]))
        # the per-seed differences are those of the two recipes' paired differences to the baseline
        rec = report["recipes"]
        expect = np.array(rec["curated"]["paired"]["per_seed_diff"]) - np.array(
            rec[f"without_{stage}"]["paired"]["per_seed_diff"]
        )
        assert e["per_seed_diff"] == pytest.approx(expect.tolist(), abs=1e-12)
        y = e["yield"]
        assert y["with"] == rec["curated"]["yield"]
        assert y["without"] == rec[f"without_{stage}"]["yield"]
        assert y["without"] > y["with"]  # the stage's rejected rows are back
        assert y["ratio"] == pytest.approx(y["with"] / y["without"])
        m, g = e["multiplier_effect"], e["goodput_effect"]
        for k in ("value", "ci_low", "ci_high"):  # null where the ratio leaves raw's measured range
            assert g[k] == (None if m[k] is None else pytest.approx(m[k] * y["ratio"]))
        if None not in (m["ci_low"], m["value"], m["ci_high"]):
            assert m["ci_low"] <= m["value"] <= m["ci_high"]
        assert e["multiplier"]["with"] == rec["curated"]["multiplier"]
    # Rerunning reuses every finished proxy run (nothing retrains) and gives the same numbers.
    stamps = {p: p.stat().st_mtime_ns for p in (run_dir / "proxy").glob("*/seed*/result.json")}
    assert len(stamps) == 8
    again = run_ablation(ctx)
    assert again == ab
    assert {p: p.stat().st_mtime_ns for p in (run_dir / "proxy").glob("*/seed*/result.json")} == stamps
    # the table `curate ablate` prints: each interval with its own call, per training token and per raw token
    lines = format_ablation(ab).splitlines()
    assert lines[0] == (
        "leave-one-stage-out vs curated (baseline raw; proxy_tiny, 1024 tokens, 2 seeds); "
        "effect = with / without the stage"
    )
    assert lines[2] == (
        "stage                       removed          d bpb (with-without) [CI]   multiplier effect [CI]  "
        "per token      goodput effect [CI] per raw token"
    )

    def interval(b, fmt):
        if b["value"] is None:
            return ["n/a"]
        lo, hi = ("—" if b[k] is None else format(b[k], fmt) for k in ("ci_low", "ci_high"))
        return [format(b["value"], fmt), f"[{lo},", f"{hi}]"]

    def raw_token_call(g):
        if g["ci_low"] is not None and g["ci_low"] > 1:
            return "pays"
        return "costs" if g["ci_high"] is not None and g["ci_high"] < 1 else "not called"

    for line, (stage, n) in zip(lines[3:5], (("exact_dedup_v1", 8), ("gopher_quality_v1", 12)), strict=True):
        e = ab["stages"][stage]
        assert line.split() == [
            stage,
            str(n),
            *interval(e["diff_bpb_with_minus_without"], "+.4f"),
            *interval(e["multiplier_effect"], ".3f"),
            *{"not_called": "not called"}.get(e["call"], e["call"]).split(),
            *interval(e["goodput_effect"], ".3f"),
            *raw_token_call(e["goodput_effect"]).split(),
        ]
    assert lines[5] == (
        "fasttext_quality_v1               0  skipped: removed no documents (its ablation is the curated recipe itself)"
    )
    assert len(lines) == 6


def test_cli_ablate_prints_the_table(run_dir, capsys):
    from curate.cli import main

    assert main(["ablate", str(run_dir), "--engine", "inline"]) == 0  # reuses the runs above
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(
        "leave-one-stage-out vs curated (baseline raw; proxy_tiny, 1024 tokens, 2 seeds)"
    )
    assert f"ablation: {run_dir / 'ablation.json'}" in out


def test_a_run_where_no_stage_rejected_anything_is_refused(tmp_path, inline_engine):
    (tmp_path / "rejected").mkdir()
    ctx = RunContext(
        run_dir=tmp_path, config={}, engine=inline_engine, manifest={"stages": []}, section=parse(SECTION)
    )
    with pytest.raises(PhaseError, match=r"ablate: no stage of .* rejected a document"):
        run_ablation(ctx)


def test_proxy_ablate_true_runs_the_ablation_after_the_phase(run_dir, inline_engine):
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import ProxyConfigError

    with pytest.raises(ProxyConfigError, match=r"^proxy.ablate: expected bool, got str 'yes'$"):
        parse({**SECTION, "ablate": "yes"})
    section = {**SECTION, "ablate": True, "ladder": []}
    ctx = RunContext(
        run_dir=run_dir,
        config={"proxy": section},
        engine=inline_engine,
        manifest=MANIFEST,
        section=parse(section),
    )
    out = run_phase(ctx)
    ab = json.loads((run_dir / "ablation.json").read_text())
    assert out["ablation"] == {s: e["call"] for s, e in ab["stages"].items()}
    assert list(ab["stages"]) == ["exact_dedup_v1", "gopher_quality_v1"]
    assert set(json.loads((run_dir / "goodput.json").read_text())["recipes"]) == {
        "raw",
        "curated",
        "null",
        "rejected",
        "planted",
    }
