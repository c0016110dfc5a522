"""Builders and constants shared by the test packages: small tables, the real corpora, a tiny jsonl run.

A plain module, imported as ``from tests.helpers import ...``; fixtures stay in the ``conftest.py`` files
(pytest finds those by itself, and a test never imports a conftest or another test file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"

# A secret that must never appear in a manifest, a log or any file a run writes (tests/io/test_object_storage.py).
S3_KEY_ID = "AKIACURATETESTKEY0001"
S3_SECRET = "curate-test-secret-Zq8vN3xK"


def corpora_path(*parts: str) -> Path:
    """A file under ../shared/corpora; the calling test is skipped, with the reason, when it is absent."""
    p = CORPORA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"needs {p} (../shared/corpora is absent on this machine)")
    return p


def make_table(texts: list[str], ids: list[str] | None = None, source: str = "test") -> pa.Table:
    """A batch with the base columns, as readers produce it."""
    ids = ids or [f"d{i}" for i in range(len(texts))]
    return pa.table({"id": ids, "text": texts, "source": [source] * len(texts)})


def write_inputs(d: Path, n_files: int = 3, n_docs: int = 40) -> None:
    """``n_files`` jsonl files of ``n_docs`` documents ("Doc <i % 7> from file <f % 2>", messy whitespace, so
    many duplicates), each file ending with a malformed line and a document that normalizes to nothing."""
    d.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [
            json.dumps({"id": f"f{f}-{i}", "text": f"Doc {i % 7}  from\tfile {f % 2}.\r\n\r\n\r\nEnd."})
            for i in range(n_docs)
        ]
        lines += ["{broken", json.dumps({"id": f"f{f}-empty", "text": " \x00 "})]
        (d / f"in-{f}.jsonl").write_text("\n".join(lines) + "\n")


def pipeline(d: Path, extra: str = "") -> str:
    """The pipeline YAML over :func:`write_inputs`' files: normalize, then keep only "Doc 1 from file 0";
    ``extra`` is appended to the stage list."""
    return f"""\
name: t
input: {{path: {d}/*.jsonl, format: jsonl, batch_docs: 16}}
stages:
  - transform: normalize_v1
  - select:
      - {{column: text, equals: "Doc 1 from file 0.\\n\\nEnd.", reason: not_doc1}}
{extra}"""


def slow_main(seconds: float) -> str:
    """A ``python slow_main.py ARGS`` script: the curate CLI with a test-only transform
    ``sleepy_test_v1`` that sleeps ``seconds`` per part, so that a run can be killed mid-way."""
    return f"""
import sys, time
from curate.core.registry import STAGES
from curate.core.stage import Transform

@STAGES.add("sleepy_test_v1")
class Sleepy(Transform):
    '''Test-only: a slow transform so that the run can be killed mid-way.'''
    def process(self, table):
        time.sleep({seconds})
        return table

from curate.cli import main
sys.exit(main(sys.argv[1:]))
"""
