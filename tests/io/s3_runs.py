"""Small runs for the object-storage tests: input files with duplicates and bad lines, a pipeline over
them, and reading a JSON object back from the bucket."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def write_inputs(d: Path, n_files: int = 3, n_docs: int = 40) -> None:
    """jsonl files (one gzipped) with duplicates across files, a malformed line and an empty text."""
    d.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [
            json.dumps(
                {"id": f"f{f}-{i}", "text": f"Doc {i % 9} says  {'hello' if i % 2 else 'world'} {f % 2}."}
            )
            for i in range(n_docs)
        ]
        lines += ["{broken", json.dumps({"id": f"f{f}-empty", "text": " \x00 "})]
        data = ("\n".join(lines) + "\n").encode()
        if f == 0:
            (d / f"in-{f}.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))
        else:
            (d / f"in-{f}.jsonl").write_bytes(data)


def pipeline(inp: str, extra: str = "") -> str:
    return f"""\
name: s3t
input: {{path: '{inp}', format: jsonl, batch_docs: 16}}
stages:
  - transform: normalize_v1
  - select:
      - {{column: text, equals: "Doc 1 says hello 1.", reason: not_doc1}}
  - dedup: exact_dedup_v1
{extra}"""


def s3_json(s3, key: str) -> dict:
    return json.loads(s3.fs.cat_file(f"{s3.bucket}/{key}"))
