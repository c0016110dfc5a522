"""The ``target:`` section end to end (inline engine, no proxy training): roles, disjointness from the
eval sets, bad targets refused before any fitting, fits cached by fingerprint."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import curate
from curate.core.errors import ConfigError
from curate.pipeline.config import parse_pipeline
from tests.helpers import corpora_path
from tests.proxy.toy import WORDS

TARGET_WORDS = WORDS[:19]  # the toy target vocabulary (tests/proxy/toy.py)
WEB_WORDS = [
    "buy",
    "cheap",
    "deals",
    "now",
    "click",
    "here",
    "best",
    "price",
    "free",
    "shipping",
    "offer",
    "today",
    "limited",
    "stock",
]
EVAL = "a completely different sentence about rivers mountains and the slow history of old valleys " * 3


def _docs(words: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, 40)) + "." for _ in range(n)]


def _jsonl(path: Path, texts: list[str], source: str = "web") -> Path:
    with gzip.open(path, "wt") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"{path.stem}-{i}", "text": t, "source": source}) + "\n")
    return path


def _setup(tmp_path: Path, *, target_texts: list[str] | None = None) -> Path:
    web = _docs(WEB_WORDS, 30, 0) + _docs(TARGET_WORDS + WEB_WORDS, 30, 1)
    _jsonl(tmp_path / "input.jsonl.gz", web)
    _jsonl(
        tmp_path / "target.jsonl.gz", target_texts if target_texts is not None else _docs(TARGET_WORDS, 20, 2)
    )
    _jsonl(tmp_path / "eval.jsonl.gz", [EVAL])
    pipeline = f"""
name: target_test
input: {{path: {tmp_path}/input.jsonl.gz, format: jsonl}}
engine: {{kind: inline}}
target:
  path: {tmp_path}/target.jsonl.gz
  raw_docs: 40
stages:
  - score: dsir_v1
  - score: target_classifier_v1
  - score: perplexity_diff_v1
    params: {{tokens: 4096, seq_len: 32, batch_size: 4, vocab_size: 300}}
proxy:
  eval:
    - {{name: rivers, kind: text, path: {tmp_path}/eval.jsonl.gz}}
    - {{name: heldout, holdout: 0.1}}
"""
    (tmp_path / "p.yaml").write_text(pipeline)
    return tmp_path / "p.yaml"


def test_target_roles_scores_and_no_refit_on_rerun(tmp_path, capsys):
    p = _setup(tmp_path)
    out = tmp_path / "run"
    m = curate.run(p, output=out, phases=False, progress=True)
    err = capsys.readouterr().err
    assert f"target: {tmp_path}/target.jsonl.gz (target sample, 20 docs)" in err
    assert f"eval:   rivers: {tmp_path}/eval.jsonl.gz (text)" in err
    assert "eval:   heldout: held-out split 0.1 (heldout)" in err
    t = m["target"]
    assert t["target"] == {
        "files": [f"{tmp_path}/target.jsonl.gz"],
        "docs": 20,
        "skip_docs": 0,
        "dropped_heldout": 0,
    }
    assert t["eval"] == {
        "rivers": {"kind": "text", "from": f"{tmp_path}/eval.jsonl.gz"},
        "heldout": {"kind": "heldout", "from": "held-out split 0.1"},
    }
    # 60 input rows minus the held-out split; the raw sample is capped at raw_docs
    assert t["raw_sample"]["input_rows"] == 60
    assert 0 < t["raw_sample"]["docs"] <= 40
    assert sorted(t["fitted"]) == ["dsir_v1", "perplexity_diff_v1", "target_classifier_v1"]
    kept = pq.read_table(sorted((out / "kept").glob("*.parquet"))[0])
    for col in (
        "dsir_v1.log_weight",
        "dsir_v1.resample_key",
        "target_classifier_v1.target_prob",
        "perplexity_diff_v1.diff",
        "perplexity_diff_v1.bpb_target",
        "perplexity_diff_v1.bpb_raw",
    ):
        assert col in kept.column_names
    # Target-like rows (ids input-30..59 mix target words in) score higher than pure spam under every scorer.
    ids = kept.column("id").to_pylist()
    mixed = np.array([int(i.rsplit("-", 1)[1]) >= 30 for i in ids])
    for col, sign in (
        ("dsir_v1.log_weight", 1),
        ("target_classifier_v1.target_prob", 1),
        ("perplexity_diff_v1.diff", -1),
    ):
        v = np.array(kept.column(col).to_pylist())
        assert sign * v[mixed].mean() > sign * v[~mixed].mean(), col
    stamps = {f: f.stat().st_mtime_ns for f in (out / "target").glob("*/fitted.json")}
    assert len(stamps) == 3
    stamps[out / "target" / "raw.jsonl.gz"] = (out / "target" / "raw.jsonl.gz").stat().st_mtime_ns
    m2 = curate.run(p, output=out, phases=False)
    assert m2["target"]["fitted"] == t["fitted"]
    # neither refitted nor resampled (the input scan is skipped: same files, target and eval sets)
    assert {f: f.stat().st_mtime_ns for f in stamps} == stamps
    # an eval file whose content changed under the same name is checked again on a rerun
    with gzip.open(out / "target" / "target.jsonl.gz", "rt") as f:
        leaked = json.loads(f.readline())["text"]
    _jsonl(tmp_path / "eval.jsonl.gz", [leaked])
    with pytest.raises(ConfigError, match="target: overlaps the eval sets: eval set 'rivers'"):
        curate.run(p, output=out, phases=False)


def test_a_target_overlapping_an_eval_set_is_refused_naming_both_files(tmp_path):
    p = _setup(tmp_path, target_texts=[*_docs(TARGET_WORDS, 5, 2), EVAL + " and more"])
    with pytest.raises(ConfigError) as e:
        curate.run(p, output=tmp_path / "run", phases=False)
    msg = str(e.value)
    assert msg.startswith(
        f"{p}:5: target: overlaps the eval sets: eval set 'rivers' ({tmp_path}/eval.jsonl.gz)"
    )
    assert f"1 target document(s) of {tmp_path}/target.jsonl.gz" in msg
    assert not list((tmp_path / "run" / "target").glob("*/"))  # nothing was fitted


def test_an_empty_target_file_is_refused_naming_it(tmp_path):
    p = _setup(tmp_path, target_texts=[])
    with pytest.raises(ConfigError, match=f"{p}:5: target: {tmp_path}/target.jsonl.gz holds no documents"):
        curate.run(p, output=tmp_path / "run", phases=False)


def test_an_unreadable_target_file_is_refused_naming_it(tmp_path):
    p = _setup(tmp_path)
    (tmp_path / "target.jsonl.gz").write_bytes(gzip.compress(b'{"text": "ok"}\n')[:-9])  # truncated
    with pytest.raises(ConfigError, match=f"target: {tmp_path}/target.jsonl.gz is unreadable"):
        curate.run(p, output=tmp_path / "run", phases=False)


def test_target_section_errors_point_at_the_line():
    base = "name: x\ninput: {path: x.jsonl, format: jsonl}\nstages:\n  - score: dsir_v1\n"
    with pytest.raises(
        ConfigError, match=r"^p.yaml:4: stages\[0\].score: dsir_v1 is fitted to a target sample"
    ):
        parse_pipeline(base, path="p.yaml")
    with pytest.raises(ConfigError, match=r"^p.yaml:6: target.path: /nonexistent/t.jsonl: no such file"):
        parse_pipeline(base + "target:\n  path: /nonexistent/t.jsonl\n", path="p.yaml")
    with pytest.raises(
        ConfigError,
        match=r"^p.yaml:6: target.size: unknown key; valid keys: format, max_docs, path, raw_docs, seed, ",
    ):
        parse_pipeline(base + "target:\n  size: 3\n", path="p.yaml")
    with pytest.raises(
        ConfigError, match=r"^p.yaml:5: target: expected exactly one of path, source; got none"
    ):
        parse_pipeline(base + "target:\n  max_docs: 3\n", path="p.yaml")
    with pytest.raises(ConfigError, match=r"^p.yaml:7: target.max_docs: expected a value >= 1, got 0$"):
        parse_pipeline(base + "target:\n  source: wiki\n  max_docs: 0\n", path="p.yaml")
    cfg = parse_pipeline(base + "target: {source: wiki}\n", path="p.yaml")
    assert cfg.target.source == "wiki"
    assert cfg.target.where == "p.yaml:5"


def test_a_target_source_that_is_an_eval_source_is_refused(tmp_path):
    _jsonl(tmp_path / "input.jsonl.gz", _docs(WEB_WORDS, 10, 0))
    text = f"""name: x
input: {{path: {tmp_path}/input.jsonl.gz, format: jsonl}}
engine: {{kind: inline}}
target: {{source: web}}
stages:
  - score: dsir_v1
proxy:
  eval: [{{name: webdocs, kind: text, source: web}}]
"""
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"target.source 'web' is the source of eval set 'webdocs'"):
        curate.run(tmp_path / "p.yaml", output=tmp_path / "run", phases=False)


def test_the_proxy_phase_rechecks_a_stored_target_against_its_eval_sets(tmp_path):
    from curate.instrument.evalsets import EvalData, EvalSpec, build_gram_index
    from curate.targeting.disjoint import recheck

    p = _setup(tmp_path)
    p.write_text(
        p.read_text()
        .replace(
            "  - score: perplexity_diff_v1\n    params: {tokens: 4096, seq_len: 32, batch_size: 4, vocab_size: 300}\n",
            "",
        )
        .replace("  - score: target_classifier_v1\n", "")
    )
    out = tmp_path / "run"
    curate.run(p, output=out, phases=False)
    with gzip.open(out / "target" / "target.jsonl.gz", "rt") as f:
        leaked = json.loads(f.readline())["text"]
    ok = [EvalData(EvalSpec(name="rivers", path="e"), texts=[EVAL], file="e.jsonl")]
    build_gram_index(ok, tmp_path / "ok.npz")
    recheck(out, ok, str(tmp_path / "ok.npz"))  # disjoint: no error
    bad = [*ok, EvalData(EvalSpec(name="leak", path="l"), texts=[leaked], file="leak.jsonl")]
    build_gram_index(bad, tmp_path / "bad.npz")
    with pytest.raises(ConfigError) as e:
        recheck(out, bad, str(tmp_path / "bad.npz"))
    assert str(e.value).startswith(
        f"proxy: the run's target sample {out}/target/target.jsonl.gz: target: overlaps the eval sets: "
        f"eval set 'leak' (leak.jsonl) shares text with 1 target document(s) of {tmp_path}/target.jsonl.gz"
    )


@pytest.mark.corpora
def test_a_wikipedia_target_is_disjoint_from_web_targets_only_past_the_eval_documents(tmp_path):
    wiki = corpora_path("clean", "wikipedia.jsonl.gz")
    docs = corpora_path("clean", "python_docs.jsonl.gz")
    text = f"""name: t
input: {{path: {docs}, format: jsonl, limit: 200}}
engine: {{kind: inline}}
target: {{path: {wiki}, max_docs: 200}}
stages:
  - score: dsir_v1
proxy: {{eval_suite: web_targets}}
"""
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ConfigError) as e:
        curate.run(tmp_path / "p.yaml", output=tmp_path / "a", phases=False)
    assert "eval set 'wikipedia' (" in str(e.value)
    assert f"target document(s) of {wiki}" in str(e.value)
    # web_targets' wikipedia set reads the first documents only: skipping 40 makes the target disjoint
    (tmp_path / "p.yaml").write_text(text.replace("max_docs: 200}", "max_docs: 200, skip_docs: 40}"))
    m = curate.run(tmp_path / "p.yaml", output=tmp_path / "b", phases=False)
    assert m["target"]["target"]["docs"] == 200
    assert set(m["target"]["eval"]) == {
        "wikitext2",
        "wikipedia",
        "gutenberg",
        "arc_easy",
        "piqa",
        "lambada",
        "winogrande",
    }


def test_prepare_without_a_target_imports_nothing_of_the_proxy(tmp_path):
    # curate.proxy.spec.config imports torch, which cannot load in a `ray job submit` driver here
    # (tests/test_cluster.py, the `ray job submit` tests): a run without a target must not pull it in.
    import subprocess
    import sys

    code = (
        "import sys, types; from curate.targeting.prepare import prepare; "
        f"print(prepare(types.SimpleNamespace(target=None), __import__('pathlib').Path('{tmp_path}'), [], None, None), "
        "'curate.proxy.spec.config' in sys.modules, 'torch' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["None", "False", "False"]
