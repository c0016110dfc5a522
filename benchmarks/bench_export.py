"""Export throughput on ~5k real web documents, against datatrove's MegatronDocumentTokenizer in the same run.

    python benchmarks/bench_export.py [--docs 5000] [--ray]

Builds a fake finished run (kept/ with 4 Parquet parts) from ../shared/corpora web files, then times:
  * datatrove 0.10.1 MegatronDocumentTokenizer (in-process, one .bin/.idx) on the documents in order;
  * our export, Megatron only (the like-for-like peer: tokenize + shuffle + shard + write + sha256);
  * our export, all formats (parquet + card, megatron, memmap, manifest with checksums);
  * optionally the same on the Ray engine (embedded, all local CPUs).
Prints tokens/s for each and the ratio to datatrove (time of datatrove / time of ours), and asserts
that every export wrote exactly as many tokens as datatrove (same documents, EOS after each; byte
identity per shard is asserted in tests/export/test_export_tokens.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.core.engine import InlineEngine, make_engine  # noqa: E402
from curate.export.options import parse_section  # noqa: E402
from curate.export.phase import run_phase  # noqa: E402
from curate.io.readers import read_table  # noqa: E402
from curate.runtime.context import RunContext  # noqa: E402

CORPORA = Path(os.environ.get("CURATE_CORPORA", ROOT.parent / "shared" / "corpora"))
FILES = ("web/webtext.jsonl.gz", "web/c4_en.jsonl.gz", "web/commoncrawl_2019.jsonl.gz", "web/news.jsonl.gz")


def load_docs(n: int) -> pa.Table:
    tables, have = [], 0
    for f in FILES:
        t = read_table(str(CORPORA / f), fmt="jsonl", limit=n - have).select(["id", "text", "source"])
        tables.append(t)
        have += t.num_rows
        if have >= n:
            break
    return pa.concat_tables(tables)


def make_run(run_dir: Path, table: pa.Table, parts: int = 4) -> None:
    (run_dir / "kept").mkdir(parents=True)
    step = -(-table.num_rows // parts)
    for p in range(parts):
        pq.write_table(table.slice(p * step, step), run_dir / "kept" / f"part-{p:05d}.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"config": {"name": "bench_export"}}))


def time_datatrove(texts: list[str], tokenizer: Path, out: Path) -> tuple[float, int]:
    from datatrove.data import Document
    from datatrove.pipeline.tokens import MegatronDocumentTokenizer

    t0 = time.perf_counter()
    step = MegatronDocumentTokenizer(
        output_folder=str(out), save_filename="dt", tokenizer_name_or_path=str(tokenizer)
    )
    step.run(iter([Document(text=t, id=str(i)) for i, t in enumerate(texts)]))
    secs = time.perf_counter() - t0
    return secs, (out / "dt_00000_tokens.bin").stat().st_size // 2


def time_export(run_dir: Path, section: dict, engine) -> tuple[float, dict]:
    shutil.rmtree(run_dir / "export", ignore_errors=True)
    ctx = RunContext(run_dir=run_dir, config={}, engine=engine, manifest={}, section=parse_section(section))
    t0 = time.perf_counter()
    summary = run_phase(ctx)
    return time.perf_counter() - t0, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--ray", action="store_true", help="also time the export on the Ray engine")
    args = ap.parse_args()
    tokenizer = CORPORA / "tokenizers" / "gpt-neox-20b.json"
    if not tokenizer.exists():
        print(f"needs {CORPORA} (../shared/corpora)", file=sys.stderr)
        return 1
    table = load_docs(args.docs)
    texts = table.column("text").to_pylist()
    chars = sum(map(len, texts))
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}"
    )
    print(f"corpus: {table.num_rows} docs, {chars / 1e6:.1f} M chars from {', '.join(FILES)}")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        make_run(run_dir, table)
        dt_secs, dt_tokens = time_datatrove(texts, tokenizer, Path(tmp) / "dt")
        rows = [("datatrove MegatronDocumentTokenizer", dt_secs, dt_tokens)]
        base = {
            "tokenizer": str(tokenizer),
            "shard_tokens": 1_000_000,
            "val_fraction": 0.01,
            "seed": 0,
            "tokenize_rows": 1000,
        }
        runs = [
            (
                "curate export megatron (inline)",
                {**base, "formats": ["megatron"]},
                InlineEngine(progress=False),
            ),
            ("curate export all formats (inline)", base, InlineEngine(progress=False)),
        ]
        if args.ray:
            engine = make_engine("ray", progress=False)
            runs.append(("curate export all formats (ray)", base, engine))
        for name, section, engine in runs:
            secs, summary = time_export(run_dir, section, engine)
            tokens = sum(summary["tokens"].values())
            assert tokens == dt_tokens, (tokens, dt_tokens)
            rows.append((name, secs, tokens))
        if args.ray:
            engine.shutdown()
    print(f"{'what':<40} {'seconds':>8} {'tokens':>11} {'tokens/s':>11} {'vs datatrove':>12}")
    for name, secs, tokens in rows:
        print(f"{name:<40} {secs:>8.2f} {tokens:>11,} {tokens / secs:>11,.0f} {dt_secs / secs:>11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
