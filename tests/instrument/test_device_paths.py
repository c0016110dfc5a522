"""The trainer's device code paths, as far as a machine without CUDA can take them: which device a run
picks, when it trains in bf16 autocast (the path every GPU run takes) and that this path trains here on
CPU, what a run that Ray gave a GPU but whose torch has no CUDA records. A real GPU run is
``benchmarks/gpu_ladder.sh`` (not run here: there is no GPU)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

import curate.core.engine
from curate.instrument import device, train
from curate.instrument.evaluate import EvalSet
from tests.instrument.tiny_trainer import VOCAB, tiny_config, train_tiny, write_data


def _run(tmp: Path, cfg, device: str | None = None) -> train.Run:
    tokens, ev = write_data(tmp)
    es = [EvalSet.from_shard("ev", ev, 2 * len(ev), eos_id=0, seq_len=cfg.seq_len)]
    return train.Run(
        cfg, train_tokens=tokens, eval_sets=es, vocab_size=VOCAB, out_dir=tmp / "r", device=device
    )


def test_a_run_picks_cuda_when_torch_sees_it_and_then_trains_in_bf16(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    run = _run(tmp_path, tiny_config())
    assert run.device == torch.device("cuda")
    assert run.autocast is True  # autocast: auto on a GPU is bf16
    assert _run(tmp_path, tiny_config(autocast="off")).autocast is False


def test_without_cuda_a_run_is_on_cpu_and_bf16_only_where_the_cpu_has_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "cpu_has_native_bf16", lambda: False)
    run = _run(tmp_path, tiny_config())
    assert (run.device, run.autocast) == (torch.device("cpu"), False)
    monkeypatch.setattr(device, "cpu_has_native_bf16", lambda: True)
    assert _run(tmp_path, tiny_config()).autocast is True
    assert _run(tmp_path, tiny_config(autocast="bf16"), device="cpu").autocast is True
    with pytest.raises(ValueError, match="autocast='fp8'; valid: auto, bf16, off"):
        _run(tmp_path, tiny_config(autocast="fp8"))


def test_the_bf16_autocast_path_trains_on_cpu(tmp_path: Path) -> None:
    """The autocast branch a GPU run takes (bf16 forward, fp32 master weights), run on CPU: it learns and
    records how it ran."""
    write_data(tmp_path)
    res = train_tiny(tmp_path, "bf16", tiny_config(autocast="bf16"))
    assert res["autocast"] is True
    assert res["device"] == "cpu"
    assert math.isfinite(res["final_bpb"]["ev"])
    curve = [json.loads(x) for x in (tmp_path / "bf16" / "metrics.jsonl").read_text().splitlines()]
    evals = [r["bpb"]["ev"] for r in curve if r["type"] == "eval"]
    assert evals[-1] < evals[0]  # it learned the repeating pattern


def test_a_gpu_that_torch_cannot_use_is_said_in_the_result(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(curate.core.engine, "assigned_gpus", lambda: ["0"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.gpu_assigned_without_cuda() is True
    assert "assigned GPU(s) ['0'] but torch has no CUDA: training on CPU" in caplog.text
    write_data(tmp_path)
    res = train_tiny(tmp_path, "gpu", tiny_config(tokens=32 * 8 * 4))
    assert (res["device"], res["gpu_assigned_without_cuda"]) == ("cpu", True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.gpu_assigned_without_cuda() is False  # a GPU torch can use: nothing to say
