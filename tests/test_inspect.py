"""``curate inspect``: short reasons and prefixes, a seeded random sample across sources, the deciding score."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from curate.cli import main
from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from curate.verbs.summary import inspect_run

LONG = " ".join(["the cat sat on the mat and the dog ran to the park with the ball."] * 5)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("insp")
    rows = []
    for i in range(40):
        src = "books" if i % 2 else "web"
        text = f"short doc {i} from {src}" if i % 4 < 2 else f"{LONG} number {i}"
        rows.append({"id": f"d{i}", "text": text, "source": src})
    (d / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    cfg = parse_pipeline(
        f"name: i\ninput: {{path: {d}/a.jsonl, format: jsonl}}\nstages:\n  - filter: gopher_quality_v1\n"
    )
    run_pipeline(cfg, d / "run", engine=InlineEngine(), phases=False)
    return d / "run"


def _ids(text: str, section: str) -> list[str]:
    block = text.split(f"== {section}")[1].split("\n== ")[0]
    return re.findall(r"^  \[(\S+)\]", block, re.M)


def test_short_reason_equals_the_full_one_and_shows_the_deciding_score(run: Path) -> None:
    short = inspect_run(run, reason="short_doc", n=3)
    assert short == inspect_run(run, reason="gopher_quality_v1:short_doc", n=3)
    assert "== gopher_quality_v1:short_doc  (20 documents)" in short
    lines = [ln for ln in short.splitlines() if ln.startswith("  [")]
    assert len(lines) == 3
    for ln in lines:  # "short doc 12 from web": 5 words, under gopher's 50
        assert re.fullmatch(r"  \[d\d+\] source=(web|books)  gopher_quality_v1.word_count=5", ln), ln
    assert "== kept" not in short


def test_prefixes_quarantine_and_kept(run: Path) -> None:
    stage = inspect_run(run, reason="gopher_quality_v1", n=1)
    assert "== gopher_quality_v1:short_doc  (20 documents)" in stage
    assert "quarantine" not in stage.split("\n\n", 1)[1]
    q = inspect_run(run, reason="quarantine", n=5)
    assert "== quarantine:malformed_json  (1 documents)" in q
    assert "detail=" in q
    kept = inspect_run(run, reason="kept", n=4)
    assert "== kept  (20 documents)" in kept
    assert "== gopher_quality_v1" not in kept
    assert len(_ids(kept, "kept")) == 4


def test_samples_are_seeded_random_and_spread_over_sources(run: Path) -> None:
    a = _ids(inspect_run(run, reason="short_doc", n=4, seed=0), "gopher_quality_v1:short_doc")
    assert a == _ids(inspect_run(run, reason="short_doc", n=4, seed=0), "gopher_quality_v1:short_doc")
    b = _ids(inspect_run(run, reason="short_doc", n=4, seed=1), "gopher_quality_v1:short_doc")
    assert a != b
    # Even ids are from web, odd from books: a sample of 4 takes 2 from each source.
    assert sorted(int(i[1:]) % 2 for i in a) == [0, 0, 1, 1]
    assert a != ["d0", "d1", "d4", "d5"]  # not the first rows of the file


def test_unknown_reason_lists_reasons_and_stages(run: Path, capsys) -> None:
    assert main(["inspect", str(run), "--reason", "too_short"]) == 2
    assert capsys.readouterr().err == (
        "curate inspect: error: no documents were removed with reason 'too_short'; give a reason "
        "(malformed_json, short_doc), a stage (gopher_quality_v1, quarantine) or kept\n"
    )
