"""docs/export.md's read-back snippet runs as written on a gpt2 export: Megatron document i = memmap
document i = Parquet row i, each the row's GPT-2 ids and one EOS."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.export.export_fixtures import TEXTS, kept_rows, make_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "export.md"


def test_the_documented_read_back_runs_and_document_i_is_row_i(tmp_path):
    from tokenizers import Tokenizer

    from curate.cli import main
    from curate.export.formats.megatron import read_megatron
    from curate.io import named_tokenizers

    # small shards, so that the order must hold across several Megatron and Parquet files
    run_dir = make_run(
        tmp_path / "run", TEXTS, config={"name": "t", "export": {"seed": 3, "parquet_shard_rows": 20}}
    )
    assert (
        main(
            ["export", str(run_dir), "--tokenizer", "gpt2", "--shard-tokens", "300", "--val-fraction", "0.1"]
        )
        == 0
    )
    export = run_dir / "export"
    assert len(list((export / "megatron").glob("train_*.idx"))) >= 3
    assert len(list((export / "parquet").glob("train-*.parquet"))) == 3  # 54 rows, 20 a shard

    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    code = code.replace('Path("runs/demo/export")', f"Path({str(export)!r})")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout == "train: 54 documents, Megatron document i = memmap document i = Parquet row i\n"

    # and the same, checked here against the tokenizer itself: ids of row i + EOS
    gpt2 = Tokenizer.from_str(named_tokenizers.gpt2().json_text)
    rows = [
        t
        for f in sorted((export / "parquet").glob("train-*.parquet"))
        for t in pq.read_table(f).column("text").to_pylist()
    ]
    docs = [
        meg.document(i).tolist()
        for idx in sorted((export / "megatron").glob("train_*.idx"))
        for meg in [read_megatron(idx.with_suffix(""))]
        for i in range(len(meg))
    ]
    assert [d[:-1] for d in docs] == [gpt2.encode(t).ids for t in rows]
    assert {d[-1] for d in docs} == {50256}
    kept = kept_rows(run_dir).column("text").to_pylist()
    assert len(rows) == 54
    assert set(rows) <= set(kept)
