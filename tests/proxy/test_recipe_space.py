"""pii_v1 and semantic_dedup_v1 in the recipe space of ``curate ablate`` and ``curate search``: on a
tiny real run, the recipes that leave each stage out hold exactly kept/ plus that stage's rejections."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.api import run
from curate.core.errors import PhaseError
from curate.instrument.shards import ShardJob, select_rows
from curate.proxy.design.ablate import _why_skipped, ablation_config, removed_by_stage, run_ablation
from curate.proxy.spec.config import ProxyConfigError, parse
from curate.proxy.spec.search import candidate_recipe, parse_search
from curate.runtime.context import RunContext, load_manifest

BASE = (
    "The harbour town was rebuilt after the great fire of 1842. Merchants paid for new stone warehouses "
    "along the quay, and the council widened the streets so carts could pass. Within ten years the port "
    "handled twice the cargo it had before the disaster."
)
REORDERED = (  # the same sentences in another order: a semantic duplicate of BASE
    "Within ten years the port handled twice the cargo it had before the disaster. The harbour town was "
    "rebuilt after the great fire of 1842. Merchants paid for new stone warehouses along the quay, and "
    "the council widened the streets so carts could pass."
)
DOCS = {
    "d0": "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the leaves of plants.",
    "d1": BASE,
    "d2": "Write to jane.doe@example.com for the minutes of the meeting about the new library building.",
    "d3": REORDERED,
    "d4": "The booking office answers on +44 20 7946 0018 every weekday morning from nine until noon.",
    "d5": "Glaciers carve valleys over thousands of years, leaving moraines of rock and gravel behind.",
}
PIPELINE = """
name: recipe_space
input: {path: docs.jsonl, format: jsonl}
stages:
  - transform: pii_v1
    params: {mode: reject}
  - dedup: semantic_dedup_v1
    params: {threshold: 0.75, clusters: 1}
"""
SEARCH = {"toggle_stages": ["pii_v1", "semantic_dedup_v1"], "product": True}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("space")
    (d / "docs.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    (d / "pipeline.yaml").write_text(PIPELINE)
    run(d / "pipeline.yaml", output=d / "run", engine="inline", phases=False)
    return d / "run"


def ids_of(run_dir: Path, recipe: dict) -> set[str]:
    """The documents a ``from: kept`` recipe trains on (the proxy phase's own row selection)."""
    (r,) = parse({"recipes": {"raw": {"from": "raw"}, "r": recipe}, "baseline": "raw"}).recipes[1:]
    ids: set[str] = set()
    for f in sorted((run_dir / "kept").glob("*.parquet")):
        t, _, _ = select_rows(pq.read_table(f), ShardJob(src=str(f), out="", tokenizer="", rules=r.rules()))
        ids |= set(t.column("id").to_pylist())
    if r.stages_left_out():
        for f in sorted((run_dir / "rejected").glob("*.parquet")):
            job = ShardJob(src=str(f), out="", tokenizer="", rejected=True, only_stages=r.stages_left_out())
            ids |= set(select_rows(pq.read_table(f), job)[0].column("id").to_pylist())
    return ids


KEPT = {"d0", "d1", "d5"}
BY_PII = {"d2", "d4"}  # the e-mail and the phone number
BY_SEMANTIC = {"d3"}  # the reordered copy of d1


def test_the_run_rejects_what_each_stage_should(run_dir) -> None:
    assert removed_by_stage(run_dir, load_manifest(run_dir)) == {"pii_v1": 2, "semantic_dedup_v1": 1}
    assert ids_of(run_dir, {"from": "kept"}) == KEPT


def test_ablation_recipes_add_back_exactly_each_stage_rejections(run_dir) -> None:
    cfg, _, _ = ablation_config(
        parse({"recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}}}),
        ["pii_v1", "semantic_dedup_v1"],
    )
    recipes = {r.name: {"from": r.KIND, "without_stages": r.stages_left_out()} for r in cfg.recipes}
    assert set(recipes) == {"raw", "curated", "without_pii_v1", "without_semantic_dedup_v1"}
    assert ids_of(run_dir, recipes["curated"]) == KEPT
    assert ids_of(run_dir, recipes["without_pii_v1"]) == KEPT | BY_PII
    assert ids_of(run_dir, recipes["without_semantic_dedup_v1"]) == KEPT | BY_SEMANTIC


def test_search_toggles_each_subset_of_the_two_stages(run_dir) -> None:
    spec = parse_search(SEARCH, budget=4096, seeds=[0])
    expected = {
        "search:kept": KEPT,
        "search:-pii_v1": KEPT | BY_PII,
        "search:-semantic_dedup_v1": KEPT | BY_SEMANTIC,
        "search:-pii_v1-semantic_dedup_v1": KEPT | BY_PII | BY_SEMANTIC,
    }
    assert sorted(spec.candidates) == sorted(expected)
    assert {n: ids_of(run_dir, candidate_recipe(spec, n)) for n in spec.candidates} == expected


def test_search_toggles_with_columns_one_at_a_time_and_as_a_product() -> None:
    one = parse_search({"columns": {"x.s": {"min": [1]}}, "toggle_stages": ["a_v1", "b_v1"]}, 4096, [0])
    assert one.candidates == {
        "search:x.s@min=1": [{"column": "x.s", "min": 1.0}],
        "search:kept": [],
        "search:-a_v1": [],
        "search:-b_v1": [],
    }
    assert one.off == {"search:-a_v1": ["a_v1"], "search:-b_v1": ["b_v1"]}
    both = parse_search(
        {
            "columns": {"x.s": {"min": [1]}},
            "toggle_stages": ["a_v1"],
            "without_stages": ["w_v1"],
            "product": True,
        },
        4096,
        [0],
    )
    assert list(both.candidates) == ["search:x.s@min=1", "search:x.s@min=1-a_v1"]
    assert candidate_recipe(both, "search:x.s@min=1-a_v1") == {
        "from": "kept",
        "without_stages": ["w_v1", "a_v1"],
        "select": [{"column": "x.s", "min": 1.0}],
    }
    assert candidate_recipe(both, "search:x.s@min=1")["without_stages"] == ["w_v1"]
    for raw, msg in (
        ({"toggle_stages": "a_v1"}, r"^proxy.search.toggle_stages: expected a list, got str 'a_v1'$"),
        (
            {"toggle_stages": [""]},
            r"^proxy.search.toggle_stages: expected a list of stage names, got \[''\]$",
        ),
        ({"toggle_stages": ["a_v1"], "without_stages": ["a_v1"]}, "listed twice"),
        ({"toggle_stages": []}, r"^proxy.search.columns: expected a mapping"),
    ):
        with pytest.raises(ProxyConfigError, match=msg):
            parse_search(raw, 4096, [0])


def test_ablate_stages_must_have_rejected_something(run_dir) -> None:
    manifest = load_manifest(run_dir)
    ctx = RunContext(run_dir=run_dir, config=manifest["config"], engine=None, manifest=manifest)
    with pytest.raises(PhaseError, match=r"--stages normalize_v1: normalize_v1 rejected no document .*"):
        run_ablation(ctx, stages=["normalize_v1"])
    with pytest.raises(PhaseError, match="stages that did: pii_v1, semantic_dedup_v1"):
        run_ablation(ctx, stages=[])


def test_a_stage_that_only_changed_text_is_skipped_with_that_reason() -> None:
    assert _why_skipped({"bytes_in": 100, "bytes_out": 90}).startswith(
        "changed text but removed no documents"
    )
    assert _why_skipped({"bytes_in": 100, "bytes_out": 100}) == (
        "removed no documents (its ablation is the curated recipe itself)"
    )
