"""The proxy phase end to end on a tiny fake run directory (InlineEngine), and its config validation."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.instrument.shards import read_hids
from curate.proxy.phase import run_phase
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import WORDS, write_kept, write_rejected


def _run_dir(tmp_path):
    rng = np.random.default_rng(0)
    kept = write_kept(tmp_path, rng)
    rej = [f"zz {i} qq " * 40 for i in range(20)] + ["quarantined garbage"] * 5
    reasons = (
        ["gopher_quality_v1:short_doc"] * 10 + ["exact_dedup_v1:duplicate"] * 10 + ["quarantine:bad_utf8"] * 5
    )
    write_rejected(tmp_path, rej, reasons)
    items = [
        {"query": f"Question: what did the {w} do?", "choices": ["it sat on a mat.", "qx zz vv."], "gold": 0}
        for w in WORDS[:6]
    ] + [{"context": "the dog ran to the", "continuation": "park"}]
    with gzip.open(tmp_path / "bench.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(x) for x in items) + "\n")
    return tmp_path, kept


def _ctx(run_dir, engine, section):
    manifest = {"stages": [{"name": "read", "cpu_s": 1.5}, {"name": "gopher_quality_v1", "cpu_s": 2.0}]}
    # the proxy: section as the pipeline parses it at load
    return RunContext(run_dir=run_dir, config={}, engine=engine, manifest=manifest, section=parse(section))


SECTION = {
    "model": "proxy_tiny",
    "budget": 32 * 4 * 8,
    "seeds": 2,
    "tokenizer": {"vocab_size": 300},
    "recipes": {
        "raw": {"from": "raw"},
        "curated": {"from": "kept"},
        "hi": {"from": "kept", "select": [{"column": "toy.score", "min_quantile": 0.5}]},
        "nodedup": {"from": "kept", "without_stages": ["exact_dedup_v1"]},
    },
    "eval": [
        {"name": "heldout", "holdout": 0.1},
        {"name": "docs", "kind": "text", "source": "docs"},
        {"name": "bench", "kind": "choice", "path": "BENCH"},
    ],
    "train": {"seq_len": 32, "batch_size": 4, "n_evals": 3, "ckpt_every": 4, "threads": 1},
    "n_boot": 50,
    "ladder": [{"model": "proxy_tiny", "budget": 32 * 4 * 4, "seeds": 2}],
}


def _section(run_dir):
    sec = json.loads(json.dumps(SECTION))
    sec["eval"][2]["path"] = str(run_dir / "bench.jsonl.gz")
    return sec


@pytest.fixture(scope="module")
def phase_run(tmp_path_factory):
    """One phase run shared by the tests of this module (training is the slow part)."""
    from curate.core.engine import InlineEngine

    run_dir, kept = _run_dir(tmp_path_factory.mktemp("run"))
    out = run_phase(_ctx(run_dir, InlineEngine(progress=False), _section(run_dir)))
    return run_dir, kept, out


def _check_recipes(g: dict) -> None:
    """Recipes: documents, yields, multipliers and goodput, costs and roles."""
    raw, cur, hi, nd = (g["recipes"][k] for k in ("raw", "curated", "hi", "nodedup"))
    # raw = kept + the 20 non-quarantined rejected rows, minus the 10 "docs"-source rows (held out as an
    # eval set by source) and the held-out documents (decontaminated).
    held = raw["decontaminated"]
    assert held > 0
    assert raw["docs"] == 70 - held
    assert cur["docs"] == 50 - cur["decontaminated"]
    assert nd["docs"] + nd["decontaminated"] == 50 + 10  # + the rows exact_dedup_v1 rejected
    assert hi["docs"] < cur["docs"]
    assert hi["rules"] == [{"column": "toy.score", "min": pytest.approx(0.5)}]  # the median of kept/ scores
    assert raw["yield"] == 1.0
    assert raw["multiplier"]["value"] == 1.0
    assert raw["multiplier"]["ci_low"] == raw["multiplier"]["ci_high"] == 1.0  # paired with itself: d = 0
    assert cur["yield"] == cur["tokens_kept"] / raw["tokens_kept"] < 1
    assert cur["goodput"]["value"] == pytest.approx(cur["yield"] * cur["multiplier"]["value"])
    assert cur["goodput"]["ci_low"] == pytest.approx(cur["yield"] * cur["multiplier"]["ci_low"])
    assert cur["goodput"]["bounds"] == cur["multiplier"]["bounds"]
    assert cur["costs"]["curation_cpu_s"] == 3.5
    assert raw["costs"]["curation_cpu_s"] == 0
    assert [g["recipes"][r]["role"] for r in ("raw", "curated", "null", "rejected")] == [
        "baseline",
        "recipe",
        "control",
        "control",
    ]


def _check_controls(g: dict, run_dir) -> None:
    """The null and rejected controls."""
    cur = g["recipes"]["curated"]
    # Controls: null is raw at curated's token count; rejected is every non-quarantined rejected row.
    null, rej = g["recipes"]["null"], g["recipes"]["rejected"]
    assert cur["tokens_kept"] <= null["tokens_kept"] < cur["tokens_kept"] + 200
    assert null["subsample_of"] == "raw"
    assert rej["docs"] + rej["decontaminated"] == 20
    # The null is drawn afresh for every training seed (main point: 3 seeds; the ladder's 2 are among them).
    assert sorted(null["draws"]) == ["0", "1"]
    bins = [(run_dir / "proxy" / "data" / "null" / f"seed{s}" / "train.bin").read_bytes() for s in range(2)]
    assert bins[0] != bins[1]
    used = json.loads((run_dir / "proxy" / "null" / "seed1" / "data.json").read_text())
    assert used["subsample_seed"] == 1
    assert used["docs"] == null["draws"]["1"]["docs"]
    assert g["controls"]["for"] == "curated"
    assert isinstance(g["controls"]["null"]["contains_1"], bool)
    assert g["controls"]["rejected"]["call"] in ("better", "worse", "not_called")


def _check_verdict(g: dict) -> None:
    """The paired statistic is the one verdict."""
    cur = g["recipes"]["curated"]
    # The paired statistic is the one verdict: the verdict's call is the ranking pair's.
    pair = next(p for p in g["ranking"]["pairs"] if {p["a"], p["b"]} == {"curated", "raw"})
    assert g["verdict"]["recipe"] == "curated"
    assert (g["verdict"]["call"] != "not_called") == pair["separated"]
    assert cur["paired"]["diff_bpb"] == g["verdict"]["diff_bpb"]
    assert g["verdict"]["sentence"]


def _check_eval_sets(g: dict) -> None:
    """Eval sets: kinds, headline, fit label, decontamination per set; choice accuracy."""
    raw, cur = g["recipes"]["raw"], g["recipes"]["curated"]
    held = raw["decontaminated"]
    # Eval sets: kinds, headline, fit label, decontamination per set; choice accuracy beside gold bpb.
    info = g["eval_set_info"]
    assert [info[k]["kind"] for k in ("heldout", "docs", "bench")] == ["heldout", "text", "choice"]
    assert info["heldout"]["headline"] is False
    assert "fit to the raw distribution" in info["heldout"]["note"]
    assert info["bench"]["items"] == 7
    assert info["bench"]["multi_choice_items"] == 6
    assert info["docs"]["docs"] == 10
    assert (
        raw["decontaminated_by_set"].get("heldout", 0) + raw["decontaminated_by_set"].get("exact", 0) == held
    )
    acc = cur["accuracy"]["bench"]
    assert len(acc["per_seed"]) == 2
    assert all(a in {k / 6 for k in range(7)} for a in acc["per_seed"])


def _check_ladder(g: dict, run_dir) -> None:
    """Power and the ladder."""
    # Power and the ladder.
    assert g["power"]["n_seeds"] == 2
    assert g["power"]["mde_bpb"] > 0
    assert len(g["power"]["seeds_needed"]) == 5
    pts = g["ladder"]["points"]
    assert [p["name"] for p in pts] == ["proxy_tiny@1024", "proxy_tiny@512"]
    assert g["ladder"]["reference"] == "proxy_tiny@1024"
    assert "decision_accuracy" not in pts[0]  # the reference itself: nothing measured
    acc = pts[1]["decision_accuracy"]
    assert acc["all_pairs_weighted"]["pairs"] == 6  # every pair of raw, curated, hi and nodedup: controls out
    assert acc["all_pairs_weighted"]["value"] is None or 0 <= acc["all_pairs_weighted"]["value"] <= 1
    assert acc["called"]["pairs"] <= 6
    # both points run seeds 0 and 1: the ladder says so, and the ceiling needs 4 seeds at the reference
    lad = g["ladder"]
    assert (lad["seeds_disjoint"], lad["shared_seeds"], lad["chance"]) == (
        False,
        {"0": ["proxy_tiny@1024", "proxy_tiny@512"], "1": ["proxy_tiny@1024", "proxy_tiny@512"]},
        0.5,
    )
    assert (lad["noise_ceiling"]["splits"], lad["noise_ceiling"]["all_pairs_weighted"]["value"]) == (0, None)
    assert {"anomalies", "rollbacks", "branch_anomalies"} <= set(pts[1])
    # The positive control is checked at the ladder point as at the main point: named, and warned about.
    assert "planted" in pts[1]["recipes"]
    blind = [p["name"] for p in pts[1:] if p["recipes"]["planted"]["call"] != "worse"]
    assert g["ladder"].get("planted_not_called_at", []) == blind
    warned = [w for w in g["warnings"] if "is not called worse at proxy_tiny@512 (" in w]
    assert len(warned) == len(blind)  # one warning exactly when the point is blind
    assert (run_dir / "proxy" / "ladder" / "proxy_tiny@512" / "null" / "seed1" / "result.json").exists()
    # Decision agreement across the finished ladder points only, controls out (raw, curated, hi, nodedup).
    da = g["ladder"]["decision_agreement"]
    assert (da["pairs"], da["points"], da["reference"]) == (6, ["proxy_tiny@512"], "proxy_tiny@1024")
    recipes = ["curated", "hi", "nodedup", "raw"]
    same = sum(
        np.sign(pts[1]["recipes"][a]["bpb_at_T"] - pts[1]["recipes"][b]["bpb_at_T"])
        == np.sign(pts[0]["recipes"][a]["bpb_at_T"] - pts[0]["recipes"][b]["bpb_at_T"])
        for i, a in enumerate(recipes)
        for b in recipes[i + 1 :]
    )
    assert da["value"] == same / 6


def _check_runs(g: dict, run_dir, out: dict) -> None:
    """The tokenizer, the regime, the curves and the runs on disk."""
    cur = g["recipes"]["curated"]
    assert g["tokenizer"]["source"] == "trained"
    assert len(g["tokenizer"]["sha256"]) == 64
    assert g["regime"]["tokens"] == 1024
    assert g["regime"]["tokens_per_param"] == pytest.approx(1024 / g["regime"]["params"])
    curve = cur["curves"]["heldout"]
    assert curve["tokens"][-1] == g["budget"]
    assert len(curve["per_seed"]) == 2
    assert curve["bpb_ci_low"][-1] <= curve["bpb_mean"][-1] <= curve["bpb_ci_high"][-1]
    assert set(g["ranking"]["order"]) == set(g["recipes"])
    for r in g["recipes"]:
        for s in (0, 1):
            assert (run_dir / "proxy" / r / f"seed{s}" / "metrics.jsonl").exists()
    assert out["runs"] == 28


def _check_baseline_curve(g: dict, run_dir) -> None:
    """The measured baseline curve and the multipliers inside it."""
    raw = g["recipes"]["raw"]
    # The baseline's curve is measured: raw's trunk to 2T with finished branches at T/2 and T (T/4 = 2
    # steps is under the 4-step minimum and dropped); every multiplier is inside that range or a bound.
    assert g["baseline_curve"]["budgets"] == [512, 1024, 2048]
    assert g["baseline_curve"]["range"] == [0.5, 2.0]
    res = json.loads((run_dir / "proxy" / "raw" / "seed0" / "result.json").read_text())
    assert list(res["branches"]) == ["512", "1024", "2048"]
    assert g["baseline_curve"]["per_seed"][0][1] == pytest.approx(
        np.mean([res["branches"]["1024"][k] for k in g["headline"]])
    )
    assert raw["curves"]["docs"]["per_seed"][0][-1] == res["branches"]["1024"]["docs"]
    for r, v in g["recipes"].items():
        m = v["multiplier"]
        assert 0.5 - 1e-9 <= m["value"] <= 2.0 + 1e-9, r
        assert m["bounds"]["value"] in (None, ">", "<")
        assert m["extrapolated"] is False


def _check_streams_and_planted(g: dict, run_dir) -> None:
    """Common random numbers and the planted control."""
    raw, cur = g["recipes"]["raw"], g["recipes"]["curated"]
    # Common random numbers: each recipe's stream shares documents with raw's, recorded per seed.
    assert raw["stream_shared_with_baseline"] == {"per_seed": [1.0, 1.0], "mean": 1.0}
    assert 0 < cur["stream_shared_with_baseline"]["mean"] <= 1
    # The planted control: the null's draw (the same documents per seed) with a share of them
    # word-shuffled, so it shares with raw what the controlled recipe shares, reported beside the null.
    planted, null = g["recipes"]["planted"], g["recipes"]["null"]
    assert planted["role"] == "control"
    assert 0 < planted["corrupted_docs"] < planted["docs"]
    assert g["controls"]["planted"]["fraction"] == 0.4
    assert (run_dir / "proxy" / "data" / "planted@0.4" / "train.json").exists()  # the rate names the shards
    for s in (0, 1):
        assert (
            read_hids(run_dir / "proxy" / "data" / "planted@0.4" / f"seed{s}" / "train").tolist()
            == read_hids(run_dir / "proxy" / "data" / "null" / f"seed{s}" / "train").tolist()
        )
        assert planted["draws"][str(s)]["docs"] == null["draws"][str(s)]["docs"]
    matched = g["controls"]["planted"]["matched"]
    assert matched == {
        "of": "curated",
        "shares_with_baseline": planted["stream_shared_with_baseline"]["mean"],
        "recipe_shares_with_baseline": cur["stream_shared_with_baseline"]["mean"],
    }
    assert "the null's subsample of raw at curated's token count" in g["controls"]["planted"]["message"]
    assert isinstance(g["controls"]["planted"]["called_worse"], bool)
    # The decision the controls support: not when the planted is not called worse (than the null) or the
    # null is not shown equivalent to raw.
    decision = g["controls"]["decision"]
    assert g["controls"]["planted"]["against"] == "null"
    failed = [not g["controls"]["planted"]["called_worse"], not g["controls"]["null"]["passed"]]
    assert decision["supported"] is not any(failed)
    assert len(decision["reasons"]) == sum(failed)
    # Nothing extrapolated, nothing read from an un-cooled checkpoint.
    assert "baseline_power_law" not in g
    assert "decision_agreement" not in g
    assert "no number in this file" in g["curves_note"]
    for p in g["ladder"]["points"]:
        assert "agreement_T_over_4_vs_T" not in p
        assert all("bpb_at_T_over_4" not in v for v in p["recipes"].values())


def _check_resume(g: dict, run_dir, inline_engine) -> None:
    """Resume, a retrain of an unrecorded run, and a refused other eval spec."""
    # Resume: nothing is retrained (result files untouched), goodput.json is rebuilt identically.
    stamp = (run_dir / "proxy" / "raw" / "seed0" / "result.json").stat().st_mtime_ns
    run_phase(_ctx(run_dir, inline_engine, _section(run_dir)))
    assert (run_dir / "proxy" / "raw" / "seed0" / "result.json").stat().st_mtime_ns == stamp
    assert json.loads((run_dir / "goodput.json").read_text()) == g
    # A run whose training data is not recorded as the shard asked for (here: no data.json) is retrained.
    (run_dir / "proxy" / "raw" / "seed0" / "data.json").unlink()
    other_stamp = (run_dir / "proxy" / "raw" / "seed1" / "result.json").stat().st_mtime_ns
    run_phase(_ctx(run_dir, inline_engine, _section(run_dir)))
    assert (run_dir / "proxy" / "raw" / "seed0" / "result.json").stat().st_mtime_ns != stamp
    assert (run_dir / "proxy" / "raw" / "seed1" / "result.json").stat().st_mtime_ns == other_stamp
    assert (run_dir / "proxy" / "raw" / "seed0" / "data.json").exists()
    # Another eval spec on the same proxy/ folder is refused, naming what differs.
    other = _section(run_dir)
    other["eval_chars"] = 999
    with pytest.raises(PhaseError, match=r"was built with other eval_chars; remove"):
        run_phase(_ctx(run_dir, inline_engine, other))


def test_phase_writes_goodput_json_and_resumes_without_retraining(phase_run, inline_engine):
    run_dir, _kept, out = phase_run
    g = json.loads((run_dir / "goodput.json").read_text())
    assert set(g["recipes"]) == {"raw", "curated", "hi", "nodedup", "null", "rejected", "planted"}
    assert g["baseline"] == "raw"
    assert g["budget"] == 32 * 4 * 8
    assert g["seeds"] == [0, 1]
    assert g["eval_sets"] == ["bench", "docs", "heldout"]
    assert g["schema_version"] == 3  # the data goodput in the multiplier's shape (curate.goodput.schema)
    assert g["headline"] == ["docs", "bench"]
    _check_recipes(g)
    _check_controls(g, run_dir)
    _check_verdict(g)
    _check_eval_sets(g)
    _check_ladder(g, run_dir)
    _check_runs(g, run_dir, out)
    _check_baseline_curve(g, run_dir)
    _check_streams_and_planted(g, run_dir)
    _check_resume(g, run_dir, inline_engine)


def test_tokenizer_sample_ignores_file_layout(tmp_path):
    """The same raw rows split into other files (another stage list's layout) train the same BPE."""
    from curate.core.engine import InlineEngine
    from curate.proxy.data.inputs import tokenizer_for as _tokenizer
    from curate.proxy.spec.config import parse as parse_cfg

    (tmp_path / "a").mkdir()
    a, _ = _run_dir(tmp_path / "a")
    b = tmp_path / "b"
    (b / "kept").mkdir(parents=True)
    (b / "rejected").mkdir()
    kept = pq.read_table(a / "kept" / "part-00000.parquet")
    rej = pq.read_table(a / "rejected" / "part-00000.parquet")
    # Other layout: rows moved between kept/ and rejected/ files and reordered (as another stage list would).
    pq.write_table(kept.slice(30), b / "kept" / "part-00000.parquet")
    pq.write_table(kept.slice(0, 30), b / "kept" / "part-00001.parquet")
    pq.write_table(rej.slice(10), b / "rejected" / "part-00000.parquet")
    pq.write_table(rej.slice(0, 10), b / "rejected" / "part-00001.parquet")
    cfg = parse_cfg({"tokenizer": {"vocab_size": 300, "sample_chars": 3000}})
    infos = []
    for d in (a, b):
        (d / "proxy").mkdir()
        _, info = _tokenizer(_ctx(d, InlineEngine(progress=False), {}), cfg, set(), [], d / "proxy")
        infos.append(info)
    assert infos[0]["sha256"] == infos[1]["sha256"]
    assert infos[0]["sample_chars"] >= 3000


def test_a_tokenizer_file_is_used_as_it_is_and_its_pin_is_checked(tmp_path):
    """``tokenizer.path``: two corpora that differ in one document train different BPEs, but with a file
    both runs tokenize alike (the demo's stability rests on this); a wrong ``sha256`` pin is refused, and
    a relative path is found from the repository root as ``models/`` is."""
    from curate.core.engine import InlineEngine
    from curate.io.files import sha256_file
    from curate.proxy.data.inputs import tokenizer_for as _tokenizer
    from curate.proxy.spec.config import parse as parse_cfg

    (tmp_path / "a").mkdir()
    a, _ = _run_dir(tmp_path / "a")
    b = tmp_path / "b"
    (b / "kept").mkdir(parents=True)
    (b / "rejected").mkdir()
    kept = pq.read_table(a / "kept" / "part-00000.parquet")
    texts = kept.column("text").to_pylist()
    texts[0] = texts[0] + " zebra quokka " * 20  # one document changed
    pq.write_table(
        kept.set_column(kept.schema.get_field_index("text"), "text", [texts]),
        b / "kept" / "part-00000.parquet",
    )
    pq.write_table(
        pq.read_table(a / "rejected" / "part-00000.parquet"), b / "rejected" / "part-00000.parquet"
    )

    def tokenizer(d, section):
        (d / "proxy").mkdir(exist_ok=True)
        for f in ("tokenizer.json", "tokenizer.info.json"):
            (d / "proxy" / f).unlink(missing_ok=True)
        return _tokenizer(
            _ctx(d, InlineEngine(progress=False), {}), parse_cfg(section), set(), [], d / "proxy"
        )

    trained = [tokenizer(d, {"tokenizer": {"vocab_size": 300}})[1]["sha256"] for d in (a, b)]
    assert trained[0] != trained[1]  # a retrained BPE follows the corpus
    pinned = a / "proxy" / "pinned.json"
    (a / "proxy" / "tokenizer.json").rename(pinned)
    sha = sha256_file(pinned)
    got = [tokenizer(d, {"tokenizer": {"path": str(pinned), "sha256": sha}}) for d in (a, b)]
    assert [g[1]["sha256"] for g in got] == [sha, sha]
    assert got[0][1]["source"] == "file"
    assert (
        got[0][0].encode_batch(["the quokka sat"])[0].tolist()
        == got[1][0].encode_batch(["the quokka sat"])[0].tolist()
    )
    with pytest.raises(PhaseError, match=r"has sha256 [0-9a-f]{64}, not the pinned 00ff: the file changed"):
        tokenizer(b, {"tokenizer": {"path": str(pinned), "sha256": "00FF"}})
    with pytest.raises(
        PhaseError, match=r"proxy.tokenizer.sha256: pins a tokenizer file: give tokenizer.path"
    ):
        parse_cfg({"tokenizer": {"sha256": sha}})
    shipped = tokenizer(b, {"tokenizer": {"path": "models/proxy_tokenizer_python_docs.json"}})
    assert shipped[0].vocab_size == 2048


def test_the_demo_pins_the_tokenizer_it_ships():
    """``pipelines/demo.yaml`` names a tokenizer file in ``models/`` with the sha256 of the file there."""
    import yaml

    from curate.io.files import repo_path, sha256_file

    tok = yaml.safe_load(repo_path("pipelines/demo.yaml").read_text())["proxy"]["tokenizer"]
    assert tok["path"] == "models/proxy_tokenizer_python_docs.json"
    assert sha256_file(repo_path(tok["path"])) == tok["sha256"]


def test_config_errors_name_the_key_and_the_valid_ones():
    with pytest.raises(
        PhaseError, match=r"^proxy.bugdet: unknown key; valid keys: ablate, baseline, budget, "
    ):
        parse({"bugdet": 10})
    with pytest.raises(
        PhaseError,
        match=r"^proxy.recipes.x.frm: unknown key; valid keys: from, select, sweep, without_stages$",
    ):
        parse({"recipes": {"x": {"frm": "kept"}}, "baseline": "x"})
    with pytest.raises(PhaseError, match=r"^proxy.baseline: 'raw' is not a recipe; recipes: x$"):
        parse({"recipes": {"x": {"from": "kept"}}})
    with pytest.raises(
        PhaseError, match=r"^proxy.train.lr_max: unknown key; valid keys: autocast, batch_size, "
    ):
        parse({"train": {"lr_max": 1}})
    with pytest.raises(PhaseError, match=r"^proxy.train.lr: expected float, got str '3e-3'$"):
        parse({"train": {"lr": "3e-3"}})  # YAML 1.1 reads 3e-3 as a string
    with pytest.raises(PhaseError, match=r"^proxy.train.tokens: set by proxy.budget, not under proxy.train$"):
        parse({"train": {"tokens": 1000}})
    with pytest.raises(
        PhaseError,
        match=r"^proxy.model: expected one of 'proxy_tiny', .* got 'proxy_tiy' \(did you mean 'proxy_tiny'\?\)$",
    ):
        parse({"model": "proxy_tiy"})
    with pytest.raises(
        PhaseError, match=r"^proxy.eval\[0\].kind: expected one of 'text', 'choice', 'heldout', got 'mcq'$"
    ):
        parse({"eval": [{"name": "x", "kind": "mcq", "path": "x.jsonl"}]})
    with pytest.raises(
        PhaseError, match=r"proxy.headline\[0\]: 'wiki' names no eval set; eval sets: heldout"
    ):
        parse({"headline": ["wiki"]})
    with pytest.raises(
        PhaseError, match=r"proxy.ladder\[0\].budget: budget 100 tokens < 4 steps of 2048 tokens"
    ):
        parse({"ladder": [{"model": "proxy_tiny", "budget": 100}]})
    with pytest.raises(
        PhaseError, match=r"proxy.eval_suite: unknown eval_suite 'web'; valid suites: web_targets"
    ):
        parse({"eval_suite": "web"})
    assert parse({}).headline == ["heldout"]  # only a fit set: it is all there is to average
    assert parse({"eval_suite": "python_docs", "eval": [{"name": "h", "holdout": 0.02}]}).headline == [
        "python_docs"
    ]
    cfg = parse({"recipes": {"raw": {"from": "raw"}, "q": {"sweep": {"column": "a.b", "min": [1, 2.5]}}}})
    assert [(r.name, r.rules()) for r in cfg.recipes] == [
        ("raw", []),
        ("q@min=1", [{"column": "a.b", "min": 1}]),
        ("q@min=2.5", [{"column": "a.b", "min": 2.5}]),
    ]


def test_planted_and_curve_are_checked_and_the_baseline_trains_a_trunk_with_branches():
    with pytest.raises(PhaseError, match=r"^proxy.planted: expected a value in \(0, 1\), got 1.5$"):
        parse({"planted": 1.5})
    with pytest.raises(
        PhaseError, match=r"proxy.curve: expected a list of positive budget factors including 1"
    ):
        parse({"curve": [0.5, 2]})
    with pytest.raises(
        PhaseError,
        match=r"^proxy.controls\[0\]: expected one of 'null', 'rejected', 'planted', got 'plant' \(did you mean",
    ):
        parse({"controls": ["plant"]})
    cfg = parse({"budget": 2048 * 40, "curve": [2, 0.25, 1, 0.5]})
    assert cfg.curve == (0.25, 0.5, 1.0, 2.0)
    assert cfg.controls == ["null", "rejected", "planted"]
    run = cfg.train_config(1)
    trunk = cfg.train_config(1, baseline=True)
    assert (run.tokens, run.branches, run.schedule, run.min_lr_frac) == (2048 * 40, [], "wsd", 0.0)
    assert (trunk.tokens, trunk.branches, trunk.eval_budget) == (
        2048 * 80,
        [2048 * 10, 2048 * 20, 2048 * 40],
        2048 * 40,
    )
    assert trunk.warmup_steps == run.warmup_steps == 2  # one warmup for every run of the point
    # budgets under 4 steps leave the curve: T/4 of a 12-step budget is 3 steps
    assert parse({"budget": 2048 * 12}).curve_budgets() == [2048 * 6, 2048 * 12, 2048 * 24]
    assert parse({"curve": [1]}).train_config(0, baseline=True).branches == []


def test_perplexity_scorer_scores_bpb_under_a_trained_proxy_model(phase_run, tmp_path):
    from curate.scorers.perplexity import Perplexity, PerplexityParams, percentile_band
    from tests.helpers import make_table

    run_dir, kept, _ = phase_run
    model = run_dir / "proxy" / "raw" / "seed0" / "model"
    s = Perplexity(PerplexityParams(model=str(model), seq_len=32, max_tokens=64, min_bpb=0.0, max_bpb=50.0))
    table = make_table([kept[0], "qx vz jk wq " * 10, ""])
    out = s.process(table)
    bpb = out.column("perplexity_v1.bpb").to_pylist()
    assert bpb[0] < bpb[1]  # in-distribution text is more predictable than junk
    # The chunked head path gives what the model's own logits give (windows of seq_len, context restarts).
    import torch
    import torch.nn.functional as F

    ids = s._tok.encode_batch([kept[0]])[0][:64].astype(np.int64)
    stream = torch.from_numpy(np.concatenate([[s._tok.eos_id], ids]))
    with torch.no_grad():
        nll = sum(
            float(F.cross_entropy(s._model(input_ids=w[None, :-1]).logits[0], w[1:], reduction="sum"))
            for w in (stream[i : i + 33] for i in range(0, len(stream) - 1, 32))
        )
    nbytes = int(s._tok.token_bytes[ids].sum())
    assert bpb[0] == pytest.approx(nll / (math.log(2) * nbytes), rel=1e-5)
    assert bpb[2] is None or math.isnan(bpb[2])
    rules = s.reference_rules()
    assert [(r.column, r.min, r.max, r.reason) for r in rules] == [
        ("perplexity_v1.bpb", 0.0, 50.0, "bpb_outside_band")
    ]
    pq.write_table(out, tmp_path / "scored.parquet")
    lo, hi = percentile_band([tmp_path / "scored.parquet"], "perplexity_v1.bpb", 0.0, 1.0)
    assert (lo, hi) == (bpb[0], bpb[1])


def test_a_recipe_selecting_with_a_scorer_trained_on_a_headline_eval_file_is_refused(tmp_path, inline_engine):
    """Eval sets and selection stay disjoint: the scorer's training manifest names the eval file."""
    run_dir, _ = _run_dir(tmp_path)
    bench = run_dir / "bench.jsonl.gz"
    (tmp_path / "toy.manifest.json").write_text(
        json.dumps({"sources": [{"files": [{"path": str(bench), "sha256": "not-checked-when-paths-match"}]}]})
    )
    sec = _section(run_dir)
    sec["recipes"] = {
        "raw": {"from": "raw"},
        "hi": {"from": "kept", "select": [{"column": "toy.score", "min": 0.5}]},
    }
    ctx = _ctx(run_dir, inline_engine, sec)
    ctx.config = {"stages": [{"score": "toy", "params": {"model": str(tmp_path / "toy.ftz")}}]}
    with pytest.raises(
        PhaseError,
        match=r"proxy.recipes.hi: selects with toy \(.*toy.ftz\), which was trained on .*bench.jsonl.gz, the file "
        r"of headline eval set 'bench': eval sets and selection must stay disjoint",
    ):
        run_phase(ctx)
    assert not (run_dir / "proxy" / "data").exists()  # refused before any shard or run


def test_controls_yaml_null_is_the_null_control():
    """YAML reads `controls: [null]` as [None]; that is the null control, not an unknown one."""
    import yaml

    assert parse(yaml.safe_load("controls: [null, rejected]")).controls == ["null", "rejected"]
    assert parse(yaml.safe_load("controls: [null]")).controls == ["null"]
    with pytest.raises(
        PhaseError, match=r"^proxy.controls\[0\]: expected one of 'null', 'rejected', 'planted', got 'nul'"
    ):
        parse({"controls": ["nul"]})


def test_a_failed_rerun_leaves_goodput_json_byte_identical(phase_run, inline_engine, monkeypatch):
    """`curate proxy` rewrites goodput.json only once the measurement is complete: a failure after the
    runs (here, in the assembly of the report) leaves the previous one as it was."""
    from curate.proxy.assembly import assemble

    run_dir, _kept, _out = phase_run
    before = (run_dir / "goodput.json").read_bytes()

    def broken(*a, **k):
        raise RuntimeError("assembly failed")

    monkeypatch.setattr(assemble, "assemble", broken)
    with pytest.raises(RuntimeError, match="assembly failed"):
        run_phase(_ctx(run_dir, inline_engine, _section(run_dir)))
    assert (run_dir / "goodput.json").read_bytes() == before
