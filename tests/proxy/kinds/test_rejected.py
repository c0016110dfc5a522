"""The ``rejected`` control: every non-quarantined rejected row; skipped, with its reason, when too few."""

from __future__ import annotations

from pathlib import Path

from curate.proxy.kinds import RunFiles
from curate.proxy.kinds.rejected import Rejected
from curate.proxy.spec.config import parse


def test_rejected_reads_only_rejected_rows_and_says_when_there_are_too_few(tmp_path):
    files = RunFiles([Path("k0.parquet")], [Path("r0.parquet"), Path("r1.parquet")])
    r = Rejected("rejected")
    jobs = r.file_jobs(parse({}), files, tmp_path, {"tokenizer": "t"})
    assert [(Path(j.src).name, j.rejected, j.only_stages) for j in jobs] == [
        ("r0.parquet", True, None),
        ("r1.parquet", True, None),
    ]
    assert (
        r.skip_reason({"rejected": {"tokens": 10}}, 129) == "only 10 tokens of rejected (non-quarantine) data"
    )
    assert r.skip_reason({"rejected": {"tokens": 130}}, 129) is None
    assert Rejected.ROLE == "control"
