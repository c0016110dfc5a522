"""What one proxy run does (optimizer steps, a trunk's cool-down branches, eval passes), priced at a
machine's measured speed; the speed cached per machine; a run's share done read from its metrics."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from curate.instrument.choice import ChoiceRows
from curate.instrument.runs import RunItem
from curate.instrument.speed import RunWork, Speed, machine_speed, run_work, speed_key, text_set_tokens
from curate.instrument.train_config import TrainConfig

PLAIN = TrainConfig(model="proxy_1m", tokens=294_912, warmup_steps=7)  # 144 steps of 16 x 128 tokens
# raw's trunk to 2T with finished branches at T/4, T/2 and T (the main budget), as ProxyConfig builds it
TRUNK = dataclasses.replace(PLAIN, tokens=589_824, branches=[73_728, 147_456, 294_912], eval_budget=294_912)


def test_a_plain_run_trains_its_steps_and_evaluates_at_each_eval_step() -> None:
    assert PLAIN.steps == 144
    assert PLAIN.eval_steps() == [2, 6, 18, 36, 51, 144]
    w = run_work(PLAIN, text_tokens=1000, choice_gold_tokens=100, choice_all_tokens=300)
    # 6 passes: text each time, the gold rows at 5, every choice row at T
    assert w == RunWork(train_tokens=294_912, eval_tokens=6 * 1000 + 5 * 100 + 300)


def test_a_trunk_pays_each_branch_cool_down_and_its_evals() -> None:
    # branches of 36, 72 and 144 steps cool down from steps 28, 57 and 115: 8 + 15 + 29 steps again
    w = run_work(TRUNK, text_tokens=1000, choice_gold_tokens=100, choice_all_tokens=300)
    assert w.train_tokens == (288 + 52) * 2048
    # the eval budget's 6 points, the two other branches, the trunk's own end: 9 passes
    assert w.eval_tokens == 9 * 1000 + 8 * 100 + 300


def test_a_runs_cpu_is_its_tokens_at_the_measured_rates_plus_its_fixed_work() -> None:
    speed = Speed(
        train_tokens_per_cpu_s=20_000,
        eval_tokens_per_cpu_s=50_000,
        run_fixed_cpu_s=1.0,
        worker_start_cpu_s=2.0,
        source="test",
    )
    assert RunWork(train_tokens=100_000, eval_tokens=50_000).cpu_s(speed) == 7.0


def test_a_text_set_is_read_in_whole_windows() -> None:
    assert text_set_tokens(1000, 128) == 1024  # 8 windows
    assert text_set_tokens(1024, 128) == 1024
    assert text_set_tokens(1, 128) == 128


def _speed_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: TrainConfig) -> Speed:
    monkeypatch.setenv("CURATE_CACHE", str(tmp_path / "cache"))
    speed = Speed(1000.0, 4000.0, 0.5, 1.5, "measured here (test)")
    (tmp_path / "cache").mkdir()
    key = speed_key(cfg, vocab_size=2048, threads=1)
    (tmp_path / "cache" / "speed.json").write_text(json.dumps({key: dataclasses.asdict(speed) | {"load": 1}}))
    return speed


def test_the_speed_of_a_machine_is_read_from_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speed = _speed_cache(tmp_path, monkeypatch, PLAIN)
    assert machine_speed(PLAIN, vocab_size=2048, threads=1) == speed


def _item(tmp_path: Path, cfg: TrainConfig) -> RunItem:
    evals = tmp_path / "eval" / "text"
    evals.parent.mkdir(parents=True)
    (tmp_path / "eval" / "text.json").write_text(json.dumps({"tokens": 1000, "bytes": 4000}))
    seq = cfg.seq_len
    mask = np.zeros((3, seq), dtype=bool)
    mask[0, 5:10] = mask[1, 3:20] = mask[2, 0:40] = True  # rows end at 10, 20 and 40 tokens
    rows = ChoiceRows(
        "arc",
        windows=np.zeros((3, seq + 1), dtype=np.int64),
        mask=mask,
        item=np.array([0, 0, 1]),
        is_gold=np.array([True, False, True]),
        cont_bytes=np.ones(3, dtype=np.int64),
    )
    rows.save(tmp_path / "eval" / "arc.npz")
    return RunItem(
        recipe="raw",
        seed=0,
        train_prefix=str(tmp_path / "train"),
        eval_prefixes={"text": str(evals)},
        out_dir=str(tmp_path / "run"),
        train_cfg=cfg,
        vocab_size=2048,
        eos_id=0,
        threads=1,
        choice_paths={"arc": str(tmp_path / "eval" / "arc.npz")},
    )


def test_a_run_item_prices_its_own_eval_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    speed = _speed_cache(tmp_path, monkeypatch, PLAIN)
    item = _item(tmp_path, PLAIN)
    # text: 8 windows of 128; gold rows end at 10 and 40, every row at 10, 20 and 40
    assert item.run_work == RunWork(train_tokens=294_912, eval_tokens=6 * 1024 + 5 * 50 + 70)
    assert item.work() == pytest.approx(item.run_work.cpu_s(speed))
    assert item.size() == (294_912.0, "tokens")


def test_a_runs_share_done_is_its_last_train_record(tmp_path: Path) -> None:
    item = _item(tmp_path, PLAIN)
    assert item.done() == 0.0
    run = tmp_path / "run"
    run.mkdir()
    lines = [
        {"type": "train", "step": 10, "tokens": 20_480, "loss": 7.0},
        {"type": "eval", "step": 18, "tokens": 36_864, "bpb": {}},
        {"type": "train", "step": 72, "tokens": 147_456, "loss": 5.0},
        {"type": "eval", "step": 72, "tokens": 147_456, "bpb": {}},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert item.done() == 0.5
    (run / "result.json").write_text("{}")
    assert item.done() == 1.0


def test_a_machine_is_measured_once_then_read_from_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATE_CACHE", str(tmp_path / "cache"))
    cfg = TrainConfig(model="proxy_tiny", tokens=8 * 2048)
    first = machine_speed(cfg, vocab_size=256, threads=1)
    assert first.train_tokens_per_cpu_s > 0
    assert first.eval_tokens_per_cpu_s > first.train_tokens_per_cpu_s  # forward only
    assert first.source.startswith("measured here ")
    assert "proxy_tiny (vocab 256, 16x128, 1 thread" in first.source
    cached = json.loads((tmp_path / "cache" / "speed.json").read_text())
    assert list(cached) == [speed_key(cfg, vocab_size=256, threads=1)]
    assert machine_speed(cfg, vocab_size=256, threads=1) == first  # not measured again
