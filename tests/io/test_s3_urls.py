"""Verbs on an ``s3://`` run directory print the URL, never the local mirror they work in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.cli import main
from curate.io.stage import show_url, stage_dir

LONG = " ".join(["the quick brown fox jumps over the lazy dog and then it runs home"] * 8)


def test_show_url_names_the_bucket() -> None:
    url = "s3://bucket/runs/web"
    assert (
        show_url(f"report: {stage_dir(url)}/report.html", url) == "report: s3://bucket/runs/web/report.html"
    )
    assert show_url("nothing local here", url) == "nothing local here"


def test_verbs_on_a_bucket_print_urls(s3, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"{LONG} {i}"}) + "\n" for i in range(4))
    )
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: u\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl}}\nstages:\n  - dedup: exact_dedup_v1\n"
    )
    out = f"s3://{s3.bucket}/run"
    local = str(stage_dir(out))
    assert main(["run", str(pipe), "--engine", "inline", "--output", out, "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"run u -> {out}\n")
    assert printed.rstrip().endswith(f"report: {out}/report.html")
    assert local not in printed
    assert main(["report", out]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out}/report.html\n        {out}/report.md\n" in printed
    assert local not in printed
    assert main(["inspect", out, "--n", "1"]) == 0
    assert local not in capsys.readouterr().out


def test_a_missing_run_in_a_bucket_is_named_by_its_url(s3, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    missing = f"s3://{s3.bucket}/missing"
    assert main(["inspect", missing]) == 2
    assert capsys.readouterr().err == (
        f"curate inspect: error: {missing}: no run here (no manifest.json); give a run directory\n"
    )


@pytest.mark.parametrize("verb", ["report", "export"])
def test_missing_run_by_url(s3, tmp_path: Path, monkeypatch, capsys, verb) -> None:
    monkeypatch.setenv("CURATE_STAGE", str(tmp_path / "stage"))
    missing = f"s3://{s3.bucket}/none"
    assert main([verb, missing]) == 2
    assert str(stage_dir(missing)) not in capsys.readouterr().err
