"""The progress of work items that say how big they are (``Work``): the plan's schedule, the ETA that
starts from it and follows the pace seen, the bar's counts, and Ray polling the items in flight."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from curate.core.engine_base import Eta, InlineEngine, Work, WorkBar, list_schedule


def test_list_schedule_hands_each_item_to_the_first_free_slot() -> None:
    assert list_schedule([3, 1, 2, 4], 2) == 7  # slots end at 3 | 1, 3 | 3, 7
    assert list_schedule([5, 5, 5], 4) == 5
    assert list_schedule([2, 2, 2], 1) == 6
    assert list_schedule([], 2) == 0


def test_the_first_eta_is_the_plans_schedule() -> None:
    eta = Eta([10, 10, 10, 10], slots=2)
    assert eta.planned_s == 20
    assert eta.left(0.0, [0, 0, 0, 0]) == 20


def test_on_the_plans_pace_the_eta_is_the_rest_of_the_plan() -> None:
    eta = Eta([10, 10, 10, 10], slots=2, prior_s=30)
    assert eta.left(10.0, [1, 1, 0, 0]) == 10


def test_a_slower_pace_stretches_the_rest_and_takes_over_from_the_plan() -> None:
    # twice as slow: two items took 20 s; the rest is 10 s as planned, 20 s at the pace seen. The plan
    # weighs 30 s against the 20 elapsed: 0.6 x 10 + 0.4 x 20
    assert Eta([10, 10, 10, 10], slots=2, prior_s=30).left(20.0, [1, 1, 0, 0]) == pytest.approx(14.0)
    # without the plan's weight the pace seen is all
    assert Eta([10, 10, 10, 10], slots=2, prior_s=0).left(20.0, [1, 1, 0, 0]) == 20
    # forty times as slow (180 s of work in an hour on 2 slots), an hour in: the pace seen says what is left
    assert Eta([100] * 4, slots=2, prior_s=30).left(3600.0, [0.9, 0.9, 0, 0]) == pytest.approx(
        30 / 3630 * 110 + 3600 / 3630 * 110 / 0.025
    )


def test_before_any_work_is_seen_the_plan_stretches_with_the_time_without_it() -> None:
    assert Eta([10, 10], slots=2, prior_s=30).left(30.0, [0, 0]) == 20  # 10 planned x (30 + 30) / 30


def test_running_items_go_first_with_what_is_left_of_them() -> None:
    # halfway through the first two after 5 s (pace 1): 5 + 5 on the two slots, then 10 on one of them
    assert Eta([10, 10, 10], slots=2, prior_s=0).left(5.0, [0.5, 0.5, 0]) == 15


def test_fewer_items_than_slots_use_only_their_own_slots() -> None:
    eta = Eta([10], slots=4, prior_s=0)
    assert eta.slots == 1
    assert eta.left(5.0, [0.5]) == 5


@dataclass
class Job:
    """A work item of ``seconds`` expected seconds and ``tokens`` tokens, and its share done so far."""

    seconds: float
    tokens: int
    share: float = 0.0
    sleep_s: float = 0.0

    def work(self) -> float:
        return self.seconds

    def done(self) -> float:
        POLLED.append(self.tokens)
        return self.share

    def size(self) -> tuple[float, str]:
        return float(self.tokens), "tokens"


POLLED: list[int] = []


def _run_job(job: Job) -> int:
    time.sleep(job.sleep_s)
    return job.tokens


def test_a_bar_over_work_counts_tokens_and_work_not_items() -> None:
    jobs = [Job(30, 100), Job(10, 300)]
    assert all(isinstance(j, Work) for j in jobs)
    bar = WorkBar(jobs, slots=2, desc="runs", disable=False)
    try:
        bar.finished(1)
        jobs[0].share = 0.5
        bar.running([0])
        assert bar.text.startswith("1/2 done, 350/400 tokens, 00:00 elapsed, ETA ")
        assert bar.bar.bar_format.endswith("| " + bar.text)
        assert bar.bar.n == 625  # (10 + 0.5 x 30) of 40 expected seconds, in thousandths
    finally:
        bar.close()


def test_the_inline_engine_shows_work_when_its_items_are_work() -> None:
    engine = InlineEngine(progress=True)
    assert engine.map(_run_job, [Job(1, 5), Job(1, 7)], desc="jobs") == [5, 7]
    assert InlineEngine(progress=False)._work_bar([Job(1, 5)], 1, "jobs") is None  # no bar: no estimate made


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_reads_the_share_done_of_items_in_flight(ray_engine) -> None:
    POLLED.clear()
    ray_engine.progress = True
    try:
        got = ray_engine.map(_run_job, [Job(6, 11, sleep_s=6.0)], desc="long job")
    finally:
        ray_engine.progress = False
    assert got == [11]
    assert 11 in POLLED  # read on the driver while the task ran (every POLL_S seconds)
