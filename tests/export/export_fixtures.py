"""Helpers for the export tests: a tiny trained tokenizer and fake finished run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from curate.core.engine import InlineEngine
from curate.export.options import ExportOptions
from curate.runtime.context import RunContext

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé text with emoji 😀 and CJK 漢字, plus tabs\tand\nnewlines.",
    "",
    "short",
    "A longer document. " * 40,
    "Numbers 1234567890 and symbols !@#$%^&*() survive tokenization.",
    "<|endoftext|> appears literally inside this text.",
    "   leading and trailing spaces   ",
    "Line one\nLine two\n\nParagraph two.",
    "Zebras zig-zag.",
] + [f"Document number {i}: " + "word " * (i % 13) for i in range(50)]


def train_tokenizer(path: Path, texts: list[str], vocab_size: int = 400) -> Path:
    """A byte-level BPE with <|endoftext|>, trained on ``texts`` (round-trips any UTF-8 text)."""
    from curate.instrument.tokenizer import train_bpe

    return train_bpe(texts, vocab_size=vocab_size, min_frequency=0).save(path)


def make_run(run_dir: Path, texts: list[str], *, parts: int = 3, config: dict | None = None) -> Path:
    """A finished run: ``kept/part-*.parquet`` (id, text, source, two score columns) and a manifest."""
    kept = run_dir / "kept"
    kept.mkdir(parents=True)
    bounds = [round(i * len(texts) / parts) for i in range(parts + 1)]
    for p in range(parts):
        lo, hi = bounds[p], bounds[p + 1]
        idx = list(range(lo, hi))
        table = pa.table(
            {
                "id": [f"doc-{i:05d}" for i in idx],
                "text": [texts[i] for i in idx],
                "source": ["web" if i % 2 else "books" for i in idx],
                "gopher_quality_v1.score": pa.array([i / 10 for i in idx], pa.float64()),
                "length_v1.words": pa.array([len(texts[i].split()) for i in idx], pa.int64()),
            }
        )
        pq.write_table(table, kept / f"part-{p:05d}.parquet", row_group_size=7)
    config = config if config is not None else {"name": "test_run", "export": {"seed": 3}}
    (run_dir / "manifest.json").write_text(json.dumps({"config": config}))
    return run_dir


def kept_rows(run_dir: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in sorted((run_dir / "kept").glob("part-*.parquet"))])


def make_ctx(run_dir: Path, section: dict | None = None, engine=None) -> RunContext:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return RunContext(
        run_dir=run_dir,
        config=manifest.get("config", {}),
        engine=engine or InlineEngine(progress=False),
        manifest=manifest,
        section=ExportOptions.parse(section or {}),  # the export: section as a verb on a finished run does
    )
