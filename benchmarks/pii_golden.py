"""sha256 of pii_v1's outputs (text and count columns; redact and reject mode) on the labelled sets and
``clean/python_docs``, to check that a speed change leaves them identical:

    PYTHONPATH=<checkout> python benchmarks/pii_golden.py > bench-out/pii/golden-<name>.json

Run it with the checkout before and after the change on ``PYTHONPATH`` and compare the two files. Sets:
``planted`` (held-out: documents 600-1,199, seed 1), ``original`` (the same before planting), ``dev``
(documents 0-599, seed 0), ``python_docs`` (every document).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from curate.filters.pii import Pii, PiiParams  # noqa: E402  (the curate of PYTHONPATH)

FILES = ("web/c4_en.jsonl.gz", "web/webtext.jsonl.gz", "web/news.jsonl.gz")


def main() -> int:
    import pii_labelled
    from bench_pii import load

    held_out = pii_labelled.build([d for f in FILES for d in load(f, 600, 600)], seed=1)
    dev = pii_labelled.build([d for f in FILES for d in load(f, 600, 0)], seed=0)
    sets = {
        "planted": [d.text for d in held_out],
        "original": [d.original for d in held_out],
        "dev": [d.text for d in dev],
        "python_docs": [t for _, t in load("clean/python_docs.jsonl.gz", None)],
    }
    out = {}
    for name, texts in sets.items():
        table = pa.table(
            {"id": [str(i) for i in range(len(texts))], "text": texts, "source": ["b"] * len(texts)}
        )
        for mode in ("redact", "reject"):
            t = Pii(PiiParams(mode=mode)).process(table)
            cols = {c: t.column(c).to_pylist() for c in t.column_names if c not in ("id", "source")}
            out[f"{name}/{mode}"] = hashlib.sha256(json.dumps(cols, sort_keys=True).encode()).hexdigest()
    print(f"# {sys.modules['curate.filters.pii'].__file__}", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
