"""The data-limited arm end to end, on a case whose answer is known: raw is half distinct documents and half
copies of one junk document; the recipe keeps the distinct half. Trained once per raw token, the recipe is
worth its yield times its multiplier; with compute for as many tokens as raw holds (k = 1), a team would
repeat the recipe's half twice rather than train on raw once, and that is what the arm measures."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.goodput.schema import load
from curate.proxy.phase import run_phase
from curate.proxy.spec.config import parse
from curate.runtime.context import RunContext
from tests.proxy.toy import TINY_TRAIN, WORDS

T = 32 * 4 * 16  # 16 steps of 4 sequences of 32 tokens


def _markov(rng: np.random.Generator, n: int) -> str:
    """``n`` words of a fixed bigram chain over WORDS: text with structure a model learns."""
    nxt = {w: WORDS[(i * 7 + 3) % len(WORDS)] for i, w in enumerate(WORDS)}
    w, out = WORDS[int(rng.integers(len(WORDS)))], []
    for _ in range(n):
        out.append(w)
        w = nxt[w] if rng.random() < 0.8 else WORDS[int(rng.integers(len(WORDS)))]
    return " ".join(out) + "."


@pytest.fixture(scope="module")
def limited_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("limited")
    rng = np.random.default_rng(1)
    distinct = [_markov(rng, 12) for _ in range(400)]
    evals = [_markov(rng, 40) for _ in range(30)]
    (d / "kept").mkdir()
    pq.write_table(
        pa.table(
            {
                "id": [f"k{i}" for i in range(430)],
                "text": distinct + evals,
                "source": ["t"] * 400 + ["docs"] * 30,
            }
        ),
        d / "kept" / "part-00000.parquet",
    )
    junk = "zq vx kj wp " * 3
    (d / "rejected").mkdir()
    pq.write_table(
        pa.table(
            {
                "id": [f"r{i}" for i in range(400)],
                "text": [junk] * 400,
                "source": ["t"] * 400,
                "stage": ["exact_dedup_v1"] * 400,
                "reason": ["exact_dedup_v1:duplicate"] * 400,
            }
        ),
        d / "rejected" / "part-00000.parquet",
    )
    section = {
        "model": "proxy_tiny",
        "budget": T,
        "seeds": 3,
        "tokenizer": {"vocab_size": 300},
        "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}},
        "controls": ["null"],
        "eval": [{"name": "docs", "kind": "text", "source": "docs"}],
        "train": dict(TINY_TRAIN),
        "n_boot": 20,
        "data_limited": {"k": [1], "repetition": [1, 4]},
    }
    ctx = RunContext(
        run_dir=d, config={}, engine=InlineEngine(progress=False), manifest={}, section=parse(section)
    )
    run_phase(ctx)
    return d, json.loads((d / "goodput.json").read_text())


def test_repeating_the_distinct_half_beats_raw_once_where_yield_times_multiplier_says_it_loses(limited_run):
    d, g = limited_run
    rows = {(e["k"], e["recipe"]): e for e in g["data_limited"]}
    assert sorted(rows) == [(1.0, "curated"), (1.0, "null")]
    cur = rows[(1.0, "curated")]
    # raw's pool of T tokens is part junk; curated keeps its distinct share and repeats it 1 / yield times
    assert cur["epochs_at_T"]["baseline"] == pytest.approx(1.0, abs=0.1)
    assert cur["epochs_at_T"]["recipe"] == pytest.approx(1 / g["recipes"]["curated"]["yield"], rel=0.15)
    assert cur["supported"]  # the arm's null is shown within the main null's margin of raw's pool
    assert rows[(1.0, "null")]["equivalence"]["margin_source"] == "the main null's margin"
    assert cur["call"] == "better"
    assert cur["diff_bpb"]["ci_high"] < 0
    assert cur["goodput"]["value"] > 1  # worth more fresh raw tokens than raw's pool is
    assert cur["goodput_trained_once"] == pytest.approx(
        g["recipes"]["curated"]["yield"] * g["recipes"]["curated"]["multiplier"]["value"]
    )
    assert cur["goodput_trained_once"] < cur["goodput"]["value"]
    assert len(cur["per_seed_diff"]) == 3
    # the arm's runs: main point only, under proxy/limited/<arm>/seed<k>/
    for arm in ("raw~k1", "raw~k4", "curated~k1", "null~k1"):
        for s in range(3):
            assert (d / "proxy" / "limited" / arm / f"seed{s}" / "result.json").exists()
    assert "raw~k1" not in g["recipes"]  # reported apart, never ranked
    assert set(g["ranking"]["order"]) == {"raw", "curated", "null"}


def test_the_repetition_curve_and_the_file_read_by_the_schema(limited_run):
    d, g = limited_run
    pts = {p["epochs"]: p for p in g["repetition_curve"]["points"]}
    assert sorted(pts) == [1.0, 4.0]
    assert pts[4.0]["epochs_at_T"] == pytest.approx(4.0, abs=0.4)
    assert pts[4.0]["muennighoff"] == pytest.approx(0.93, abs=0.01)
    assert "repetition on this proxy" in g["repetition_curve"]["sentence"]
    typed = load(d / "goodput.json")  # strict: every key the writer wrote is in the schema
    assert [e.arm for e in typed.data_limited] == ["curated~k1", "null~k1"]


def test_the_report_shows_the_comparison_and_the_repetition_curve(limited_run):
    from curate.report import trust

    _, g = limited_run
    md = "\n".join(trust.markdown(g))
    assert "When data is the limit: repeated against repeated" in md
    assert "What repetition costs this proxy" in md
    cur = next(e for e in g["data_limited"] if e["recipe"] == "curated")
    assert (
        f"| 1 | curated | {cur['epochs_at_T']['recipe']:.1f} / {cur['epochs_at_T']['baseline']:.1f} |" in md
    )
    assert cur["sentence"] in md
