"""The proxy phase end to end on a tiny fake run directory (InlineEngine), and its config validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.context import PhaseError, RunContext
from curate.proxy.config import parse
from curate.proxy.phase import run_phase

WORDS = (
    "the cat sat on a mat and the dog ran to the park while birds sang over green hills "
    "under a wide blue sky with soft white clouds drifting slowly east"
).split()


def _doc(rng: np.random.Generator, n: int) -> str:
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n)) + "."


def _run_dir(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "kept").mkdir()
    (tmp_path / "rejected").mkdir()
    kept = [_doc(rng, 60) for _ in range(60)]
    pq.write_table(
        pa.table(
            {
                "id": [f"k{i}" for i in range(60)],
                "text": kept,
                "source": ["t"] * 60,
                "toy.score": np.linspace(0, 1, 60),
            }
        ),
        tmp_path / "kept" / "part-00000.parquet",
    )
    rej = [f"zz {i} qq " * 40 for i in range(20)] + ["quarantined garbage"] * 5
    reasons = (
        ["gopher_quality_v1:short_doc"] * 10 + ["exact_dedup_v1:duplicate"] * 10 + ["quarantine:bad_utf8"] * 5
    )
    pq.write_table(
        pa.table(
            {
                "id": [f"r{i}" for i in range(25)],
                "text": rej,
                "source": ["t"] * 25,
                "stage": [r.split(":")[0] for r in reasons],
                "reason": reasons,
            }
        ),
        tmp_path / "rejected" / "part-00000.parquet",
    )
    return tmp_path, kept


def _ctx(run_dir, engine, section):
    manifest = {"stages": [{"name": "read", "cpu_s": 1.5}, {"name": "gopher_quality_v1", "cpu_s": 2.0}]}
    return RunContext(run_dir=run_dir, config={}, engine=engine, manifest=manifest, section=section)


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
    "eval": [{"name": "heldout", "holdout": 0.1}],
    "train": {"seq_len": 32, "batch_size": 4, "n_evals": 3, "ckpt_every": 4, "threads": 1},
    "n_boot": 50,
}


@pytest.fixture(scope="module")
def phase_run(tmp_path_factory):
    """One phase run shared by the tests of this module (training is the slow part)."""
    from curate.engine import InlineEngine

    run_dir, kept = _run_dir(tmp_path_factory.mktemp("run"))
    out = run_phase(_ctx(run_dir, InlineEngine(progress=False), SECTION))
    return run_dir, kept, out


def test_phase_writes_goodput_json_and_resumes_without_retraining(phase_run, inline_engine):
    run_dir, kept, out = phase_run
    g = json.loads((run_dir / "goodput.json").read_text())
    assert set(g["recipes"]) == {"raw", "curated", "hi", "nodedup"} and g["baseline"] == "raw"
    assert g["budget"] == 32 * 4 * 8 and g["seeds"] == [0, 1] and g["eval_sets"] == ["heldout"]
    raw, cur, hi, nd = (g["recipes"][k] for k in ("raw", "curated", "hi", "nodedup"))
    # raw = kept + the 20 non-quarantined rejected rows, minus held-out documents (decontaminated).
    held = raw["decontaminated"]
    assert held > 0 and raw["docs"] == 80 - held
    assert cur["docs"] == 60 - cur["decontaminated"]
    assert nd["docs"] + nd["decontaminated"] == 60 + 10  # + the rows exact_dedup_v1 rejected
    assert hi["docs"] < cur["docs"]
    assert hi["rules"] == [{"column": "toy.score", "min": pytest.approx(0.5)}]  # the median of kept/ scores
    assert raw["yield"] == 1.0 and raw["multiplier"]["value"] == 1.0
    assert cur["yield"] == cur["tokens_kept"] / raw["tokens_kept"] < 1
    assert cur["goodput"]["value"] == pytest.approx(cur["yield"] * cur["multiplier"]["value"])
    assert cur["costs"]["curation_cpu_s"] == 3.5 and raw["costs"]["curation_cpu_s"] == 0
    curve = cur["curves"]["heldout"]
    assert curve["tokens"][-1] == g["budget"] and len(curve["per_seed"]) == 2
    assert curve["bpb_ci_low"][-1] <= curve["bpb_mean"][-1] <= curve["bpb_ci_high"][-1]
    assert set(g["ranking"]["order"]) == set(g["recipes"]) and 0 <= g["decision_agreement"] <= 1
    for r in g["recipes"]:
        for s in (0, 1):
            assert (run_dir / "proxy" / r / f"seed{s}" / "metrics.jsonl").exists()
    assert out["runs"] == 8
    # Resume: nothing is retrained (result files untouched), goodput.json is rebuilt identically.
    stamp = (run_dir / "proxy" / "raw" / "seed0" / "result.json").stat().st_mtime_ns
    run_phase(_ctx(run_dir, inline_engine, SECTION))
    assert (run_dir / "proxy" / "raw" / "seed0" / "result.json").stat().st_mtime_ns == stamp
    assert json.loads((run_dir / "goodput.json").read_text()) == g


def test_config_errors_name_the_key_and_the_valid_ones():
    with pytest.raises(PhaseError, match=r"proxy: unknown key\(s\) bugdet; valid keys: baseline, recipes"):
        parse({"bugdet": 10})
    with pytest.raises(PhaseError, match=r"proxy.recipes.x: unknown key\(s\) frm; valid keys: from, select"):
        parse({"recipes": {"x": {"frm": "kept"}}, "baseline": "x"})
    with pytest.raises(PhaseError, match="proxy.baseline: 'raw' is not a recipe"):
        parse({"recipes": {"x": {"from": "kept"}}})
    with pytest.raises(PhaseError, match="proxy.train: unknown key"):
        parse({"train": {"lr_max": 1}})
    cfg = parse({"recipes": {"raw": {"from": "raw"}, "q": {"sweep": {"column": "a.b", "min": [1, 2.5]}}}})
    assert [(r.name, r.rules) for r in cfg.recipes] == [
        ("raw", []),
        ("q@min=1", [{"column": "a.b", "min": 1}]),
        ("q@min=2.5", [{"column": "a.b", "min": 2.5}]),
    ]


def test_perplexity_scorer_scores_bpb_under_a_trained_proxy_model(phase_run, tmp_path):
    from curate.scorers.perplexity import Perplexity, PerplexityParams, percentile_band
    from tests.conftest import make_table

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
