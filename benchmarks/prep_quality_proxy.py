"""Prepare the proxy-training comparison "with vs without the quality classifier filter".

    python benchmarks/prep_quality_proxy.py --out runs/quality_proxy [--keep-top-percent 30]

Scores every document of ../shared/corpora/web/*.jsonl.gz with fasttext_quality_v1 once, then writes
two candidate datasets of the SAME size in UTF-8 bytes (so a proxy run sees the same token budget from
either): ``baseline.jsonl.gz`` (a seeded random sample of the raw web documents) and
``filtered.jsonl.gz`` (the top ``--keep-top-percent`` % by ``hq_prob``, then the same byte budget).
``scores.parquet`` keeps every document's score, so other thresholds need no model run.

After merging the proxy-training branch, train the proxy LM on both files for the same token budget and
seeds and compare eval bpb / the token-efficiency multiplier (DESIGN.md, "Data goodput").
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.io.readers import read_table  # noqa: E402
from curate.scorers.fasttext_quality import FastTextParams, FastTextQuality  # noqa: E402


def _write(path: Path, table: pa.Table) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for doc_id, text in zip(
            table.column("id").to_pylist(), table.column("text").to_pylist(), strict=True
        ):
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")


def _take_budget(table: pa.Table, budget: int) -> pa.Table:
    size = np.cumsum(pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False))
    return table.slice(0, int(np.searchsorted(size, budget, side="right")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/quality_proxy")
    ap.add_argument("--input", default=str(ROOT.parent / "shared" / "corpora" / "web" / "*.jsonl.gz"))
    ap.add_argument("--keep-top-percent", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(glob.glob(args.input))
    table = pa.concat_tables([read_table(f).select(["id", "text", "source"]) for f in files])
    scored = FastTextQuality(FastTextParams(model=str(ROOT / "models" / "quality_fasttext.ftz"))).process(
        table
    )
    pq.write_table(scored.drop_columns(["text"]), out / "scores.parquet")
    prob = scored.column("fasttext_quality_v1.hq_prob").to_numpy()
    top = np.argsort(-prob, kind="stable")[: int(len(prob) * args.keep_top_percent / 100)]
    filtered = table.take(pa.array(np.sort(top)))
    budget = int(pc.sum(pc.binary_length(filtered.column("text"))).as_py())
    shuffled = table.take(pa.array(np.random.default_rng(args.seed).permutation(table.num_rows)))
    baseline = _take_budget(shuffled, budget)
    filtered = filtered.take(pa.array(np.random.default_rng(args.seed).permutation(filtered.num_rows)))
    _write(out / "baseline.jsonl.gz", baseline)
    _write(out / "filtered.jsonl.gz", filtered)
    print(
        f"{len(files)} files, {table.num_rows} docs scored; budget {budget / 1e6:.1f} MB each: "
        f"baseline {baseline.num_rows} docs, filtered {filtered.num_rows} docs (top {args.keep_top_percent}%) "
        f"-> {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
