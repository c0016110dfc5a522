"""An export at mixture weights: per-source tokens within 1% of the weights (read back from the files),
repetition where a weight asks for it, the manifest's and the card's mixture block, and the errors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.export.exporter import verify_export
from curate.export.mixture import draw
from curate.export.phase import run_phase
from tests.export.export_fixtures import make_ctx, make_run, train_tokenizer

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
]


def _texts(n: int) -> list[str]:
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(WORDS, int(rng.integers(5, 30)))) + "." for _ in range(n)]


@pytest.fixture
def mix_run(tmp_path):
    return make_run(tmp_path / "run", _texts(600))  # sources alternate: books, web


def _train_rows(export):
    files = sorted((export / "parquet").glob("train-*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_token_export_at_weights_is_within_one_percent_per_source(mix_run, tmp_path):
    tok = train_tokenizer(tmp_path / "tok.json", _texts(600))
    weights = {"books": 0.8, "web": 0.2}  # books is about half the data: repeated to 1.6 epochs
    run_phase(
        make_ctx(mix_run, {"tokenizer": str(tok), "formats": ["parquet", "memmap"], "mixture": weights})
    )
    export = mix_run / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    mix = manifest["mixture"]
    assert (mix["by"], mix["unit"]) == ("source", "tokens")
    # read back: memmap document i is Parquet train row i; sum its tokens per source
    doc_idx = np.concatenate(
        [np.load(p)[:-1] - np.load(p)[0] for p in sorted((export / "memmap").glob("train_*.doc_idx.npy"))]
    )
    lengths = np.concatenate(
        [np.diff(np.load(p)) for p in sorted((export / "memmap").glob("train_*.doc_idx.npy"))]
    )
    rows = _train_rows(export)
    assert len(rows) == len(lengths) == len(doc_idx) == manifest["splits"]["train"]["docs"]
    per_source = {
        s: int(sum(n for r, n in zip(rows, lengths, strict=True) if r["source"] == s)) for s in weights
    }
    total = sum(per_source.values())
    assert total == mix["total_written"] == manifest["splits"]["train"]["tokens"]
    for s, w in weights.items():
        assert abs(per_source[s] - w * mix["total_target"]) <= 0.01 * w * mix["total_target"]  # the FLOOR
        assert abs(per_source[s] / total - w) <= 0.01 * w
        assert mix["sources"][s]["written"] == per_source[s]
    assert mix["sources"]["books"]["epochs"] == pytest.approx(1.6, abs=0.05)
    assert mix["sources"]["books"]["docs"] > mix["sources"]["books"]["unique_docs"]  # repeated
    assert mix["sources"]["web"]["epochs"] == pytest.approx(0.4, abs=0.05)
    assert "## Mixture" in (export / "README.md").read_text()
    assert "| books | 0.8000 |" in (export / "README.md").read_text()
    assert verify_export(export) == []
    assert manifest["request"]["mixture_weights"] == weights


def test_text_export_uses_bytes_and_reads_the_search_choice(mix_run):
    with pytest.raises(PhaseError, match=r"mix\.json does not exist; run `curate mix"):
        run_phase(make_ctx(mix_run, {"mixture": "search"}))
    confirmed = {"export": True, "sentence": "The chosen mixture trains better than the natural mixture."}
    mix = {"chosen": {"weights": {"books": 0.25, "web": 0.75}}, "decision": confirmed}
    (mix_run / "mix.json").write_text(json.dumps(mix))
    run_phase(make_ctx(mix_run, {"mixture": "search", "mixture_tokens": 20_000}))
    manifest = json.loads((mix_run / "export" / "manifest.json").read_text())
    assert manifest["mixture"]["unit"] == "bytes"
    assert manifest["mixture"]["search"] == {
        "called_better": True,
        "exported_unconfirmed": False,
        "sentence": confirmed["sentence"],
    }
    assert manifest["mixture"]["total_target"] == 20_000
    rows = _train_rows(mix_run / "export")
    got = {s: sum(len(r["text"].encode()) for r in rows if r["source"] == s) for s in ("books", "web")}
    assert abs(got["books"] - 5_000) <= 120  # half a document at most (documents are whole)
    assert abs(got["web"] - 15_000) <= 120
    val = pq.read_table(next((mix_run / "export" / "parquet").glob("validation-*.parquet")))
    assert val.num_rows == manifest["splits"]["validation"]["docs"]  # validation keeps its own mixture


def test_draw_repeats_whole_passes_then_the_closest_prefix():
    sources = np.array(["a"] * 4 + ["b"] * 4, dtype=object)
    lengths = np.array([10, 10, 10, 10, 5, 5, 5, 5])
    order, rep = draw(sources, lengths, np.arange(8), {"a": 0.5, "b": 0.5}, 100, seed=0)
    assert rep["a"] == {
        "weight": 0.5,
        "target": 50,
        "written": 50,
        "docs": 5,
        "unique_docs": 4,
        "available": 40,
        "epochs": 1.25,
        "share": 0.5,
    }
    assert (rep["b"]["written"], rep["b"]["docs"], rep["b"]["epochs"]) == (50, 10, 2.5)
    assert sorted(order.tolist()) == sorted([0, 1, 2, 3, 0] + [4, 5, 6, 7] * 2 + [4, 5])
    with pytest.raises(PhaseError, match=r"source .c. has weight 0\.5 but no train documents"):
        draw(sources, lengths, np.arange(8), {"a": 0.5, "c": 0.5}, 100, seed=0)


def test_mixture_option_errors(mix_run):
    for section, msg in (
        ({"mixture": {"books": -1}}, "export.mixture: expected `search` or a mapping"),
        ({"mixture": {"books": 0}}, "export.mixture: expected `search` or a mapping"),
        ({"mixture": "best"}, "export.mixture: expected `search` or a mapping"),
        (
            {"mixture": {"books": 1}, "mixture_tokens": 0},
            "export.mixture_tokens: expected a value >= 1, got 0",
        ),
        ({"mixture": {"books": 1}, "mixture_by": ""}, "export.mixture_by: expected a column name"),
    ):
        with pytest.raises(PhaseError, match=msg):
            make_ctx(mix_run, section)
    with pytest.raises(PhaseError, match="has no column 'domain'"):
        run_phase(make_ctx(mix_run, {"mixture": {"books": 1}, "mixture_by": "domain"}))
