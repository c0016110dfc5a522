"""A failed or killed ``curate export`` leaves the previous export byte-identical: arguments are checked
before any work, and the new export is written into a staging folder that replaces ``export/`` only once
complete (:func:`curate.io.files.staged_dir`)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from curate.core.errors import PhaseError
from curate.export import exporter
from curate.export.exporter import export_run
from curate.export.formats import parquet
from tests.export.export_fixtures import make_ctx


def _digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path -> sha256): what "byte-identical" compares."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def exported(run_dir, tiny_tokenizer) -> tuple[Path, dict[str, str]]:
    """A run with a finished export in parquet, megatron and memmap, and the digests of its files."""
    section = {"tokenizer": str(tiny_tokenizer), "formats": ["parquet", "megatron", "memmap"]}
    export_run(make_ctx(run_dir, section), make_ctx(run_dir, section).section)
    before = _digests(run_dir / "export")
    assert {"manifest.json", "README.md", "tokenizer.json"} <= set(before)
    assert any(k.startswith("megatron/") for k in before)
    assert any(k.startswith("memmap/") for k in before)
    return run_dir, before


def _leftovers(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if p.name.startswith(".export"))


def test_an_unknown_mixture_source_is_refused_before_any_work_and_lists_the_sources(exported, tiny_tokenizer):
    run_dir, before = exported
    section = {"tokenizer": str(tiny_tokenizer), "mixture": {"web": 0.5, "reddit": 0.3, "books": 0.2}}
    ctx = make_ctx(run_dir, section)
    with pytest.raises(PhaseError) as e:
        export_run(ctx, ctx.section)
    assert str(e.value) == (
        "export.mixture: no kept document has source 'reddit'; the kept documents' source values are: "
        "books (30 documents), web (30 documents)"
    )
    assert _digests(run_dir / "export") == before
    assert _leftovers(run_dir) == []


def test_an_unknown_column_is_refused_before_tokenizing(exported, tiny_tokenizer, monkeypatch):
    run_dir, before = exported
    monkeypatch.setattr(exporter, "tokenize_parts", _never("tokenize_parts"))
    ctx = make_ctx(run_dir, {"tokenizer": str(tiny_tokenizer), "columns": ["text", "nope_*"]})
    with pytest.raises(PhaseError, match=r"^export: no column matches 'nope_\*'; columns: id, text, source"):
        export_run(ctx, ctx.section)
    assert _digests(run_dir / "export") == before


def _never(name: str):
    def fail(*a, **k):
        raise AssertionError(f"{name} ran: the arguments were not checked before the work")

    return fail


def test_a_failure_midway_leaves_the_previous_export_byte_identical(exported, tiny_tokenizer, monkeypatch):
    """Tokenization done, token shards written, then the Parquet writer fails: nothing of the old export
    is lost, and no staging folder is left behind."""
    run_dir, before = exported

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(parquet, "write_parquet_split", broken)
    section = {"tokenizer": str(tiny_tokenizer), "formats": ["parquet", "megatron"], "seed": 11}
    ctx = make_ctx(run_dir, section)
    with pytest.raises(OSError, match="disk full"):
        export_run(ctx, ctx.section)
    assert _digests(run_dir / "export") == before
    assert _leftovers(run_dir) == []


def test_a_successful_export_replaces_the_old_one_and_keeps_files_it_does_not_own(exported, tiny_tokenizer):
    run_dir, before = exported
    (run_dir / "export" / "NOTES.txt").write_text("the team's own notes")
    ctx = make_ctx(run_dir, {"formats": ["parquet"], "seed": 11})
    summary = export_run(ctx, ctx.section)
    after = _digests(run_dir / "export")
    assert summary["formats"] == ["parquet"]
    assert not summary["resumed"]
    assert not any(k.startswith(("megatron/", "memmap/")) for k in after)  # exactly the formats asked for
    assert (run_dir / "export" / "NOTES.txt").read_text() == "the team's own notes"
    assert after["manifest.json"] != before["manifest.json"]
    assert exporter.verify_export(run_dir / "export") == []
    assert _leftovers(run_dir) == []


KILLED = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from curate.export import exporter
    from curate.export.formats import parquet
    from tests.export.export_fixtures import make_ctx

    run_dir, signal_file = Path(sys.argv[1]), Path(sys.argv[2])

    def hang(*a, **k):  # the token shards are written by now; wait here to be killed
        signal_file.write_text("writing")
        time.sleep(600)

    parquet.write_parquet_split = hang
    ctx = make_ctx(run_dir, {"tokenizer": sys.argv[3], "seed": 5})
    exporter.export_run(ctx, ctx.section)
    """
)


def test_a_killed_export_leaves_the_previous_one_and_the_next_export_cleans_up(
    exported, tiny_tokenizer, tmp_path
):
    """SIGKILL in the middle (no handler runs): the old export is intact; the staging folder the dead
    process left is removed by the next export, which then completes."""
    run_dir, before = exported
    flag = tmp_path / "writing"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(run_dir), str(flag), str(tiny_tokenizer)],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert proc.poll() is None, "the export subprocess ended before it was killed"
            assert time.monotonic() < deadline, "the export subprocess never reached its writers"
            time.sleep(0.1)
        staging = [p for p in _leftovers(run_dir) if p.startswith(".export.tmp")]
        assert len(staging) == 1  # the new export was being written beside the old one
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _digests(run_dir / "export") == before
    ctx = make_ctx(run_dir, {"tokenizer": str(tiny_tokenizer), "seed": 5})
    export_run(ctx, ctx.section)
    assert _leftovers(run_dir) == []
    assert exporter.verify_export(run_dir / "export") == []


def test_a_swap_interrupted_between_its_renames_is_undone(exported, tiny_tokenizer):
    """A process killed after moving the old export aside and before moving the new one in: the next
    export puts the old one back before deciding anything (here: it is complete, so it is reused)."""
    run_dir, before = exported
    aside = run_dir / ".export.old.tmp99999999"
    os.replace(run_dir / "export", aside)
    section = {"tokenizer": str(tiny_tokenizer), "formats": ["parquet", "megatron", "memmap"]}
    ctx = make_ctx(run_dir, section)
    assert export_run(ctx, ctx.section)["resumed"] is True
    assert _digests(run_dir / "export") == before
    assert _leftovers(run_dir) == []
