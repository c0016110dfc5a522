"""The export formats behind one interface: each module of ``curate/export/formats`` registers one
writer, every list of formats (options, defaults, the CLI's choices, the files an export owns) comes
from that registry, and a format registered like the built-ins is written, listed, verified and
replaced with no other edit."""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.core.registry import RegistryError
from curate.export import cli, formats
from curate.export.exporter import export_run, verify_export
from curate.export.formats.base import WRITERS, Entry, TextSplits, TextWriter, TokenShard, TokenWriter
from curate.export.options import ExportOptions
from curate.export.plan import TokenStore
from tests.export.export_fixtures import kept_rows, make_ctx

FORMATS_DIR = Path(formats.__file__).parent


def test_each_module_registers_one_format_and_the_lists_come_from_the_registry() -> None:
    registered = {}
    for path in sorted(FORMATS_DIR.glob("*.py")):
        if path.stem in ("__init__", "base"):
            continue
        calls = [
            node.args[0].value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "add"
            and getattr(node.func.value, "id", None) == "WRITERS"
        ]
        assert len(calls) == 1, f"{path.name} registers {calls}"
        registered[calls[0]] = path.stem
    assert registered == {
        "parquet": "parquet",
        "megatron": "megatron",
        "memmap": "memmap",
        "hf_disk": "hf_disk",
    }
    assert formats.names() == ("parquet", "megatron", "memmap", "hf_disk")
    assert formats.names(tokens=True) == ("megatron", "memmap")
    assert formats.names(tokens=False) == ("parquet", "hf_disk")
    assert formats.defaults(tokenizer=True) == ("parquet", "megatron", "memmap")
    assert formats.defaults(tokenizer=False) == ("parquet",)
    assert formats.owned() == ("parquet", "README.md", "megatron", "memmap", "hf_disk")
    assert [type(w).__module__ for w in formats.writers(["hf_disk", "memmap"])] == [
        "curate.export.formats.memmap",
        "curate.export.formats.hf_disk",
    ]


def test_an_unknown_format_lists_the_known_ones() -> None:
    with pytest.raises(RegistryError) as e:
        formats.writers(["parquet", "arrow"])
    assert (
        str(e.value)
        == "unknown export format 'arrow'; valid export formats: hf_disk, megatron, memmap, parquet"
    )
    with pytest.raises(PhaseError) as e2:
        ExportOptions.from_section({"formats": ["arrow"]})
    assert str(e2.value) == (
        "export.formats[0]: expected one of 'parquet', 'megatron', 'memmap', 'hf_disk', got 'arrow'"
    )


# -- a format added the way docs/adding-a-format.md adds one --------------------------------------------
class LinesWriter(TextWriter):
    """``lines/<split>.txt``: one JSON string per line, each document's text (a toy text format)."""

    name = "lines"
    owns = ("lines",)

    def write(self, text: TextSplits, out: Path, opts: ExportOptions) -> list[Entry]:
        (out / "lines").mkdir()
        entries = []
        for split, table in text.splits.items():
            path = out / "lines" / f"{split}.txt"
            path.write_text("".join(json.dumps(t) + "\n" for t in table.column("text").to_pylist()))
            entries.append(
                {"path": f"lines/{split}.txt", "format": "lines", "split": split, "docs": table.num_rows}
            )
        return entries

    def card_note(self, tokenizer: dict | None) -> str:
        return "\nLines: `lines/train.txt` holds one JSON string per document.\n"


class CountsWriter(TokenWriter):
    """``counts/<split>_<shard>.npy``: each document's token count (a toy token format)."""

    name = "counts"
    owns = ("counts",)

    def write(self, shard: TokenShard, out: Path, opts: ExportOptions) -> list[Entry]:
        (out / "counts").mkdir(exist_ok=True)
        rel = f"counts/{shard.prefix}.npy"
        np.save(out / rel, shard.lengths)
        return [shard.entry(rel, "counts")]


@pytest.fixture
def toy_formats(monkeypatch):
    """The two toy writers registered for one test (the registry is left as it was afterwards)."""
    monkeypatch.setitem(WRITERS._items, "lines", LinesWriter)
    monkeypatch.setitem(WRITERS._items, "counts", CountsWriter)


def test_a_registered_format_is_written_listed_verified_and_replaced(
    toy_formats, run_dir, tiny_tokenizer, monkeypatch
) -> None:
    assert formats.names() == ("parquet", "megatron", "memmap", "hf_disk", "lines", "counts")
    assert formats.owned()[-2:] == ("lines", "counts")
    p = argparse.ArgumentParser(prog="curate")
    cli.register(p.add_subparsers(dest="command", required=True))
    assert p.parse_args(["export", "RUN", "--format", "lines"]).formats == ["lines"]

    gathered = []
    gather = TokenStore.gather
    monkeypatch.setattr(
        TokenStore, "gather", lambda self, docs: gathered.append(docs.size) or gather(self, docs)
    )
    section = {"formats": ["lines", "parquet", "counts", "megatron"], "tokenizer": str(tiny_tokenizer)}
    ctx = make_ctx(run_dir, {**section, "shard_tokens": 400})
    export_run(ctx, ctx.section)
    out = run_dir / "export"
    assert verify_export(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    shards = [f for f in manifest["files"] if f["format"] == "megatron" and f["path"].endswith(".bin")]
    assert len(gathered) == len(shards) > 1  # each token shard gathered once for both token formats

    # the toy formats hold the same documents in the same order as Parquet and Megatron
    rows = [
        r for f in sorted((out / "parquet").glob("train-*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    lines = [json.loads(x) for x in (out / "lines" / "train.txt").read_text().splitlines()]
    assert lines == [r["text"] for r in rows]
    assert len(lines) == manifest["splits"]["train"]["docs"]
    counts = np.concatenate([np.load(f) for f in sorted((out / "counts").glob("train_*.npy"))])
    assert counts.sum() == manifest["splits"]["train"]["tokens"]
    assert counts.size == len(lines)
    assert "Lines: `lines/train.txt` holds one JSON string per document." in (out / "README.md").read_text()
    assert {f["format"] for f in manifest["files"]} == {
        "lines",
        "parquet",
        "card",
        "counts",
        "megatron",
        "tokenizer",
    }

    # a later export with other formats replaces the toy folders: they are the formats' own
    ctx = make_ctx(run_dir, {"formats": ["parquet"]})
    export_run(ctx, ctx.section)
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "manifest.json", "parquet"]
    assert len(kept_rows(run_dir)) == sum(
        pq.read_metadata(f).num_rows for f in (out / "parquet").glob("*.parquet")
    )


def test_a_registered_token_format_needs_a_tokenizer(toy_formats) -> None:
    with pytest.raises(
        PhaseError, match=r"^export.tokenizer: formats counts need the tokenizer your trainer uses"
    ):
        ExportOptions.from_section({"formats": ["parquet", "counts"]})
