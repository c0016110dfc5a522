"""The finished run the report tests read: its input (normal, short, shouting and duplicated documents),
the pipeline over it (normalize → a test-only scorer → select → exact dedup) and the export's tokenizer.

A plain module, imported as ``from tests.report.report_run import ...``; the fixtures that build the run
live in tests/report/conftest.py. Importing it registers the test-only scorer ``report_test_shape_v1``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core.registry import STAGES
from curate.core.stage import Scorer

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
    vocab = [
        "data",
        "curation",
        "pipeline",
        "token",
        "model",
        "training",
        "corpus",
        "filter",
        "quality",
        "budget",
        "signal",
    ]
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
    from curate.instrument.tokenizer import train_bpe

    return train_bpe(texts, vocab_size=300, min_frequency=0).save(path)
