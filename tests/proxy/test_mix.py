"""The mixture search: its section, candidates and epochs, the regression and rank correlation on synthetic
truths, mixture shards (token counts, repetition, common random numbers) and a tiny end-to-end search."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.proxy import mixfit, stats
from curate.proxy.data.mixtures import REPEAT_SALT, _write, build_mixture, take_tokens
from curate.proxy.spec.config import ProxyConfigError, parse
from curate.proxy.spec.entries import Rung
from curate.proxy.spec.mix import parse_mix
from tests.proxy.toy import WORDS, doc, tiny_section


def test_parse_mix_defaults_and_errors():
    spec = parse_mix({}, budget=4096, seeds=[0, 1, 2])
    assert spec.rungs == [Rung(2048, (0,))]  # many cheap runs at half the proxy budget
    assert spec.confirm_seeds == (1, 2, 3)
    assert spec.split_seed == 4  # the noise ceiling's second seed: none of the rungs' or confirmation's
    assert (spec.by, spec.runs, spec.dirichlet, spec.max_epochs, spec.model) == (
        "source",
        None,
        0,
        4.0,
        "auto",
    )
    assert (spec.strength, spec.temperature, spec.min_weight, spec.n_perm) == ((0.3, 10.0), 0.5, 0.01, 200)
    spec = parse_mix(
        {"rungs": [{"budget": 1024, "seeds": 2}, {"budget": 4096, "seeds": [0, 1, 2]}]}, 4096, [0]
    )
    assert spec.confirm_seeds == (3,)
    for raw, msg in (
        ({"grid": 1}, r"^proxy.mix.grid: unknown key; valid keys: by, concentration, "),
        (
            {"model": "forest"},
            r"^proxy.mix.model: expected one of 'auto', 'linear', 'gbm', 'loglinear', got 'forest'$",
        ),
        (
            {"strength": [5, 1]},
            r"^proxy.mix.strength: expected \[low, high\] with low <= high, got \[5.0, 1.0\]$",
        ),
        ({"temperature": 2}, r"^proxy.mix.temperature: expected a value in \[0, 1\], got 2.0$"),
        ({"runs": 0, "singles": False}, r"^proxy.mix.runs: runs, dirichlet and singles leave no candidate"),
        ({"sources": ["a"]}, r"^proxy.mix.sources: expected a list of at least two"),
        ({"max_epochs": 0.5}, r"^proxy.mix.max_epochs: expected a value >= 1, got 0.5$"),
        ({"dirichlet": 2.5}, r"^proxy.mix.dirichlet: expected int, got float 2.5$"),
        ({"dirichlet": -1}, r"^proxy.mix.dirichlet: expected a value >= 0, got -1$"),
        ({"confirm_seeds": [0]}, r"^proxy.mix.confirm_seeds: confirmation seeds must be fresh"),
        ([1], r"^proxy.mix: expected a mapping, got list \[1\]$"),
    ):
        with pytest.raises(ProxyConfigError, match=msg):
            parse_mix(raw, budget=4096, seeds=[0, 1])
    assert parse({"mix": {"dirichlet": 4}}).mix.dirichlet == 4
    assert parse({}).mix is None
    assert parse({"mix": {}}).follow_up(budget=4096).mix is None


def test_epochs_and_muennighoffs_factor():
    tokens = np.array([100.0, 300.0])
    assert mixfit.epochs(np.array([0.5, 0.5]), tokens, 400).tolist() == [2.0, 2 / 3]
    assert mixfit.muennighoff_factor(np.array([0.25, 0.75]), np.array([1.0, 1.0])) == 1.0
    four = (1 + 15.4 * (1 - math.exp(-3 / 15.4))) / 4
    assert four == pytest.approx(0.93147, abs=1e-5)
    assert mixfit.muennighoff_factor(np.array([1.0, 0.0]), np.array([4.0, 0.0])) == pytest.approx(four)
    assert mixfit.muennighoff_factor(np.array([0.5, 0.5]), np.array([4.0, 0.5])) == pytest.approx(
        0.5 * four + 0.5
    )


def _synthetic(n: int, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet([2.0, 2.0, 2.0], size=n)
    y = 3.0 - 0.6 * w[:, 0] + 0.3 * w[:, 2] + rng.normal(0, noise, n)
    return w, y


def _loo(n: int) -> np.ndarray:
    return mixfit.fold_ids(np.arange(n), n, 0)  # every mixture its own fold: leave-one-out


def test_linear_regression_recovers_a_known_truth_and_ranks_held_out_mixtures():
    w, y = _synthetic(16, 0.0)
    f = mixfit.fit_linear(w, y)
    assert f(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])).tolist() == pytest.approx([2.4, 3.3])
    assert mixfit.heldout_predictions(w, y, "linear", _loo(16)) == pytest.approx(y)
    w, y = _synthetic(16, 0.02)
    proc = mixfit.Procedure("linear")
    rho = mixfit.spearman(proc.run(w, y)[2], y)
    lo, hi = mixfit.refit_bootstrap(proc, w, y, 50, 0)
    assert rho > 0.9
    assert lo is not None
    assert hi is not None
    assert lo <= rho <= hi <= 1.0


def test_gbm_ranks_held_out_mixtures_and_chooses_within_the_limit():
    w, y = _synthetic(16, 0.02)
    assert mixfit.spearman(mixfit.heldout_predictions(w, y, "gbm", _loo(16)), y) > 0.9  # 0.932
    tokens = np.array([100.0, 450.0, 450.0])
    design = mixfit.Design(np.array([0.1, 0.45, 0.45]), 16, 0, (0.3, 10.0), 0.5, 0.01, 4.0)
    c = mixfit.choose(w, y, tokens, 1000.0, design, model="gbm", max_epochs=4.0, n_boot=20, seed=0)
    assert c.within_limit
    assert c.weights[0] > 0.2  # more of the best source than its natural 0.1


def test_gbm_is_lightgbm_split_at_twenty_runs_deterministic_and_ranks_held_out_truth():
    w, y = _synthetic(20, 0.02)
    fitted = mixfit.fit_gbm(w, y)(w)
    # LightGBM's own defaults (a leaf of at least 20 rows) cannot split 20 runs: one constant prediction
    assert len(np.unique(fitted)) == 20
    assert mixfit.spearman(fitted, y) > 0.99
    assert np.array_equal(mixfit.fit_gbm(w, y)(w), fitted)  # one thread, deterministic: the same fit
    # each run held out and predicted by the fit on the other 19, ranked against the noiseless truth
    truth = 3.0 - 0.6 * w[:, 0] + 0.3 * w[:, 2]
    assert mixfit.spearman(mixfit.heldout_predictions(w, y, "gbm", _loo(20)), truth) >= 0.95  # 0.965


def test_gbm_fits_a_step_and_spearman_averages_tied_ranks():
    w = np.array([[x, 1 - x] for x in np.linspace(0, 1, 11)])
    y = np.where(w[:, 0] > 0.5, 1.0, 2.0)
    f = mixfit.fit_gbm(w, y)
    assert f(np.array([[0.9, 0.1], [0.1, 0.9]])).tolist() == pytest.approx([1.0, 2.0], abs=1e-3)
    # ties share their average rank: (3, 1, 3, 2) ranks (3.5, 1, 3.5, 2) against (1, 2, 3, 4): rho =
    # -1 / sqrt(4.5 * 5); ranking the tie in order of appearance, (3, 1, 4, 2), would give 0
    assert mixfit.spearman(np.array([3.0, 1.0, 3.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(
        -1 / math.sqrt(22.5), abs=1e-12
    )
    assert mixfit.spearman(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])) is None
    assert mixfit.spearman(np.array([1.0, 2.0]), np.array([2.0, 1.0])) is None
    assert mixfit.spearman(np.array([1.0, 2.0, 3.0, 4.0]), np.array([4.0, 3.0, 2.0, 1.0])) == pytest.approx(
        -1.0
    )


def _source_shard(path, n_docs: int, length: int, first_id: int) -> dict:
    lengths = np.full(n_docs, length, dtype=np.int64)
    idx = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = np.arange(int(idx[-1]), dtype=np.uint16) % 1000
    hids = np.arange(first_id, first_id + n_docs, dtype=np.uint64) * np.uint64(7919)
    meta = {"docs": n_docs, "tokens": int(idx[-1]), "dtype": "uint16", "bytes": 0}
    _write(path, tokens, idx, hids, meta)
    return {"prefix": str(path), **meta}


def test_mixture_shard_token_counts_repetition_and_common_documents(tmp_path):
    from curate.instrument.hashing import mix64
    from curate.instrument.shards import read_hids, read_shard

    shards = {
        "a": _source_shard(tmp_path / "a" / "train", 400, 25, 0),  # 10,000 tokens
        "b": _source_shard(tmp_path / "b" / "train", 300, 10, 10_000),  # 3,000 tokens
    }
    horizon, size = 13_000.0, 6_500  # the shard is half the horizon: half of each source is its pool
    meta = build_mixture(tmp_path / "m1" / "train", shards, {"a": 0.4, "b": 0.6}, size=size, horizon=horizon)
    a, b = meta["mixture"]["a"], meta["mixture"]["b"]
    assert abs(a["tokens"] - 0.4 * size) <= 0.01 * 0.4 * size
    assert abs(b["tokens"] - 0.6 * size) <= 0.01 * 0.6 * size
    assert (a["unique_tokens"], b["unique_tokens"]) == (5000, 1500)
    assert b["epochs_at_horizon"] == pytest.approx(0.6 * 13_000 / 3_000, abs=1e-4)
    assert b["epochs_in_shard"] == pytest.approx(3900 / 1500, abs=1e-4)  # the horizon's epochs, kept
    toks, _idx, m = read_shard(tmp_path / "m1" / "train")
    assert m == meta
    assert len(toks) == meta["tokens"] == a["tokens"] + b["tokens"]
    hids = read_hids(tmp_path / "m1" / "train")
    assert len(set(hids.tolist())) == len(hids)  # a repeated document's copies get their own ids
    b_ids = set((np.arange(10_000, 10_300, dtype=np.uint64) * np.uint64(7919)).tolist())
    copies = [h for h in hids.tolist() if h not in b_ids and h not in set(range(0, 400 * 7919, 7919))]
    assert len(copies) == 390 - 150  # 390 documents of b (2 passes over its pool, then 90), 150 first copies
    pool = np.array([h for h in hids.tolist() if h in b_ids], dtype=np.uint64)
    second = mix64(pool ^ mix64(np.array([REPEAT_SALT + 1], dtype=np.uint64)))
    assert set(second.tolist()) <= set(copies)
    # common random numbers: a source's documents at a lower weight are a prefix of those at a higher one
    other = build_mixture(tmp_path / "m2" / "train", shards, {"a": 0.2, "b": 0.8}, size=size, horizon=horizon)
    a_ids = set(range(0, 400 * 7919, 7919))
    first = {h for h in hids.tolist() if h in a_ids}
    fewer = {h for h in read_hids(tmp_path / "m2" / "train").tolist() if h in a_ids}
    assert fewer < first
    assert other["mixture"]["a"]["tokens"] == 1300
    assert take_tokens(np.array([10, 10, 10]), 14) == 1
    assert take_tokens(np.array([10, 10, 10]), 16) == 2


SECTION = tiny_section(mix={"runs": 8, "confirm_seeds": 2, "n_boot": 20, "n_perm": 19, "split": 4})


def _toy_run(d, section):
    from curate.core.engine import InlineEngine
    from curate.proxy.design.mix import run_mix
    from curate.runtime.context import RunContext

    rng = np.random.default_rng(0)
    (d / "kept").mkdir()
    texts, srcs = [], []
    for s, n, lo in (("a", 40, 0), ("b", 30, 10), ("c", 20, 20)):  # three vocabularies
        for _ in range(n):
            texts.append(" ".join(WORDS[i] for i in rng.integers(lo, lo + 11, 60)) + ".")
            srcs.append(s)
    texts += [doc(rng, 60) for _ in range(10)]
    srcs += ["docs"] * 10  # the eval source: held out of every mixture
    ids = [f"k{i}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "text": texts, "source": srcs}), d / "kept" / "part-00000.parquet")
    config = {"name": "toy", "input": {"path": "x.jsonl", "format": "jsonl"}, "stages": [], "proxy": section}
    (d / "manifest.json").write_text(json.dumps({"config": config}))
    cfg = parse(section)
    ctx = RunContext(run_dir=d, config=config, engine=InlineEngine(progress=False), manifest={}, section=cfg)
    return d, run_mix(ctx, cfg.mix)


@pytest.fixture(scope="module")
def mix_run(tmp_path_factory):
    return _toy_run(tmp_path_factory.mktemp("mixrun"), SECTION)


def test_successive_halving_carries_the_predicted_mixture(tmp_path):
    section = tiny_section(
        mix={
            "runs": 0,
            "dirichlet": 6,
            "singles": "all",
            "eta": 3,
            "rungs": [{"budget": 32 * 4 * 4, "seeds": 1}, {"budget": 32 * 4 * 8, "seeds": 1}],
            "confirm_seeds": 2,
            "n_boot": 20,
            "n_perm": 10,
            "split": 0,
        }
    )
    _, out = _toy_run(tmp_path, section)
    h0, h1 = out["history"]
    rows = out["mixtures"]
    assert len(h0["scores"]) == 1 + 6 + 3  # natural, the draws around it, each source alone
    over = [n for n in h0["scores"] if not rows[n]["within_epoch_limit"]]
    assert over == ["only-a"]  # measured for the comparison, never advanced or chosen
    assert h0["advanced"][-1] == "predicted"
    assert (
        len(h0["advanced"]) == 3 + 1
    )  # ceil(9 / 3) by measured bpb within the limit, then the predicted one
    assert "only-a" not in h0["advanced"]
    assert set(h1["scores"]) == set(h0["advanced"]) | {"natural"}
    assert out["chosen"]["name"] == min(h1["scores"], key=lambda n: (h1["scores"][n], n))
    assert out["chosen"]["within_epoch_limit"]
    assert "rung1" in rows["predicted"]["measured_bpb"]
    assert out["cost"]["runs"] == 10 + len(h1["scores"]) + 4 * 2


def test_mix_end_to_end(mix_run):
    d, out = mix_run
    assert [s["name"] for s in out["sources"]] == ["a", "b", "c"]
    assert out["held_out_sources"] == ["docs"]
    assert out["horizon"] == sum(s["tokens"] for s in out["sources"])
    names = list(out["mixtures"])
    assert names[0] == "natural"
    assert names[-1] == "predicted"
    assert [n for n in names if n.startswith("s")] == [f"s{i:02d}" for i in range(8)]  # spread, no local
    assert out["design"]["spread"] == 8
    assert out["rungs"] == [{"budget": 512, "seeds": [0]}]  # half the proxy budget
    assert out["split_seed"] == 3  # after rung 0's seed 0 and the confirmation's 1 and 2
    split = [n for n, r in out["mixtures"].items() if "split" in r["per_seed_bpb"]]
    assert split[0] == "natural"
    assert len(split) == 4
    for n, r in out["mixtures"].items():
        assert sum(r["weights"].values()) == pytest.approx(1.0, abs=1e-5)
        assert r["within_epoch_limit"] == (r["max_epochs"] <= 4.0)
        if n != "predicted":
            assert set(r["measured_bpb"]) == ({"rung0", "split"} if n in split else {"rung0"})
            assert r["per_seed_bpb"]["rung0"] == {"0": r["measured_bpb"]["rung0"]}  # every seed's bpb
            assert r["fitted"] == r["within_epoch_limit"]  # the regression's domain
            assert ("heldout_predicted_bpb" in r) == r["fitted"]
    assert out["mixtures"]["natural"]["max_epochs"] == pytest.approx(1.0)
    rg = out["regression"]
    fitted = [n for n, r in out["mixtures"].items() if r.get("fitted")]
    assert rg["held_out"] == rg["mixtures"] == len(fitted)
    assert rg["held_out"] >= 9
    assert rg["model"] in ("loglinear", "gbm")
    assert rg["requested"] == "auto"
    assert set(rg["heldout_rmse"]) == {"loglinear", "gbm"}
    assert rg["heldout_rmse"][rg["model"]] == min(rg["heldout_rmse"].values())
    assert -1 <= rg["heldout_spearman"]["value"] <= 1
    assert 1 / 20 <= rg["permutation_p"] <= 1
    assert rg["n_perm"] == 19
    nc = rg["noise_ceiling"]
    assert (nc["mixtures"], nc["seeds"]) == (4, [0, 3])
    a = [out["mixtures"][n]["measured_bpb"]["rung0"] for n in split]
    b = [out["mixtures"][n]["measured_bpb"]["split"] for n in split]
    assert nc["split_spearman"] == mixfit.spearman(np.array(a), np.array(b))
    ch = out["chosen"]
    assert ch["name"] == "predicted"
    assert ch["within_epoch_limit"]
    assert ch["predicted_interval"][0] <= ch["predicted_bpb"] <= ch["predicted_interval"][1]
    assert "p_better_than_natural" not in ch  # the only probability a user reads is the confirmation's
    assert set(ch["region"]) >= {"inside", "outside_range", "nearest_tv", "spacing_tv_p95"}
    conf = out["confirmation"]
    assert conf["seeds"] == [1, 2]
    assert set(conf) >= {"chosen", "best-single", "controls", "power", "verdict", "supported", "per_seed_bpb"}
    assert conf["best-single"]["source"] in ("a", "b", "c")
    assert set(conf["per_seed_bpb"]) == {"natural", "chosen", "best-single", "null"}
    assert set(conf["per_seed_bpb"]["chosen"]) == {"1", "2"}
    diffs = [conf["per_seed_bpb"]["chosen"][s] - conf["per_seed_bpb"]["natural"][s] for s in ("1", "2")]
    assert conf["chosen"]["per_seed_diff"] == pytest.approx(diffs, abs=1e-12)
    assert conf["chosen"]["p_value"] == pytest.approx(stats.paired_p(diffs))
    vs = conf["chosen_vs_best_single"]
    assert set(vs) == {"diff_bpb", "call", "multiplier", "p_value"}
    assert vs["diff_bpb"]["n"] == 2
    assert "null" in conf["controls"]
    # the controls a mixture cannot build are skipped with the reason their kinds give
    confirm = json.loads((d / "proxy" / "mix" / "confirm.json").read_text())
    assert confirm["controls"]["skipped"] == {
        "rejected": "a mixture has no rejected rows of its own",
        "planted": "not built for mixtures",
    }
    dec = out["decision"]
    assert (
        dec["export"]
        == dec["chosen_called_better"]
        == (conf["chosen"]["call"] == "better" and conf["supported"])
    )
    assert dec["sentence"].startswith(
        "The chosen mixture trains better" if dec["export"] else "The search cannot beat the natural mixture"
    )
    # the runs repeat each source as at the horizon: the multiplier is the measurement, nothing applied on top
    assert "goodput" not in conf["chosen"]
    w = np.array([out["chosen"]["weights"][s] for s in sorted(out["chosen"]["weights"])])
    ep = np.array([out["chosen"]["epochs"][s] for s in sorted(out["chosen"]["epochs"])])
    assert conf["chosen"]["muennighoff_factor"] == pytest.approx(mixfit.muennighoff_factor(w, ep), abs=1e-4)
    singles = [n for n in names if n.startswith("only-")]
    # rung 0: every candidate on 1 seed; the split seed: 4 of them; confirm: natural, chosen, best single
    # and null on 2 seeds
    assert out["cost"]["runs"] == (len(names) - 1) + 4 + 4 * 2
    assert singles  # some source alone is within 4 epochs
    for n in ("natural", "chosen", "null"):
        assert (d / "proxy" / "mix" / "confirm" / n / "seed2" / "result.json").exists()

    def salt(tag, n, seed):
        return json.loads((d / "proxy" / "mix" / tag / n / f"seed{seed}" / "data.json").read_text())["salt"]

    # the confirmation draws each seed's documents afresh, shared by its mixtures; the null another draw
    assert salt("confirm", "natural", 1) != salt("confirm", "natural", 2)
    assert salt("confirm", "chosen", 1) == salt("confirm", "natural", 1)
    assert salt("confirm", "best-single", 2) == salt("confirm", "natural", 2)
    assert salt("confirm", "null", 1) not in (salt("confirm", "natural", 1), salt("confirm", "null", 2))
    assert salt("rung0", "s03", 0) == salt("rung0", "natural", 0)  # the rungs: one draw for all
    assert salt("split", "natural", 3) == salt("rung0", "natural", 0)  # the split seed: the same documents
    # the training data holds no row of the held-out source and no eval document
    # every source's rows that are eval documents (the 10% id-hash held-out split) are dropped
    held = 0
    for s, n in (("a", 40), ("b", 30), ("c", 20)):
        meta = json.loads((d / "proxy" / "mix" / "data" / f"src={s}" / "train.json").read_text())
        assert meta["docs"] + meta["decontaminated"] == n
        held += meta["decontaminated"]
    assert held > 0
    rep = json.loads((d / "proxy" / "mix" / "confirm.json").read_text())
    assert rep["baseline"] == "natural"
    assert set(rep["recipes"]) == {
        "natural",
        "chosen",
        "best-single",
        "null",
    }


def test_cli_mix_resumes_without_retraining(mix_run, capsys):
    from curate.cli import main

    d, out = mix_run
    runs = sorted((d / "proxy" / "mix").glob("*/*/seed*/result.json"))
    stamps = {p: p.stat().st_mtime_ns for p in runs}
    assert len(stamps) == out["cost"]["runs"]
    assert main(["mix", str(d), "--engine", "inline"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0] == f"mixtures over source (horizon {out['horizon']:,} tokens)"
    assert lines[1].split() == ["mixture", "a", "b", "c", "max", "ep", "bpb", "held-out"]
    assert lines[2].startswith("predicted ")
    assert lines[2].endswith("<- chosen")
    assert lines[3].startswith("natural ")
    rg = out["regression"]
    assert f"regression: {rg['model']} (least held-out error: " in printed
    assert f"permutation p = {rg['permutation_p']:.3f} (19 permutations, each refitted)" in printed
    assert "noise ceiling: 4 mixtures measured on seeds [0, 3] rank alike at Spearman" in printed
    assert "  chosen vs natural: multiplier " in printed
    assert f"decision: {out['decision']['sentence']}" in printed
    assert f"mix: {d / 'mix.json'}" in printed
    assert json.loads((d / "mix.json").read_text()) == out
    assert {p: p.stat().st_mtime_ns for p in runs} == stamps


def test_a_failed_rerun_leaves_mix_json_byte_identical(mix_run, monkeypatch):
    """`curate mix` writes mix.json once the search and its confirmation are complete: a failure in the
    confirmation leaves the previous mix.json as it was."""
    from curate.cli import main
    from curate.proxy.design import mix

    d, _ = mix_run
    before = (d / "mix.json").read_bytes()

    def broken(*a, **k):
        raise RuntimeError("confirmation failed")

    monkeypatch.setattr(mix, "confirm", broken)
    with pytest.raises(RuntimeError, match="confirmation failed"):
        main(["mix", str(d), "--engine", "inline"])
    assert (d / "mix.json").read_bytes() == before
