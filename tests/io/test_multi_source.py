"""Several sources in one run: ``input:`` as a list (Parquet, a Hugging Face folder, JSONL)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.engine import InlineEngine
from curate.core.errors import ConfigError
from curate.io.multi import MultiSource
from curate.pipeline.config import build_source, parse_pipeline
from curate.runtime.runner import run_pipeline

SHARED = "A document that two sources both hold, word for word, and that only one of them may keep."


def _doc(source: str, i: int) -> str:
    return f"Document {i} of the {source} source speaks of its own topic number {i} at some length."


def _make_inputs(root: Path) -> None:
    """Parquet (4 rows, text in ``content``, one of them SHARED), an HF folder (3 rows, one of them
    SHARED), JSONL (3 lines, one empty text)."""
    root.mkdir()
    contents = [_doc("pq", i) for i in range(3)] + [SHARED]
    pq.write_table(pa.table({"content": contents, "url": [f"u{i}" for i in range(4)]}), root / "a.parquet")
    import datasets

    ds = datasets.Dataset.from_dict({"text": [SHARED, _doc("hf", 1), _doc("hf", 2)], "id": ["x", "y", "z"]})
    ds.save_to_disk(str(root / "hfdata"))
    lines = [{"text": _doc("js", 0)}, {"text": _doc("js", 1)}, {"text": "   "}]
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def _pipeline(root: Path, stages: str = "  - dedup: exact_dedup_v1\n") -> str:
    return f"""
name: three
input:
  - {{name: pq, format: parquet, path: {root / "a.parquet"}, text_field: content}}
  - {{name: hf, format: hf, path: {root / "hfdata"}}}
  - {{name: js, format: jsonl, path: {root / "c.jsonl"}}}
engine: {{kind: inline}}
stages:
{stages}"""


def test_three_sources_dedup_across_and_count_by_source(tmp_path: Path) -> None:
    _make_inputs(tmp_path / "in")
    cfg = parse_pipeline(_pipeline(tmp_path / "in"))
    m = run_pipeline(cfg, tmp_path / "run", engine=InlineEngine(), phases=False)
    assert m["accounting"] == {"input": 10, "kept": 8, "rejected": 1, "quarantined": 1, "balanced": True}
    by = m["by_source"]
    assert {k: (v["input"], v["kept"], v["rejected"], v["quarantined"]) for k, v in by.items()} == {
        "hf": (3, 2, 1, 0),  # SHARED: parquet is first in the list, so the parquet copy survives
        "js": (3, 2, 0, 1),
        "pq": (4, 4, 0, 0),
    }
    assert by["hf"]["by_stage"] == {"exact_dedup_v1": 1}
    assert by["js"]["by_stage"] == {"read": 1}
    words = len(SHARED.split())
    assert by["hf"]["tokens_rejected"] == words
    assert by["pq"]["tokens_kept"] == 3 * len(_doc("pq", 0).split()) + words
    # the same tokens the funnel counted as it ran
    assert sum(e["tokens_kept"] for e in by.values()) == m["stages"][-1]["tokens_out"]
    assert m["input"]["sources"] == [
        {"name": "pq", "format": "parquet"},
        {"name": "hf", "format": "hf"},
        {"name": "js", "format": "jsonl"},
    ]
    kept = pq.read_table(tmp_path / "run" / "kept").sort_by("id")
    pq_ids = [f"pq/a.parquet:{i}" for i in range(4)]
    assert kept.column("id").to_pylist() == ["hf/y", "hf/z", "js/c.jsonl:1", "js/c.jsonl:2", *pq_ids]
    assert kept.column("url").to_pylist() == [None, None, None, None, "u0", "u1", "u2", "u3"]
    rejected = pq.read_table(tmp_path / "run" / "rejected").sort_by("id")
    assert rejected.column("id").to_pylist() == ["hf/x", "js/c.jsonl:3"]
    assert rejected.column("reason").to_pylist() == ["exact_dedup_v1:duplicate", "quarantine:empty_text"]


def test_select_by_source(tmp_path: Path) -> None:
    _make_inputs(tmp_path / "in")
    stages = "  - select: [{column: source, equals: hf}]\n"
    m = run_pipeline(
        parse_pipeline(_pipeline(tmp_path / "in", stages)),
        tmp_path / "run",
        engine=InlineEngine(),
        phases=False,
    )
    assert {k: v["kept"] for k, v in m["by_source"].items()} == {"hf": 3, "js": 0, "pq": 0}
    assert m["by_source"]["pq"]["by_stage"] == {"select": 4}
    assert m["removed_by_reason"]["select:source!=hf"] == 6


def test_single_mapping_fingerprint_unchanged() -> None:
    """A one-source pipeline is read as before: its fingerprint is the hash of the mapping as written."""
    text = "name: one\ninput: {path: /data/x.jsonl, format: jsonl}\nstages: []\n"
    cfg = parse_pipeline(text)
    assert cfg.fingerprint() == "8a5fdc98acf2c3a5"  # as computed before lists were accepted
    assert isinstance(cfg.input, dict)
    assert cfg.input["format"] == "jsonl"


def test_shards_numbered_across_sources(tmp_path: Path) -> None:
    _make_inputs(tmp_path / "in")
    src = build_source(parse_pipeline(_pipeline(tmp_path / "in")))
    assert isinstance(src, MultiSource)
    shards = src.shards()
    assert [(s.index, s.key) for s in shards] == [(0, "pq/a.parquet"), (1, "hf/hfdata"), (2, "js/c.jsonl")]
    assert [src.may_hold(s, "hf") for s in shards] == [False, True, False]
    assert [f["source"] for f in src.fingerprint()] == ["pq", "hf", "js"]


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        ("[]", "<string>:3: input: expected at least one source"),
        (
            "[{path: a.jsonl, format: jsonl}]",
            "<string>:3: input[0]: expected a mapping with 'name' and 'format'",
        ),
        (
            "[{name: a b, path: a.jsonl, format: jsonl}]",
            "<string>:3: input[0].name: expected a name of letters, digits",
        ),
        (
            "[{name: a, path: a.jsonl, format: jsonl}, {name: a, path: b.jsonl, format: jsonl}]",
            "<string>:3: input[1].name: 'a' is already input[0]'s name; give each source its own",
        ),
        (
            "[{name: a, path: a.jsonl, format: jsonl, txt_field: x}]",
            "<string>:3: input[0].txt_field: unknown parameter",
        ),
    ],
)
def test_list_input_errors(inp: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_pipeline(f"name: bad\n\ninput: {inp}\nstages: []\n")
    assert str(e.value).startswith(message), str(e.value)


def test_report_and_summary_tables_by_source(tmp_path: Path) -> None:
    from curate.report import sources
    from curate.verbs.summary import format_run_summary

    _make_inputs(tmp_path / "in")
    m = run_pipeline(
        parse_pipeline(_pipeline(tmp_path / "in")), tmp_path / "run", engine=InlineEngine(), phases=False
    )
    assert sources.source_rows(m)[0] == ["hf", "3", "2", "1", "0", "32", "18", "24.6%"]
    assert sources.source_rows(m)[-1] == ["all", "10", "8", "1", "1", "130", "18", "100.0%"]
    md = "\n".join(sources.markdown(m))
    assert "| js | 3 | 2 | 0 | 1 | 32 | 0 | 24.6% |" in md
    assert "removed by stage: hf: exact_dedup_v1 1; js: read 1." in md
    assert '<tr data-source="pq"><td class="l">pq</td><td>4</td><td>4</td>' in sources.html(m)
    summary = format_run_summary(m, tmp_path / "run")
    assert "source  docs in  kept  rejected  quarantined  tokens kept" in summary
    assert sources.source_rows({"accounting": {}}) == []


def test_recipe_selects_by_source(tmp_path: Path) -> None:
    """A proxy recipe's ``select`` rule on ``source`` keeps one source's kept rows (the proxy's shard
    selection, on the kept/ files of a several-source run)."""
    from curate.instrument.shards import ShardJob, select_rows
    from curate.proxy.spec.entries import parse_recipes

    _make_inputs(tmp_path / "in")
    run_pipeline(
        parse_pipeline(_pipeline(tmp_path / "in")), tmp_path / "run", engine=InlineEngine(), phases=False
    )
    (recipe,) = parse_recipes({"js_only": {"from": "kept", "select": [{"column": "source", "equals": "js"}]}})
    kept = pq.read_table(tmp_path / "run" / "kept")
    job = ShardJob(src="", out="", tokenizer="", rules=recipe.rules())
    rows, dropped, _ = select_rows(kept, job)
    assert sorted(rows.column("id").to_pylist()) == ["js/c.jsonl:1", "js/c.jsonl:2"]
    assert dropped == 0


def test_minhash_finds_near_copies_across_sources(tmp_path: Path) -> None:
    """A near copy (2 words of 120 changed) in the JSONL source of a Parquet document is removed, and
    the Parquet original (first in the list) survives."""
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(2000)]
    docs = [[rng.choice(vocab) for _ in range(120)] for _ in range(4)]
    copy = list(docs[0])
    copy[10], copy[80] = "changed", "words"
    root = tmp_path / "in"
    root.mkdir()
    pq.write_table(pa.table({"text": [" ".join(d) for d in docs[:3]]}), root / "a.parquet")
    lines = [" ".join(docs[3]), " ".join(copy)]
    (root / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))
    text = f"""
name: near
input:
  - {{name: first, format: parquet, path: {root / "a.parquet"}}}
  - {{name: second, format: jsonl, path: {root / "b.jsonl"}}}
stages:
  - dedup: minhash_dedup_v1
"""
    m = run_pipeline(parse_pipeline(text), tmp_path / "run", engine=InlineEngine(), phases=False)
    assert {k: (v["kept"], v["rejected"]) for k, v in m["by_source"].items()} == {
        "first": (3, 0),
        "second": (1, 1),
    }
    rejected = pq.read_table(tmp_path / "run" / "rejected")
    assert rejected.column("id").to_pylist() == ["second/b.jsonl:2"]
    assert rejected.column("reason").to_pylist() == ["minhash_dedup_v1:near_duplicate"]
    assert rejected.column("duplicate_of").to_pylist() == ["first/a.parquet:0"]


def test_readme_example_parses() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "own-data.md").read_text()
    block = readme.split("```yaml\nname: three_sources\n", 1)[1].split("```", 1)[0]
    cfg = parse_pipeline("name: three_sources\n" + block)
    assert [(p.name, p.format) for p in cfg.source_params.parts] == [
        ("forum", "parquet"),
        ("books", "hf"),
        ("web", "jsonl"),
    ]
    assert [p.params.text_field for p in cfg.source_params.parts] == ["content", "text", "text"]
    assert cfg.source_params.parts[2].params.id_field == "doc_id"
