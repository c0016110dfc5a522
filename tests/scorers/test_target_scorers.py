"""target_classifier_v1 and perplexity_diff_v1: what they fit, what they score, and the fit cache."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from curate.scorers.perplexity import Perplexity, PerplexityParams
from curate.scorers.perplexity_diff import PerplexityDiff, PerplexityDiffParams
from curate.scorers.target_classifier import TargetClassifier
from curate.targeting.draw import write_jsonl
from curate.targeting.fitted import TargetSample
from curate.targeting.prepare import fit_stages
from tests.proxy.toy import WORDS

TARGET = WORDS[:16]  # the toy target vocabulary (tests/proxy/toy.py)
RAW = ["buy", "cheap", "deals", "now", "click", "here", "best", "price", "free", "shipping", "offer", "today"]


def _sample(tmp_path) -> TargetSample:
    rng = np.random.default_rng(0)
    target = [" ".join(rng.choice(TARGET, 40)) for _ in range(60)]
    raw = [" ".join(rng.choice(RAW + TARGET[:3], 40)) for _ in range(60)]
    s = TargetSample(
        target_texts=target,
        raw_texts=raw,
        target_jsonl=str(tmp_path / "target.jsonl.gz"),
        raw_jsonl=str(tmp_path / "raw.jsonl.gz"),
    )
    write_jsonl(target, tmp_path / "target.jsonl.gz")
    write_jsonl(raw, tmp_path / "raw.jsonl.gz")
    return s


def test_target_classifier_trains_target_vs_raw_through_train_classifier(tmp_path):
    sample = _sample(tmp_path)
    stage = TargetClassifier()
    (tmp_path / "fit").mkdir()
    model = stage.fit(sample, tmp_path / "fit")
    assert model == str(tmp_path / "fit" / "model.bin")
    manifest = json.loads((tmp_path / "fit" / "model.manifest.json").read_text())
    assert manifest["positive_label"] == "target"
    assert [(s["label"], s["path"]) for s in manifest["sources"]] == [
        ("target", sample.target_jsonl),
        ("raw", sample.raw_jsonl),
    ]
    ft = manifest["fasttext_params"]
    assert ft["thread"] >= 12
    assert ft["bucket"] == 200_000
    assert manifest["counts"] == {"train": {"raw": 48, "target": 48}, "holdout": {"raw": 12, "target": 12}}
    stage.use_model(model)
    out = stage.process(pa.table({"id": ["t", "r"], "text": [" ".join(TARGET), " ".join(RAW)]}))
    p = out.column("target_classifier_v1.target_prob").to_pylist()
    assert p[0] > 0.5 > p[1]


def test_perplexity_diff_is_target_minus_raw_bpb_and_is_cached(tmp_path):
    sample = _sample(tmp_path)
    params = PerplexityDiffParams(tokens=4096, seq_len=32, batch_size=4, vocab_size=300)
    stage = PerplexityDiff(params)
    stage.validate()
    fitted = fit_stages([stage], sample, tmp_path / "work")
    folder = tmp_path / "work" / next(p.name for p in (tmp_path / "work").iterdir())
    assert fitted == {"perplexity_diff_v1": str(folder)}
    assert stage.params.model == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "data",
        "fitted.json",
        "raw",
        "target",
        "tokenizer.json",
    ]
    for role in ("target", "raw"):
        cfg = json.loads((folder / role / "config.json").read_text())
        assert (cfg["model"], cfg["tokens"], cfg["seq_len"], cfg["seed"]) == ("proxy_tiny", 4096, 32, 0)
    table = pa.table({"id": ["t", "r"], "text": [" ".join(TARGET), " ".join(RAW)]})
    out = stage.process(table)
    diff, bt, br = (
        out.column(f"perplexity_diff_v1.{f}").to_pylist() for f in ("diff", "bpb_target", "bpb_raw")
    )
    # each side is exactly perplexity_v1 under that side's model
    for role, got in (("target", bt), ("raw", br)):
        ref = Perplexity(
            PerplexityParams(
                model=str(folder / role / "model"), tokenizer=str(folder / "tokenizer.json"), seq_len=32
            )
        )
        assert ref.score(table)["bpb"].to_pylist() == got
    assert diff == [a - b for a, b in zip(bt, br, strict=True)]
    assert diff[0] < 0 < diff[1]  # target-like text is cheaper under the target model
    # a second fit with the same data, config and seed reuses the folder (no training)
    stamp = (folder / "fitted.json").stat().st_mtime_ns
    again = PerplexityDiff(PerplexityDiffParams(tokens=4096, seq_len=32, batch_size=4, vocab_size=300))
    assert fit_stages([again], sample, tmp_path / "work") == fitted
    assert (folder / "fitted.json").stat().st_mtime_ns == stamp
    # another seed is another fingerprint
    other = TargetSample(**{**sample.__dict__, "seed": 1})
    third = PerplexityDiff(PerplexityDiffParams(tokens=4096, seq_len=32, batch_size=4, vocab_size=300))
    assert fit_stages([third], other, tmp_path / "work") != fitted


def test_perplexity_diff_validates_its_budget():
    with pytest.raises(ValueError, match="< 4 steps"):
        PerplexityDiff(PerplexityDiffParams(tokens=100)).validate()
    with pytest.raises(ValueError, match="valid sizes"):
        PerplexityDiff(PerplexityDiffParams(size="huge")).validate()
