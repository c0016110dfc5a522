"""A real finished run for the report tests: jsonl input → normalize → a scorer → select → exact dedup,
run in-process, plus a Parquet+Megatron export and the goodput.json fixture (the proxy phase's schema).

The goodput fixture ``data/goodput.json`` was produced by ``curate.proxy.goodput.goodput_report`` on
synthetic curves (3 recipes, 3 seeds, 2 eval sets), with ``budget``/``seeds``/``model`` added as the
proxy phase records them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from curate.registry import STAGES
from curate.stage import Scorer

DATA = Path(__file__).resolve().parent / "data"
XSS = "<script>alert(1)</script>"

N_NORMAL, N_SHORT, N_SHOUT, N_DUP, N_BAD = 30, 6, 4, 5, 1


@STAGES.add("report_test_shape_v1")
class ShapeScorer(Scorer):
    """Test-only scorer: whitespace word count and the fraction of upper-case letters."""

    def score(self, table: pa.Table) -> dict[str, Any]:
        texts = table.column("text").to_pylist()
        words = [len(t.split()) for t in texts]
        upper = [sum(ch.isupper() for ch in t) / max(1, sum(ch.isalpha() for ch in t)) for t in texts]
        return {"words": pa.array(words, pa.int64()), "upper_frac": pa.array(upper, pa.float64())}


def write_inputs(d: Path) -> None:
    rng = np.random.default_rng(0)
    vocab = "data curation pipeline token model training corpus filter quality budget signal".split()
    normal = [f"Document {i}: " + " ".join(rng.choice(vocab, size=5 + i % 17)) + "." for i in range(N_NORMAL)]
    short = [XSS, "tiny", "two words", "a b c", "x", "four words right here"]
    shout = [f"THIS IS A VERY LOUD DOCUMENT NUMBER {i}" for i in range(N_SHOUT)]
    dups = normal[:N_DUP]
    rows = [{"id": f"n{i}", "text": t} for i, t in enumerate(normal)]
    rows += [{"id": f"s{i}", "text": t} for i, t in enumerate(short)]
    rows += [{"id": f"u{i}", "text": t} for i, t in enumerate(shout)]
    rows += [{"id": f"d{i}", "text": t} for i, t in enumerate(dups)]
    d.mkdir(parents=True, exist_ok=True)
    half = len(rows) // 2
    (d / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:half]) + "\n{broken\n")
    (d / "b.jsonl").write_text("\n".join(json.dumps(r) for r in rows[half:]) + "\n")


def pipeline_yaml(d: Path, extra: str = "") -> str:
    return f"""\
name: report_t
input: {{path: {d}/*.jsonl, format: jsonl, batch_docs: 16}}
stages:
  - transform: normalize_v1
  - score: report_test_shape_v1
  - select:
      - {{column: report_test_shape_v1.words, min: 5, reason: too_short}}
      - {{column: report_test_shape_v1.upper_frac, max: 0.5, reason: shouting}}
  - dedup: exact_dedup_v1
{extra}"""


def train_tokenizer(path: Path, texts: list[str]) -> Path:
    from curate.proxy.tokenizer import train_bpe

    return train_bpe(texts, vocab_size=300, min_frequency=0).save(path)


@pytest.fixture(scope="session")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished run (pipeline + export), built once per session; tests copy it."""
    from curate.config import parse_pipeline
    from curate.context import RunContext
    from curate.engine import InlineEngine
    from curate.export.phase import run_phase as export_phase
    from curate.runner import run_pipeline

    root = tmp_path_factory.mktemp("report_run")
    write_inputs(root / "in")
    run = root / "run"
    engine = InlineEngine(progress=False)
    manifest = run_pipeline(
        parse_pipeline(pipeline_yaml(root / "in")), run, engine=engine, progress=False, phases=False
    )
    tok = train_tokenizer(root / "tokenizer.json", ["Document data curation pipeline token model"] * 20)
    ctx = RunContext(
        run_dir=run,
        config=manifest["config"],
        engine=engine,
        manifest=manifest,
        section={"formats": ["parquet", "megatron"], "tokenizer": str(tok), "val_fraction": 0.1},
    )
    export_phase(ctx)
    return run


@pytest.fixture
def run_dir(base_run: Path, tmp_path: Path) -> Path:
    """A private copy of the finished run with goodput.json dropped in."""
    dst = tmp_path / "run"
    shutil.copytree(base_run, dst)
    shutil.copy(DATA / "goodput.json", dst / "goodput.json")
    return dst


@pytest.fixture
def goodput() -> dict[str, Any]:
    return json.loads((DATA / "goodput.json").read_text())


@pytest.fixture(scope="session")
def built_run(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run with goodput.json and the report built once: for tests that only read it."""
    from curate.report.build import build_report

    dst = tmp_path_factory.mktemp("report_built") / "run"
    shutil.copytree(base_run, dst)
    shutil.copy(DATA / "goodput.json", dst / "goodput.json")
    build_report(dst)
    return dst
