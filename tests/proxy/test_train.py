"""The trainer: exact resume after SIGKILL, anomaly survival, determinism, bpb definition."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from curate.proxy.evaluate import EvalSet, bpb
from curate.proxy.train import Run, TrainConfig

ROOT = Path(__file__).resolve().parents[2]
VOCAB = 512


def _data(tmp: Path) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    # A learnable stream: a repeating pattern with noise, so the loss falls within a few steps.
    base = np.tile(np.arange(1, 97, dtype=np.uint16), 400)
    noise = rng.integers(1, VOCAB, size=base.shape).astype(np.uint16)
    train = np.where(rng.random(base.shape) < 0.1, noise, base)
    ev = np.tile(np.arange(1, 97, dtype=np.uint16), 20)
    np.save(tmp / "train.npy", train)
    np.save(tmp / "eval.npy", ev)
    return train, ev


def _cfg(**kw) -> TrainConfig:
    base = dict(
        model="proxy_tiny",
        seq_len=32,
        batch_size=4,
        grad_accum=2,
        tokens=32 * 8 * 24,
        lr=1e-2,
        n_evals=4,
        ckpt_every=5,
        log_every=1,
        seed=3,
        threads=1,
        spike_warmup=5,
    )
    base.update(kw)
    return TrainConfig(**base)


def _run(tmp: Path, out: str, cfg: TrainConfig) -> dict:
    train, ev = np.load(tmp / "train.npy"), np.load(tmp / "eval.npy")
    es = [EvalSet.from_shard("ev", ev, 2 * len(ev), eos_id=0, seq_len=cfg.seq_len)]
    torch.set_num_threads(1)
    return Run(cfg, train_tokens=train, eval_sets=es, vocab_size=VOCAB, out_dir=tmp / out).train()


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("autocast", ["off", "bf16"])  # fp32 throughout; bf16 autocast + bf16 head matmuls
def test_resume_after_sigkill_equals_uninterrupted_run_bitwise(tmp_path, autocast):
    _data(tmp_path)
    ref = _run(tmp_path, "ref", _cfg(autocast=autocast))
    # The same run in a subprocess, SIGKILLed during step 13 (after the step-10 checkpoint).
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from test_train import _cfg, _run
        _run(Path({str(tmp_path)!r}), "killed", _cfg(autocast={autocast!r}, faults={{13: "kill"}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    killed = tmp_path / "killed"
    assert (killed / "ckpt.pt").exists() and not (killed / "result.json").exists()
    assert (
        max(r["step"] for r in _records(killed / "metrics.jsonl")) == 14
    )  # work past the checkpoint was lost
    ck = torch.load(killed / "ckpt.pt", weights_only=True)
    assert ck["step"] == 10
    res = _run(tmp_path, "killed", _cfg(autocast=autocast))
    assert res["autocast"] is (autocast == "bf16")
    assert _records(killed / "metrics.jsonl") == _records(tmp_path / "ref" / "metrics.jsonl")
    assert res["final_bpb"] == ref["final_bpb"]
    from safetensors.torch import load_file

    wa, wb = (
        load_file(tmp_path / "ref" / "model" / "model.safetensors"),
        load_file(killed / "model" / "model.safetensors"),
    )
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    # A finished run is not redone.
    assert _run(tmp_path, "killed", _cfg(autocast=autocast)) == res


def test_nan_and_spike_batches_are_skipped_logged_and_counted(tmp_path):
    _data(tmp_path)
    res = _run(tmp_path, "faulty", _cfg(faults={8: "nan", 15: "spike"}))
    recs = _records(tmp_path / "faulty" / "metrics.jsonl")
    anomalies = [r for r in recs if r["type"] == "anomaly"]
    assert [(r["step"], r["loss"], r["action"]) for r in anomalies][0] == (9, "nan", "skip")
    assert anomalies[1]["step"] == 16 and anomalies[1]["loss"] > 10
    assert res["anomalies"] == 2 and res["rollbacks"] == 0
    assert all(math.isfinite(v) for v in res["final_bpb"].values())


def test_consecutive_anomalies_roll_back_to_the_last_checkpoint(tmp_path):
    _data(tmp_path)
    res = _run(tmp_path, "rb", _cfg(faults={11: "nan", 12: "nan", 13: "nan"}))
    recs = _records(tmp_path / "rb" / "metrics.jsonl")
    assert [r for r in recs if r["type"] == "rollback"] == [{"type": "rollback", "step": 14, "to_step": 10}]
    assert res["anomalies"] == 3 and res["rollbacks"] == 1
    assert all(math.isfinite(v) for v in res["final_bpb"].values())


def test_eval_points_are_log_spaced_and_include_quarter_budget():
    cfg = _cfg(tokens=256 * 100, seq_len=32, batch_size=8, grad_accum=1, n_evals=5)
    assert cfg.steps == 100
    assert cfg.eval_steps() == [2, 4, 13, 25, 35, 100]
    assert cfg.lr_at(0) == pytest.approx(1e-2 / 5)
    assert cfg.lr_at(99) == pytest.approx(1e-3, rel=1e-2)


def test_bpb_is_nll_in_bits_over_bytes_with_eos_targets_masked():
    # A uniform model over V tokens: each predicted document token costs ln V nats.
    class Uniform(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids):
            return type("O", (), {"logits": torch.zeros(*input_ids.shape, 64) + self.p})()

    tokens = np.array([5, 6, 7, 0, 8, 9, 0], dtype=np.uint16)  # two docs: 3 and 2 tokens, EOS-terminated
    es = EvalSet.from_shard("x", tokens, n_bytes=10, eos_id=0, seq_len=4)
    assert es.windows.tolist() == [[0, 5, 6, 7, 0], [0, 8, 9, 0, 0]]
    assert bpb(Uniform(), es) == pytest.approx(
        5 * math.log(64) / (math.log(2) * 10), rel=1e-7
    )  # float32 log-softmax
