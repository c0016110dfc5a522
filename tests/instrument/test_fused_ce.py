"""The fused, chunked head + cross-entropy equals ``F.cross_entropy(h @ W.T, y)`` in value and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from curate.instrument import device as train_mod
from curate.instrument.device import use_autocast as _use_autocast
from curate.instrument.fused_ce import linear_cross_entropy
from curate.instrument.train_config import TrainConfig


def _inputs(n: int = 37, d: int = 16, v: int = 50, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, d, generator=g, dtype=torch.float64).float().requires_grad_()
    w = (torch.randn(v, d, generator=g) * 0.3).requires_grad_()
    y = torch.randint(0, v, (n,), generator=g)
    return h, w, y


def _reference(h, w, y, scale: float = 1.0):
    h0, w0 = h.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    loss = F.cross_entropy(h0 @ w0.t(), y)
    (loss * scale).backward()
    return loss.detach(), h0.grad, w0.grad


@pytest.mark.parametrize("chunk", [1, 8, 37, 1000])  # 37 tokens: a ragged last chunk, one chunk, chunk > n
def test_fp32_matches_plain_cross_entropy_values_and_gradients(chunk):
    h, w, y = _inputs()
    ref_loss, ref_gh, ref_gw = _reference(h, w, y)
    loss = linear_cross_entropy(h, w, y, chunk=chunk)
    loss.backward()
    torch.testing.assert_close(loss.detach(), ref_loss, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(h.grad, ref_gh, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(w.grad, ref_gw, rtol=1e-5, atol=1e-7)


def test_upstream_gradient_scales_both_gradients_as_in_gradient_accumulation():
    h, w, y = _inputs()
    _, ref_gh, ref_gw = _reference(h, w, y, scale=0.25)
    (linear_cross_entropy(h, w, y, chunk=8) / 4).backward()
    torch.testing.assert_close(h.grad, ref_gh, rtol=1e-5, atol=1e-8)
    torch.testing.assert_close(w.grad, ref_gw, rtol=1e-5, atol=1e-8)


def test_bf16_matmuls_stay_within_bf16_rounding_of_fp32():
    h, w, y = _inputs(n=64, d=32, v=200)
    ref_loss, ref_gh, ref_gw = _reference(h, w, y)
    loss = linear_cross_entropy(h, w, y, chunk=16, mm_dtype=torch.bfloat16)
    loss.backward()
    assert loss.dtype == torch.float32
    assert w.grad.dtype == torch.float32
    assert abs(float(loss.detach()) - float(ref_loss)) < 0.01 * float(ref_loss)
    assert float((h.grad - ref_gh).abs().max()) < 0.02 * float(ref_gh.abs().max())
    assert float((w.grad - ref_gw).abs().max()) < 0.02 * float(ref_gw.abs().max())


def test_tied_weight_gradients_add_to_the_embedding_use():
    # The head weight is also the input embedding: autograd must sum both contributions.
    h, w, y = _inputs()
    ids = torch.tensor([3, 4, 3])
    w0 = w.detach().clone().requires_grad_()
    (F.embedding(ids, w0).sum() + F.cross_entropy(h.detach() @ w0.t(), y)).backward()
    (F.embedding(ids, w).sum() + linear_cross_entropy(h.detach(), w, y, chunk=5)).backward()
    torch.testing.assert_close(w.grad, w0.grad, rtol=1e-5, atol=1e-7)


def test_shape_errors_name_the_shapes():
    h, w, y = _inputs()
    with pytest.raises(ValueError, match=r"got \(37, 16\), \(36,\)"):
        linear_cross_entropy(h, w, y[:-1])


def test_auto_autocast_follows_native_bf16_on_cpu(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(train_mod, "cpu_has_native_bf16", lambda: True)
    assert _use_autocast(TrainConfig(autocast="auto"), cpu) is True
    assert _use_autocast(TrainConfig(autocast="off"), cpu) is False
    monkeypatch.setattr(train_mod, "cpu_has_native_bf16", lambda: False)
    assert _use_autocast(TrainConfig(autocast="auto"), cpu) is False
    assert _use_autocast(TrainConfig(autocast="bf16"), cpu) is True
    with pytest.raises(ValueError, match="autocast='fp16'; valid: auto, bf16, off"):
        _use_autocast(TrainConfig(autocast="fp16"), cpu)


def test_bpb_through_the_fused_head_equals_bpb_through_logits():
    import numpy as np

    from curate.instrument.decoder import build_model
    from curate.instrument.evaluate import EvalSet, bpb
    from curate.instrument.model_config import ModelConfig

    torch.manual_seed(0)
    model = build_model(ModelConfig(depth=1, vocab_size=64, seq_len=16))

    class LogitsOnly(torch.nn.Module):  # hides .model / .lm_head: bpb takes the generic .logits path
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids)

    tokens = np.random.default_rng(1).integers(1, 64, size=300).astype(np.uint16)
    tokens[::37] = 0  # document ends
    es = EvalSet.from_shard("x", tokens, n_bytes=900, eos_id=0, seq_len=16)
    fused, plain = bpb(model, es, batch_size=4), bpb(LogitsOnly(model), es, batch_size=4)
    assert fused == pytest.approx(plain, rel=1e-6)
    assert 5.0 < fused * 900 / (300 - 9) < 7.0  # ~ln(64)/ln(2) bits per token from an untrained model


def test_a_target_probability_below_fp32_range_still_gives_the_exact_loss():
    from curate.instrument.fused_ce import linear_nll

    h = torch.tensor([[1.0], [1.0]], requires_grad=True)
    w = torch.tensor([[100.0], [-100.0]], requires_grad=True)  # logits (100, -100): p[1] = e^-200 underflows
    y = torch.tensor([1, 0])
    assert linear_nll(h.detach(), w.detach(), y).tolist() == pytest.approx([200.0, 0.0], abs=1e-4)
    loss = linear_cross_entropy(h, w, y)
    assert float(loss.detach()) == pytest.approx(100.0, abs=1e-4)
    _ref_loss, ref_gh, ref_gw = _reference(h, w, y)
    loss.backward()
    torch.testing.assert_close(h.grad, ref_gh)
    torch.testing.assert_close(w.grad, ref_gw)
