"""train-classifier, verified loading, fasttext_quality_v1 and re-selection from stored scores."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from curate.classify import (
    ClassifierRecipe,
    LabelledSource,
    fasttext_text,
    load_recipe,
    roc_auc,
    train_classifier,
)
from curate.core.registry import STAGES, build_params
from curate.core.select import Rule, Select
from curate.io.integrity import ModelIntegrityError
from curate.scorers.fasttext_quality import FastTextParams, FastTextQuality
from tests.helpers import make_table

GOOD = [
    "theorem",
    "proof",
    "lemma",
    "analysis",
    "equation",
    "integral",
    "physics",
    "history",
    "science",
    "river",
    "mountain",
]
BAD = ["click", "buy", "free", "deal", "win", "casino", "cheap", "sale", "offer", "discount", "subscribe"]


def _write(path: Path, rows: list[dict]) -> None:
    with gzip.open(path, "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _doc(rng: random.Random, words: list[str], n: int = 30) -> str:
    # mostly class words, a few shared ones, and a line break to exercise preprocessing
    shared = ["the", "and", "of", "a"]
    return " ".join(rng.choice(words if rng.random() < 0.6 else shared) for _ in range(n)) + "\nEnd"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ft")
    rng = random.Random(7)
    _write(
        d / "mixed.jsonl.gz",
        [{"id": f"g{i}", "text": _doc(rng, GOOD), "kind": "good"} for i in range(300)]
        + [{"id": f"b{i}", "text": _doc(rng, BAD), "kind": "bad"} for i in range(300)],
    )
    return d


def _recipe(d: Path, out: str, seed: int = 3) -> ClassifierRecipe:
    return ClassifierRecipe(
        name="toy",
        output=str(d / out),
        positive_label="hq",
        seed=seed,
        holdout=0.2,
        quantize=False,
        fasttext={"epoch": 5, "minCount": 1},
        sources=[
            LabelledSource(label="hq", path=str(d / "*.jsonl.gz"), where={"kind": "good"}, sample=250),
            LabelledSource(label="lq", path=str(d / "mixed.jsonl.gz"), where={"kind": ["bad"]}),
        ],
    )


@pytest.fixture(scope="module")
def trained(data) -> tuple[Path, dict]:
    return data / "a.ftz", train_classifier(_recipe(data, "a.ftz"))


def test_roc_auc_exact():
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == 0.75
    assert roc_auc(np.array([0.5, 0.5]), np.array([0, 1])) == 0.5
    assert np.isnan(roc_auc(np.array([0.5]), np.array([1])))


def test_preprocessing():
    assert fasttext_text(["Hello\nWorld\r\n\tX", None]).to_pylist() == ["hello world\r \tx", ""]


def test_manifest(trained, data):
    path, m = trained
    assert m["counts"]["train"]["hq"] + m["counts"]["holdout"]["hq"] == 250
    assert m["counts"]["train"]["lq"] + m["counts"]["holdout"]["lq"] == 300
    assert m["fasttext_params"]["thread"] >= 12
    assert m["fasttext_params"]["wordNgrams"] == 2
    assert m["fasttext_params"]["bucket"] == 200_000
    files = m["sources"][0]["files"]
    assert files[0]["path"].endswith("mixed.jsonl.gz")
    assert len(files[0]["sha256"]) == 64
    assert files[0]["size"] == (data / "mixed.jsonl.gz").stat().st_size
    assert m["holdout_metrics"]["auc"] > 0.95
    assert len(m["score_quantiles"]["holdout_negative"]) == 101
    assert path.with_suffix(".manifest.json").exists()
    assert m["model_bytes"] == path.stat().st_size


def test_training_is_deterministic_given_seed(trained, data):
    """Sampling, split and order are exact; fastText's lock-free threads add float noise only."""
    _path, m1 = trained
    m2 = train_classifier(_recipe(data, "b.ftz"))
    assert m1["counts"] == m2["counts"]
    assert m1["sources"] == m2["sources"]
    texts = [_doc(random.Random(i), GOOD if i % 2 else BAD) for i in range(200)]
    p = [
        FastTextQuality(FastTextParams(model=str(data / f))).score(make_table(texts))["hq_prob"].to_numpy()
        for f in ("a.ftz", "b.ftz")
    ]
    assert np.abs(p[0] - p[1]).max() < 0.02
    assert ((p[0] >= 0.5) == (p[1] >= 0.5)).all()
    m3 = train_classifier(_recipe(data, "c.ftz", seed=4))
    assert m3["counts"] != m1["counts"]  # a different seed gives a different split


def test_tampered_model_is_refused(trained, tmp_path):
    path, _ = trained
    copy = tmp_path / "a.ftz"
    shutil.copy(path, copy)
    shutil.copy(path.with_suffix(".manifest.json"), tmp_path / "a.manifest.json")
    with open(copy, "ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelIntegrityError, match="does not match"):
        FastTextQuality(FastTextParams(model=str(copy))).setup()
    lone = tmp_path / "lone.ftz"
    shutil.copy(path, lone)
    with pytest.raises(ModelIntegrityError, match="no manifest"):
        FastTextQuality(FastTextParams(model=str(lone))).setup()


def test_scorer_column_and_thresholds(trained):
    path, m = trained
    stage = STAGES.get("fasttext_quality_v1")(
        build_params(FastTextParams, {"model": str(path), "min_prob": 0.5}, where="test")
    )
    out = stage.process(make_table([_doc(random.Random(1), GOOD), _doc(random.Random(2), BAD)]))
    prob = out.column("fasttext_quality_v1.hq_prob").to_pylist()
    assert out.schema.field("fasttext_quality_v1.hq_prob").type == pa.float32()
    assert prob[0] > 0.5 > prob[1]
    assert stage.reference_rules() == [Rule("fasttext_quality_v1.hq_prob", min=0.5, reason="low_quality")]
    top = FastTextQuality(FastTextParams(model=str(path), keep_top_percent=10))
    assert top.reference_rules()[0].min == pytest.approx(m["score_quantiles"]["holdout_negative"][90])
    with pytest.raises(ValueError, match="not both"):
        FastTextQuality(FastTextParams(model=str(path), min_prob=0.5, keep_top_percent=10))


def test_reselecting_reuses_stored_scores(trained, monkeypatch):
    """Score once; a new threshold is a select on the stored column: no model runs again."""
    path, _ = trained
    stage = FastTextQuality(FastTextParams(model=str(path)))
    texts = [_doc(random.Random(i), GOOD if i % 2 else BAD) for i in range(20)]
    scored = stage.process(make_table(texts))

    def boom(*a, **k):
        raise AssertionError("the model ran again")

    monkeypatch.setattr("curate.classify.model.positive_probability", boom)
    monkeypatch.setattr(stage._model, "predict", boom)
    monkeypatch.setattr("fasttext.load_model", boom)
    col = "fasttext_quality_v1.hq_prob"
    values = np.array(scored.column(col).to_pylist())
    for t in (0.2, 0.5, 0.9):
        out = Select(rules=[Rule(col, min=t, reason="low_quality")], prefix=stage.label).process(scored)
        rejected = np.array([r is not None for r in out.column("__reject__").to_pylist()])
        assert (rejected == (values < t)).all()


def test_threshold_for_top_percent(tmp_path):
    import pyarrow.parquet as pq

    from curate.classify import threshold_for_top_percent

    pq.write_table(pa.table({"s": [float(i) for i in range(100)]}), tmp_path / "part-0.parquet")
    assert threshold_for_top_percent(str(tmp_path / "*.parquet"), "s", 10) == 90.0


def test_cli_with_recipe_yaml(data, tmp_path):
    from curate.scorers import cli

    recipe = tmp_path / "r.yaml"
    mixed = str(data / "mixed.jsonl.gz")
    recipe.write_text(
        yaml.safe_dump(
            {
                "name": "toy",
                "output": str(tmp_path / "m.ftz"),
                "positive_label": "hq",
                "quantize": False,
                "fasttext": {"epoch": 2, "minCount": 1, "thread": 2},
                "sources": [
                    {"label": "hq", "path": mixed, "where": {"kind": "good"}, "sample": 50},
                    {"label": "lq", "path": mixed, "where": {"kind": "bad"}, "sample": 50},
                ],
            }
        )
    )
    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    args = ap.parse_args(["train-classifier", str(recipe), "--seed", "5"])
    assert args.func(args) == 0
    m = json.loads((tmp_path / "m.manifest.json").read_text())
    assert m["seed"] == 5
    assert m["fasttext_params"]["thread"] == 12
    with pytest.raises(ValueError, match="unknown key"):
        load_recipe(str(recipe), bogus=1)


def test_stage_pickles_without_its_model(trained):
    """Ray ships stages to workers: the loaded model never travels, each worker loads (and verifies) it."""
    import pickle

    path, _ = trained
    stage = FastTextQuality(FastTextParams(model=str(path)))
    first = stage.process(make_table(["theorem proof lemma"])).column("fasttext_quality_v1.hq_prob")
    clone = pickle.loads(pickle.dumps(stage))
    assert clone._model is None
    assert clone._ready is False
    assert clone.process(make_table(["theorem proof lemma"])).column("fasttext_quality_v1.hq_prob") == first


def test_model_path_resolves_from_any_directory(trained, monkeypatch, tmp_path):
    from curate.scorers.fasttext_quality import resolve_model_path

    monkeypatch.chdir(tmp_path)
    default = resolve_model_path("models/quality_fasttext.ftz")
    assert Path(default).is_absolute()
    assert Path(default).exists()


@pytest.mark.ray
def test_scorer_on_ray_workers(trained, ray_engine):
    """Each Ray actor builds its own model in setup(); results match the in-process scorer."""
    path, _ = trained
    stage = FastTextQuality(FastTextParams(model=str(path)))
    parts = [
        make_table([_doc(random.Random(i), GOOD if i % 2 else BAD) for i in range(k, k + 5)]) for k in (0, 5)
    ]
    got = ray_engine.map_worker(lambda: stage.process, parts, resources=stage.resources)
    want = [stage.process(p) for p in parts]
    assert [g.column("fasttext_quality_v1.hq_prob") for g in got] == [
        w.column("fasttext_quality_v1.hq_prob") for w in want
    ]
