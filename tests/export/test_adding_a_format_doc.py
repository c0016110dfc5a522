"""docs/adding-a-format.md runs as written: its writer registers a new format with no other edit, and its
test passes against it."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from curate.export import formats
from curate.export.formats.base import WRITERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-format.md"


def test_the_documented_writer_and_its_test_run_as_written(run_dir, monkeypatch):
    writer_code, test_code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert "jsonl" not in formats.names()
    monkeypatch.setattr(WRITERS, "_items", dict(WRITERS._items))  # the registration is undone afterwards
    module = types.ModuleType("curate.export.formats.jsonl")  # as the package would import the file
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(writer_code, f"{DOC}: the writer", "exec"), module.__dict__)
    assert formats.names() == ("parquet", "megatron", "memmap", "hf_disk", "jsonl")
    assert formats.owned()[-1] == "jsonl"
    namespace: dict = {}
    exec(compile(test_code, f"{DOC}: the test", "exec"), namespace)
    namespace["test_jsonl_holds_the_parquet_rows_in_order"](run_dir)
