"""The estimate said before a run: the proxy phase's runs and their cost at a fixed rate table, the wall
time on the cores' slots, the input's size from the shards read, and the commands that print it."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.cli import main
from curate.instrument.speed import Speed
from curate.plan.estimate import (
    EvalTokens,
    bytes_per_token,
    estimate_proxy,
    load_factor,
    measure_input,
    planned_runs,
    settings_lines,
)
from curate.proxy.spec.config import parse
from tests.helpers import pipeline, write_inputs

SPEED = Speed(
    train_tokens_per_cpu_s=10_000,
    eval_tokens_per_cpu_s=40_000,
    run_fixed_cpu_s=1.0,
    worker_start_cpu_s=2.0,
    source="a fixed table",
)
EVALS = EvalTokens(text=1024, choice_gold=100, choice_all=300)


def _proxy(**extra: object) -> object:
    return parse(
        {
            "recipes": {"raw": {"from": "raw"}, "curated": {"from": "kept"}},
            "model": "proxy_tiny",
            "budget": 32768,  # 16 steps of 16 x 128 tokens
            "seeds": 2,
            "controls": [],
            **extra,
        }
    )


def test_runs_are_recipes_and_controls_by_seeds_by_points_in_the_engines_order() -> None:
    proxy = _proxy(
        controls=["null", "planted"], ladder=[{"model": "proxy_tiny", "budget": 16384, "seeds": 1}]
    )
    runs = planned_runs(proxy)
    assert [(r.point, r.recipe, r.seed) for r in runs] == [
        ("proxy_tiny@32768", "raw", 0),
        ("proxy_tiny@32768", "raw", 1),
        ("proxy_tiny@32768", "curated", 0),
        ("proxy_tiny@32768", "curated", 1),
        ("proxy_tiny@32768", "null", 0),
        ("proxy_tiny@32768", "null", 1),
        ("proxy_tiny@32768", "planted", 0),
        ("proxy_tiny@32768", "planted", 1),
        ("proxy_tiny@16384", "raw", 0),
        ("proxy_tiny@16384", "curated", 0),
        ("proxy_tiny@16384", "null", 0),
        ("proxy_tiny@16384", "planted", 0),
    ]
    assert runs[0].cfg.branches == [8192, 16384, 32768]  # the baseline: its trunk to 2T, the curve's branches
    assert runs[2].cfg.branches == []


def test_no_controls_without_a_recipe_to_control() -> None:
    proxy = parse({"recipes": {"raw": {"from": "raw"}}, "model": "proxy_tiny", "budget": 32768, "seeds": 1})
    assert [r.recipe for r in planned_runs(proxy)] == ["raw"]


def test_the_proxy_estimate_is_each_runs_work_at_the_rates_plus_preparation_and_start_up() -> None:
    est = estimate_proxy(
        _proxy(), evals=EVALS, input_bytes=2_000_000, cores=2, speed_of=lambda c, v, t: SPEED
    )
    # raw: a trunk of 32 steps, branches of 4, 8 and 16 steps cooling down 1 + 2 + 4 steps again: 39 steps;
    # 8 eval passes (the budget's 5 points, 2 other branches, the trunk's end). curated: 16 steps, 5 passes.
    raw = 39 * 2048 / 10_000 + (8 * 1024 + 7 * 100 + 300) / 40_000 + 1.0
    curated = 16 * 2048 / 10_000 + (5 * 1024 + 4 * 100 + 300) / 40_000 + 1.0
    assert est.run_cpu_s == pytest.approx([raw, raw, curated, curated])
    assert est.prep_cpu_s == pytest.approx(2.0 * 2.5)  # 2 MB of input at 2.5 CPU-s per MB
    assert est.start_cpu_s == 2 * 2.0  # two workers train, each imports the trainer once
    assert est.cpu_s == pytest.approx(2 * raw + 2 * curated + 5.0 + 4.0)
    # 2 slots: the raws side by side, then the curateds; preparation on both cores; one start-up
    assert est.wall_s == pytest.approx(5.0 / 2 + 2.0 + raw + curated)


def test_wall_time_follows_the_slots_the_cores_allow() -> None:
    one = estimate_proxy(_proxy(), evals=EVALS, input_bytes=0, cores=1, speed_of=lambda c, v, t: SPEED)
    assert one.slots == 1
    assert one.runs_wall_s == pytest.approx(sum(one.run_cpu_s))
    two_each = estimate_proxy(
        _proxy(cpus_per_run=2), evals=EVALS, input_bytes=0, cores=4, speed_of=lambda c, v, t: SPEED
    )
    assert two_each.slots == 2
    assert two_each.threads == 2
    assert two_each.runs_wall_s == pytest.approx((two_each.run_cpu_s[0] + two_each.run_cpu_s[2]) / 2)


def test_the_settings_that_drive_the_estimate_are_named() -> None:
    proxy = _proxy()
    lines = settings_lines(
        proxy, estimate_proxy(proxy, evals=EVALS, input_bytes=0, cores=2, speed_of=lambda c, v, t: SPEED)
    )
    assert lines[0] == (
        "runs: 4 = (2 recipes + 0 controls) x 2 seeds x 1 point (proxy_tiny@32768); raw's trunk to 2T with "
        "finished branches at 0.25T, 0.5T, 1T"
    )
    assert lines[1].startswith(
        "tokens: 32,768 per run, 0.23 M trained in all; evals: 1 sets, 1,124 tokens per pass"
    )
    assert lines[2] == (
        "speed of proxy_tiny: 10,000 training and 40,000 eval tokens per CPU-s, 1.0 CPU-s per run (a fixed table)"
    )
    assert lines[3] == "cores: 2, 2 runs at a time (proxy.cpus_per_run 1)"


def test_a_trained_bpes_bytes_per_token_is_read_off_its_vocabulary() -> None:
    assert bytes_per_token(2048) == 2.35
    assert bytes_per_token(8192) == pytest.approx(2.88)
    assert bytes_per_token(4096) == pytest.approx((2.35 + 2.88) / 2)


def test_the_load_of_other_processes_stretches_the_wall_time() -> None:
    assert load_factor(0.0, 2, 2) == 1.0
    assert load_factor(3.0, 2, 2) == 2.5  # five processes on two cores
    assert load_factor(0.5, 1, 2) == 1.0


def test_the_inputs_size_scales_the_shards_read_by_file_size(tmp_path: Path) -> None:
    from curate.pipeline.config import build_source, parse_pipeline

    write_inputs(tmp_path / "in")  # 3 files of the same size: 40 documents, a malformed line, an empty one
    source = build_source(parse_pipeline(pipeline(tmp_path / "in")))
    whole = measure_input(source, sample_shards=3)
    assert (whole.read, whole.shards) == (3, 3)
    one = measure_input(source, sample_shards=1)
    assert (one.read, one.shards) == (1, 3)
    assert one.docs == whole.docs  # each file's documents and bytes, from the one read
    assert one.bytes == whole.bytes
    assert one.read_cpu_s > 0


def test_curate_plan_without_bytes_estimates_the_run_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_inputs(tmp_path / "in")
    (tmp_path / "p.yaml").write_text(pipeline(tmp_path / "in"))
    assert main(["plan", str(tmp_path / "p.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("estimate on this machine (")
    assert out[1] == "  input: 126 documents, 3.5 kB of text (read in full)"  # 3 x (40 x 29 + 3) bytes


def test_shards_not_read_are_scaled_by_file_size_up_to_the_limit() -> None:
    from curate.plan.estimate import _scaled

    # no limit: 0.1 documents per file byte, 500 bytes each
    assert _scaled([2000], [(1000, 100, 50_000)], None) == (200, 100_000)
    # a limit no shard read reached: each at its file size's share, at most the limit
    assert _scaled([3000, 10_000], [(1000, 100, 100_000)], 500) == (800, 800_000)
    # the limit cut the shard read: larger ones reach it too, and with no uncut shard so does every other
    assert _scaled([2000, 500], [(1000, 500, 600_000)], 500) == (1000, 1_200_000)
    assert _scaled([2000], [], 500) == (0, 0)


def test_token_counts_are_priced_at_the_runs_own_counter_once_per_text_rewrite(tmp_path: Path) -> None:
    from curate.pipeline.config import build_source, parse_pipeline
    from curate.plan.estimate import _token_counting

    write_inputs(tmp_path / "in")
    cfg = parse_pipeline(pipeline(tmp_path / "in"))  # normalize_v1 (a transform), then a select
    row = _token_counting(cfg, measure_input(build_source(cfg)), cores=2)
    assert row is not None
    assert row.name == "tokens (words)"
    assert row.source.endswith("; 2 passes (the input, and again after each transform)")
    assert row.wall_s == pytest.approx(row.core_s / 2)


def test_runs_the_estimate_leaves_out_are_named() -> None:
    proxy = _proxy(ablate=True)
    est = estimate_proxy(proxy, evals=EVALS, input_bytes=0, cores=2, speed_of=lambda c, v, t: SPEED)
    assert est.notes == ["not included: the runs proxy.ablate ask for"]


def test_semantic_dedup_is_priced_by_its_embedder() -> None:
    from curate.plan.model import builtin_rate

    assert builtin_rate("semantic_dedup_v1").docs_per_core_s == 2675.0  # the hashed embedding
    assert builtin_rate("semantic_dedup_v1[all-MiniLM-L6-v2]").docs_per_core_s == 10.0
    assert builtin_rate("semantic_dedup_v1[/models/my-encoder]").docs_per_core_s == 10.0  # any encoder
    assert builtin_rate("semantic_dedup_v1[wordllama-l2-supercat]").docs_per_core_s == 1344.0
