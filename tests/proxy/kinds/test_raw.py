"""``from: raw``: every valid input row; it takes no selection, and curation cost never counts against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.core.errors import PhaseError
from curate.proxy.kinds import RunFiles
from curate.proxy.kinds.raw import Raw
from curate.proxy.spec.config import parse


def test_raw_reads_kept_and_every_rejected_row_and_takes_no_selection(tmp_path):
    files = RunFiles([Path("k0.parquet"), Path("k1.parquet")], [Path("r0.parquet")])
    jobs = Raw("raw").file_jobs(parse({}), files, tmp_path, {"tokenizer": "t"})
    assert [(Path(j.src).name, Path(j.out).name, j.rejected, j.only_stages, j.rules) for j in jobs] == [
        ("k0.parquet", "kept-00000", False, None, []),
        ("k1.parquet", "kept-00001", False, None, []),
        ("r0.parquet", "rejected-00000", True, None, []),
    ]
    assert Raw.CURATED is False
    assert Raw.ROLE == "recipe"
    with pytest.raises(
        PhaseError,
        match=r"^proxy.recipes.r.select: applies to from: kept only \(from: raw is every valid input document\)$",
    ):
        parse({"recipes": {"r": {"from": "raw", "select": [{"column": "x", "min": 1}]}}})


def test_an_unknown_kind_lists_the_kinds_a_pipeline_may_name():
    with pytest.raises(
        PhaseError, match=r"^proxy.recipes.x.from: expected one of 'kept', 'raw', 'sample', got 'null'$"
    ):
        parse({"recipes": {"raw": {"from": "raw"}, "x": {"from": "null"}}})
