"""curate plan: the capacity model's arithmetic, stage lists from a pipeline, and the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.cli import main
from curate.plan.model import INLINE_RATES, RATES, UNMEASURED, pilot_from_manifest, project

ROOT = Path(__file__).resolve().parents[2]


def test_projection_is_rates_times_bytes_over_cores_plus_shuffle_transfer() -> None:
    plan = project(["read", "minhash_dedup_v1"], docs=1_000_000, nbytes=10**9, nodes=2, cores=4)
    read, mh = plan.stages
    assert read.core_s == pytest.approx(1000 / RATES["read"].mb_per_core_s)
    assert read.wall_s == pytest.approx(1000 / RATES["read"].mb_per_core_s / 8)
    assert read.shuffle_bytes == 0
    # 14 band rows of 16 bytes per doc + 100k edges x 2 directions x 16 bytes x 2 shuffles x 10 rounds
    assert mh.shuffle_bytes == 1_000_000 * 224 + 100_000 * 2 * 16 * 2 * 10
    net = mh.shuffle_bytes * (1 / 2) / (2 * 1.25e9)
    assert mh.wall_s == pytest.approx(1000 / RATES["minhash_dedup_v1"].mb_per_core_s / 8 + net)
    assert plan.bottleneck is mh
    assert plan.notes == []


def test_unmeasured_stage_and_driver_components_are_flagged() -> None:
    plan = project(
        ["read", "mystery_v1", "minhash_dedup_v1"],
        docs=10**6,
        nbytes=10**9,
        nodes=1,
        cores=2,
        driver_components=True,
    )
    assert plan.stages[1].core_s == pytest.approx(1000 / UNMEASURED.mb_per_core_s)
    assert plan.stages[2].wall_s == pytest.approx(1000 / 1.91 / 2)  # one node: no network transfer
    assert plan.notes == [
        "minhash components: driver: pairs and ids gather on the driver",
        "no measured rate for mystery_v1: assumed 2.0 MB/s/core; it does not decide the bottleneck",
    ]


def test_plan_command_on_the_web_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "plan",
            str(ROOT / "pipelines/web.yaml"),
            "--docs",
            "1e9",
            "--bytes",
            "1e12",
            "--nodes",
            "16",
            "--cores",
            "32",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0] == "plan: 1,000,000,000 docs, 1,000.0 GB on 16 node(s) x 32 cores (ray engine)"
    names = [line.split()[0] for line in out[2:12]]
    assert names[:3] == ["read", "normalize_v1", "exact_dedup_v1"]
    assert names[-1] == "minhash_dedup_v1"
    assert "bottleneck: minhash_dedup_v1 (53% of wall)" in out  # its rate at 2 M documents, on Ray


def test_plan_rejects_a_non_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", str(ROOT / "pipelines/web.yaml"), "--docs", "lots", "--bytes", "1e9"])
    assert "expected a number such as 1e9 or 5000000, not 'lots'" in capsys.readouterr().err


def test_an_unmeasured_stage_never_decides_the_bottleneck() -> None:
    # an assumed rate once decided 25% of the wall; now it is only flagged
    plan = project(["read", "mystery_v1", "exact_dedup_v1"], docs=10**6, nbytes=10**9, nodes=1, cores=2)
    assert plan.stages[1].wall_s > plan.stages[2].wall_s  # 2 MB/s assumed vs exact's measured 16
    assert plan.bottleneck.name == "exact_dedup_v1"
    assert plan.notes[-1] == (
        f"at the assumed rate mystery_v1 would take {plan.stages[1].wall_s / plan.wall_s:.0%} of the wall, "
        "more than exact_dedup_v1: measure it before trusting the projection"
    )
    assert RATES["url_filter_v1"].source.startswith("BENCHMARKS.md 1")  # every web stage cites its run


def test_docs_are_estimated_from_bytes_and_disk_is_projected(capsys: pytest.CaptureFixture[str]) -> None:
    plan = project(["read", "exact_dedup_v1"], docs=None, nbytes=10**9, nodes=1, cores=2)
    assert plan.docs == 888_889  # 1e9 / 1,125 bytes per document (RESULTS-load.md run 1)
    assert plan.docs_estimated
    assert plan.output_bytes == pytest.approx(0.48e9)
    # two segments of parts (read, after exact) + exact's key rows: 40 bytes per document
    assert plan.scratch_bytes == pytest.approx(2 * 0.48e9 + 888_889 * 40)
    assert main(["plan", str(ROOT / "pipelines/web.yaml"), "--bytes", "1e12"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "plan: 888,888,889 docs (estimated from --bytes at 1,125 bytes/doc; give --docs), "
        "1,000.0 GB on 1 node(s) x 8 cores (ray engine)"
    )
    (disk,) = [line for line in out if line.startswith("disk: ")]
    assert disk.startswith("disk: run directory 480.0 GB (kept/ + rejected/) + 1,731.6 GB scratch (_work/")
    assert disk.endswith(
        "shuffle partitions move through Ray's object store (memory, spilled to each node's Ray temp dir)"
    )


def _row(name: str, bytes_in: int, bytes_out: int, cpu_s: float) -> dict[str, object]:
    return {"name": name, "bytes_in": bytes_in, "bytes_out": bytes_out, "cpu_s": cpu_s}


PILOT = {
    "stages": [
        _row("read", 0, 10_000_000, 1.0),  # 10 MB read in 1 CPU-s
        _row("normalize_v1", 10_000_000, 10_000_000, 2.0),
        _row("language_v1", 10_000_000, 4_000_000, 5.0),
        _row("gopher_quality_v1", 4_000_000, 3_000_000, 0.5),
    ]
}


def test_a_pilot_run_sets_rates_and_the_share_of_text_each_stage_sees() -> None:
    names = ["read", "normalize_v1", "language_v1", "gopher_quality_v1"]
    pilot = pilot_from_manifest(PILOT, names, where="runs/pilot")
    assert pilot.shares == {"read": 1.0, "normalize_v1": 1.0, "language_v1": 1.0, "gopher_quality_v1": 0.4}
    assert pilot.rates["language_v1"].mb_per_core_s == pytest.approx(2.0)
    assert pilot.rates["gopher_quality_v1"].source == "runs/pilot: 4.0 MB in 0.5 CPU-s"
    plan = project(names, docs=None, nbytes=160_000_000, nodes=1, cores=2, pilot=pilot)
    # 16x the pilot's text: 16x its CPU-seconds (16 + 32 + 80 + 8), over 2 cores
    assert [s.core_s for s in plan.stages] == pytest.approx([16.0, 32.0, 80.0, 8.0])
    assert plan.wall_s == pytest.approx(68.0)
    assert plan.calibrated


def test_a_pilot_of_another_pipeline_is_refused() -> None:
    with pytest.raises(ValueError, match="runs/x: its manifest has 4 stage rows, the pipeline 2"):
        pilot_from_manifest(PILOT, ["read", "normalize_v1"], where="runs/x")


def test_the_inline_engine_is_one_core_with_in_memory_dedup_at_its_own_rates() -> None:
    names = ["read", "exact_dedup_v1", "minhash_dedup_v1"]
    ray = project(names, docs=100_000, nbytes=10**8, nodes=1, cores=1)
    plan = project(names, docs=100_000, nbytes=10**8, nodes=2, cores=8, engine="inline")
    assert (plan.nodes, plan.cores, plan.engine) == (1, 1, "inline")
    assert plan.notes == ["engine inline: one process on one core (--nodes 2 --cores 8 not used)"]
    read, exact, mh = plan.stages
    assert read.core_s == pytest.approx(100 / RATES["read"].mb_per_core_s)  # document-wise: one rate
    assert exact.core_s == pytest.approx(100 / INLINE_RATES["exact_dedup_v1"].mb_per_core_s)
    assert mh.wall_s == pytest.approx(100 / INLINE_RATES["minhash_dedup_v1"].mb_per_core_s)
    assert plan.shuffle_bytes == 0  # keys grouped in the one process
    assert ray.shuffle_bytes == 100_000 * (40 + 224) + 10_000 * 2 * 16 * 2 * 10
    # Ray's dedup rates carry a shuffle and component rounds: over 2x (exact) and 5x (MinHash) slower
    assert ray.stages[1].core_s == pytest.approx(100 / 16.0)
    assert ray.stages[1].core_s > 2 * exact.core_s
    assert ray.stages[2].core_s == pytest.approx(100 / 1.91)
    assert ray.stages[2].core_s > 5 * mh.core_s
    with pytest.raises(ValueError, match="engine: expected one of ray, inline, got 'spark'"):
        project(names, docs=1, nbytes=1, nodes=1, cores=1, engine="spark")


def test_plan_takes_the_engine_from_the_pipeline_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "pipelines/web.yaml").read_text()
    assert "engine:" not in text  # the recipe runs on the default engine (Ray)
    pipe = tmp_path / "web_inline.yaml"
    pipe.write_text(text + "\nengine: {kind: inline}\n")
    assert main(["plan", str(pipe), "--docs", "1e5", "--bytes", "1e8", "--cores", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "plan: 100,000 docs, 0.1 GB on 1 node(s) x 1 cores (inline engine)"
    assert "note: engine inline: one process on one core (--nodes 1 --cores 2 not used)" in out
    assert (
        "assumes: one process on one core, every stage sees all input, rates from a 2-core shared " in out[-2]
    )
    (mem,) = [line for line in out if line.startswith("projected wall")]
    assert mem.endswith("; no shuffle; peak memory of the one process (driver and worker) 1.0 GiB")
    (disk,) = [line for line in out if line.startswith("disk: ")]
    assert disk.endswith("in the run directory, a local mirror for a bucket)")
    assert (
        main(["plan", str(pipe), "--docs", "1e5", "--bytes", "1e8", "--cores", "2", "--engine", "ray"]) == 0
    )
    assert capsys.readouterr().out.splitlines()[0] == (
        "plan: 100,000 docs, 0.1 GB on 1 node(s) x 2 cores (ray engine)"
    )


def test_the_word_split_is_paid_once_by_the_first_word_based_filter() -> None:
    from curate.plan.model import WORD_SPLIT

    split = 100 / WORD_SPLIT.mb_per_core_s
    alone = project(["read", "gopher_quality_v1"], docs=10**5, nbytes=10**8, nodes=1, cores=1)
    assert alone.stages[1].core_s == pytest.approx(100 / RATES["gopher_quality_v1"].mb_per_core_s + split)
    assert alone.stages[1].source.endswith("; + the word split (10.2 MB/s)")
    both = project(
        ["read", "gopher_repetition_v1", "gopher_quality_v1", "c4_quality_v1"],
        docs=10**5,
        nbytes=10**8,
        nodes=1,
        cores=1,
    )
    rep, quality, c4 = both.stages[1:]
    assert rep.core_s == pytest.approx(100 / RATES["gopher_repetition_v1"].mb_per_core_s + split)
    assert quality.core_s == pytest.approx(100 / RATES["gopher_quality_v1"].mb_per_core_s)
    assert c4.core_s == pytest.approx(100 / RATES["c4_quality_v1"].mb_per_core_s)
    # gopher_repetition_v1 with the split is its measured recipe rate: 60.4 MB in 9.40 CPU-s
    assert 60.4 / RATES[
        "gopher_repetition_v1"
    ].mb_per_core_s + 60.4 / WORD_SPLIT.mb_per_core_s == pytest.approx(9.40, rel=0.01)
    pilot = pilot_from_manifest(PILOT, ["read", "normalize_v1", "language_v1", "gopher_quality_v1"])
    calibrated = project(
        ["read", "normalize_v1", "language_v1", "gopher_quality_v1"],
        docs=None,
        nbytes=40_000_000,
        nodes=1,
        cores=1,
        pilot=pilot,
    )
    assert calibrated.stages[3].core_s == pytest.approx(2.0)  # 4x the pilot's 0.5 CPU-s: no split added
