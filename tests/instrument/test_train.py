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

from curate.instrument.evaluate import EvalSet, bpb
from tests.instrument.tiny_trainer import tiny_config, train_tiny, write_data

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("autocast", ["off", "bf16"])  # fp32 throughout; bf16 autocast + bf16 head matmuls
def test_resume_after_sigkill_equals_uninterrupted_run_bitwise(tmp_path, autocast):
    write_data(tmp_path)
    ref = train_tiny(tmp_path, "ref", tiny_config(autocast=autocast))
    # The same run in a subprocess, SIGKILLed during step 13 (after the step-10 checkpoint).
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from tests.instrument.tiny_trainer import tiny_config, train_tiny
        train_tiny(Path({str(tmp_path)!r}), "killed", tiny_config(autocast={autocast!r}, faults={{13: "kill"}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    killed = tmp_path / "killed"
    assert (killed / "ckpt.pt").exists()
    assert not (killed / "result.json").exists()
    assert (
        max(r["step"] for r in _records(killed / "metrics.jsonl")) == 14
    )  # work past the checkpoint was lost
    ck = torch.load(killed / "ckpt.pt", weights_only=True)
    assert ck["step"] == 10
    res = train_tiny(tmp_path, "killed", tiny_config(autocast=autocast))
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
    assert train_tiny(tmp_path, "killed", tiny_config(autocast=autocast)) == res


def test_nan_and_spike_batches_are_skipped_logged_and_counted(tmp_path):
    write_data(tmp_path)
    res = train_tiny(tmp_path, "faulty", tiny_config(faults={8: "nan", 15: "spike"}))
    recs = _records(tmp_path / "faulty" / "metrics.jsonl")
    anomalies = [r for r in recs if r["type"] == "anomaly"]
    assert next((r["step"], r["loss"], r["action"]) for r in anomalies) == (9, "nan", "skip")
    assert anomalies[1]["step"] == 16
    assert anomalies[1]["loss"] > 10
    assert res["anomalies"] == 2
    assert res["rollbacks"] == 0
    assert all(math.isfinite(v) for v in res["final_bpb"].values())


def test_consecutive_anomalies_roll_back_to_the_last_checkpoint(tmp_path):
    write_data(tmp_path)
    res = train_tiny(tmp_path, "rb", tiny_config(faults={11: "nan", 12: "nan", 13: "nan"}))
    recs = _records(tmp_path / "rb" / "metrics.jsonl")
    assert [r for r in recs if r["type"] == "rollback"] == [{"type": "rollback", "step": 14, "to_step": 10}]
    assert res["anomalies"] == 3
    assert res["rollbacks"] == 1
    assert all(math.isfinite(v) for v in res["final_bpb"].values())


def test_eval_points_are_log_spaced_and_include_quarter_budget():
    cfg = tiny_config(tokens=256 * 100, seq_len=32, batch_size=8, grad_accum=1, n_evals=5)
    assert cfg.steps == 100
    assert cfg.eval_steps() == [2, 4, 13, 25, 35, 100]
    assert cfg.lr_at(0) == pytest.approx(1e-2 / 5)
    # WSD by default: constant until 80% of the steps, then linearly to zero
    assert cfg.lr_at(79) == pytest.approx(1e-2)
    assert cfg.lr_at(80) == pytest.approx(1e-2)
    assert cfg.lr_at(99) == pytest.approx(1e-2 * 1 / 20)
    cos = tiny_config(
        tokens=256 * 100, seq_len=32, batch_size=8, grad_accum=1, schedule="cosine", min_lr_frac=0.1
    )
    assert cos.lr_at(99) == pytest.approx(1e-3, rel=1e-2)


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


def test_a_branch_of_a_longer_trunk_is_the_finished_shorter_run_bit_for_bit(tmp_path):
    # WSD with a shared warmup: a run of budget b is the trunk of any longer run until its cool-down, so
    # the cool-down branches of one 2T trunk are the finished T/2 and T runs, exactly.
    write_data(tmp_path)
    t = 32 * 8 * 24
    warm = tiny_config().warmup()
    trunk = train_tiny(
        tmp_path, "trunk", tiny_config(tokens=2 * t, branches=[t // 2, t], eval_budget=t, warmup_steps=warm)
    )
    full = train_tiny(tmp_path, "full", tiny_config(tokens=t, warmup_steps=warm))
    half = train_tiny(tmp_path, "half", tiny_config(tokens=t // 2, warmup_steps=warm))
    assert list(trunk["branches"]) == [str(t // 2), str(t), str(2 * t)]
    assert trunk["branches"][str(t)] == full["final_bpb"]
    assert trunk["branches"][str(t // 2)] == half["final_bpb"]
    # the trunk logs the T run's eval curve: its early points from the trunk, the end from the branch
    curve = [json.loads(x) for x in (tmp_path / "trunk" / "metrics.jsonl").read_text().splitlines()]
    ref = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    pick = lambda recs: [(r["tokens"], r["bpb"]) for r in recs if r["type"] == "eval"]  # noqa: E731
    assert pick(curve) == pick(ref)


def test_branches_need_wsd_and_budgets_below_the_run():
    with pytest.raises(ValueError, match="branches need schedule: wsd"):
        tiny_config(branches=[32 * 8 * 8], schedule="cosine").branch_steps()
    with pytest.raises(ValueError, match="is not below the run's"):
        tiny_config(branches=[32 * 8 * 24]).branch_steps()
    with pytest.raises(ValueError, match="eval_budget 2048 must be one of the branches"):
        tiny_config(tokens=32 * 8 * 48, branches=[32 * 8 * 24], eval_budget=2048).branch_steps()


def test_accuracy_over_every_choice_is_scored_at_the_finished_step_only(tmp_path):
    from curate.instrument.choice import ChoiceRows
    from curate.instrument.train import Run

    train, ev = write_data(tmp_path)
    cfg = tiny_config(n_evals=4)
    # two items of two choices each, gold first: rows of 9 tokens (a context, a one-token continuation)
    windows = np.tile(np.arange(1, 10, dtype=np.int64), (4, 1))
    mask = np.zeros((4, 8), dtype=bool)
    mask[:, -1] = True
    windows[1, -1] = windows[3, -1] = 200  # the wrong choices end on a token the stream never has
    rows = ChoiceRows(
        name="items",
        windows=windows,
        mask=mask,
        item=np.array([0, 0, 1, 1]),
        is_gold=np.array([True, False, True, False]),
        cont_bytes=np.array([1, 1, 1, 1]),
    )
    es = [EvalSet.from_shard("ev", ev, 2 * len(ev), eos_id=0, seq_len=cfg.seq_len)]
    torch.set_num_threads(1)
    res = Run(
        cfg, train_tokens=train, eval_sets=es, choice_sets=[rows], vocab_size=512, out_dir=tmp_path / "r"
    ).train()
    evals = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in evals if r["type"] == "eval"]
    assert len(evals) == len(cfg.eval_steps()) >= 3
    assert all("items" in r["bpb"] for r in evals)  # gold-continuation bpb at every eval point
    assert [r["at_step"] for r in evals if "acc" in r] == [cfg.steps]  # accuracy at T only
    assert res["final_acc"] == {"items": evals[-1]["acc"]["items"]}
    assert res["final_acc"]["items"] in (0.0, 0.5, 1.0)


def test_a_broken_instrument_on_purpose_trains_without_word_order_or_without_pairing(tmp_path):
    """``broken`` exists to measure how often the controls catch a broken instrument: trained on
    shuffled tokens the model cannot learn the stream's order (its bpb on the ordered pattern stays far
    worse); unpaired, a run's initialisation and data order come from its own data, not the seed alone."""
    write_data(tmp_path)
    ok = train_tiny(tmp_path, "ok", tiny_config())
    shuffled = train_tiny(tmp_path, "shuffled", tiny_config(broken="shuffle_tokens"))
    unpaired = train_tiny(tmp_path, "unpaired", tiny_config(broken="unpaired"))
    assert shuffled["final_bpb"]["ev"] > ok["final_bpb"]["ev"] + 0.5
    assert unpaired["final_bpb"] != ok["final_bpb"]
    again = train_tiny(tmp_path, "unpaired2", tiny_config(broken="unpaired"))
    assert again["final_bpb"] == unpaired["final_bpb"]  # still deterministic: seeded by seed and data
    with pytest.raises(ValueError, match=r"train.broken: 'oops'; valid: '', 'shuffle_tokens', 'unpaired'"):
        train_tiny(tmp_path, "bad", tiny_config(broken="oops"))
