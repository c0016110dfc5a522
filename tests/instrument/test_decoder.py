"""The hand-written proxy decoder is transformers' ``LlamaForCausalLM`` at our settings: same initial weights
at a seed, same forward and gradients (to float rounding), same trained run, and its saved folder loads
back through ``LlamaForCausalLM.from_pretrained`` (the perplexity scorer's path)."""

from __future__ import annotations

import json

import pytest
import torch

from curate.instrument import train as train_module
from curate.instrument.decoder import ProxyLM, build_model
from curate.instrument.model_config import ModelConfig
from tests.instrument.tiny_trainer import tiny_config, train_tiny, write_data

CFG = ModelConfig(depth=2, vocab_size=96, seq_len=24)


def _pair(seed: int = 0) -> tuple[ProxyLM, torch.nn.Module]:
    torch.manual_seed(seed)
    new = build_model(CFG)
    torch.manual_seed(seed)
    return new, CFG.build_reference()


def test_build_draws_the_reference_initialisation_under_the_same_names():
    new, ref = _pair(seed=5)
    assert isinstance(new, ProxyLM)
    sd_new, sd_ref = new.state_dict(), ref.state_dict()
    assert list(sd_new) == list(sd_ref)
    assert all(torch.equal(sd_new[k], sd_ref[k]) for k in sd_ref)
    assert [n for n, _ in new.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert new.lm_head.weight is new.model.embed_tokens.weight  # tied: one parameter for the optimizer
    assert sum(p.numel() for p in new.parameters()) == CFG.param_counts()["params"]
    torch.manual_seed(6)
    assert not torch.equal(build_model(CFG).lm_head.weight, new.lm_head.weight)


# the configured context, shorter, longer (tables made on the fly)
@pytest.mark.parametrize("seq", [24, 7, 40])
def test_forward_and_gradients_equal_llama_for_causal_lm(seq):
    new, ref = _pair()
    x = torch.randint(0, CFG.vocab_size, (3, seq), generator=torch.Generator().manual_seed(1))
    h_new = new.model(input_ids=x).last_hidden_state
    h_ref = ref.model(input_ids=x).last_hidden_state
    torch.testing.assert_close(h_new, h_ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(new(input_ids=x).logits, ref(input_ids=x).logits, rtol=0, atol=1e-5)
    (h_new.square().mean()).backward()
    (h_ref.square().mean()).backward()
    grads_ref = dict(ref.named_parameters())
    for name, p in new.named_parameters():
        torch.testing.assert_close(p.grad, grads_ref[name].grad, rtol=1e-4, atol=1e-6, msg=name)


def test_saved_folder_loads_in_llama_for_causal_lm_with_the_same_logits(tmp_path, capfd):
    from transformers import LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    new, _ = _pair(seed=2)
    with torch.no_grad():  # move the weights off their initial values, tie included
        for p in new.parameters():
            p.add_(0.01 * torch.randn_like(p))
    assert hf_logging.is_progress_bar_enabled()
    new.save_pretrained(tmp_path / "m", safe_serialization=True)
    assert "Writing model shards" not in capfd.readouterr().err  # no progress bar per proxy run
    assert hf_logging.is_progress_bar_enabled()  # the caller's setting is restored
    assert json.loads((tmp_path / "m" / "config.json").read_text())["tie_word_embeddings"] is True
    loaded = LlamaForCausalLM.from_pretrained(tmp_path / "m").eval()
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=x).logits, new(input_ids=x).logits, rtol=0, atol=1e-5)
    back = ProxyLM(CFG)
    back.load_state_dict(loaded.state_dict())
    assert all(
        torch.equal(a, b) for a, b in zip(back.state_dict().values(), new.state_dict().values(), strict=True)
    )


def _losses(path):
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    return [r["loss"] for r in recs if r["type"] == "train"]


def test_a_trained_run_is_deterministic_and_matches_the_reference_model(tmp_path, monkeypatch):
    # fp32 on every host: with ``autocast: auto`` a CPU with native bf16 (AVX512-BF16) trains in bf16, where two
    # implementations of the same maths round apart by far more than 1e-4 over 24 steps.
    write_data(tmp_path)
    fp32 = dict(autocast="off")
    a = train_tiny(tmp_path, "a", tiny_config(**fp32))
    b = train_tiny(tmp_path, "b", tiny_config(**fp32))
    assert a["final_bpb"] == b["final_bpb"]
    assert _losses(tmp_path / "a" / "metrics.jsonl") == _losses(tmp_path / "b" / "metrics.jsonl")
    # The same run with transformers' model (the trainer's model before the hand-written decoder): same maths,
    # float rounding apart.
    monkeypatch.setattr(train_module, "build_model", ModelConfig.build_reference)
    ref = train_tiny(tmp_path, "ref", tiny_config(**fp32))
    assert a["final_bpb"]["ev"] == pytest.approx(ref["final_bpb"]["ev"], rel=1e-4)
    assert _losses(tmp_path / "a" / "metrics.jsonl") == pytest.approx(
        _losses(tmp_path / "ref" / "metrics.jsonl"), rel=1e-4
    )


@pytest.mark.slow  # torch.compile: tens of seconds the first time on a shared CPU
def test_a_compiled_run_is_deterministic_and_matches_the_eager_run(tmp_path):
    write_data(tmp_path)
    # 8 steps: compilation, not training, is the cost here; fp32 on every host (see the test above)
    cfg = dict(tokens=32 * 8 * 8, n_evals=2, autocast="off")
    eager = train_tiny(tmp_path, "eager", tiny_config(**cfg))
    a = train_tiny(tmp_path, "a", tiny_config(compile=True, **cfg))
    b = train_tiny(tmp_path, "b", tiny_config(compile=True, **cfg))
    assert a["final_bpb"] == b["final_bpb"]
    assert _losses(tmp_path / "a" / "metrics.jsonl") == _losses(tmp_path / "b" / "metrics.jsonl")
    assert a["final_bpb"]["ev"] == pytest.approx(eager["final_bpb"]["ev"], rel=1e-4)
    assert _losses(tmp_path / "a" / "metrics.jsonl") == pytest.approx(
        _losses(tmp_path / "eager" / "metrics.jsonl"), rel=1e-4
    )


def _qkv(dtype, heads=2, seq=40, dim=64):
    g = torch.Generator().manual_seed(3)
    return [torch.randn(3, heads, seq, dim, generator=g).to(dtype).requires_grad_() for _ in range(3)]


def test_cpu_bf16_attention_is_written_out_and_agrees_with_fp32_flash_attention(monkeypatch):
    import torch.nn.functional as F

    from curate.instrument import decoder

    q, k, v = _qkv(torch.float32)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref.square().sum().backward()
    ref_grads = [t.grad for t in (q, k, v)]
    qb, kb, vb = (t.detach().to(torch.bfloat16).requires_grad_() for t in (q, k, v))

    def _no_flash(*a, **kw):
        raise AssertionError("CPU bf16 attention must not go through the flash kernel")

    monkeypatch.setattr(decoder.F, "scaled_dot_product_attention", _no_flash)
    out = decoder.causal_attention(qb, kb, vb)
    assert out.dtype == torch.bfloat16
    assert out.shape == ref.shape
    # bf16 has 8 significant bits: agreement to its precision, values and gradients
    torch.testing.assert_close(out.float(), ref, rtol=0, atol=0.05)
    out.float().square().sum().backward()
    for got, want in zip((qb.grad, kb.grad, vb.grad), ref_grads, strict=True):
        assert (got.float() - want).abs().max() <= 0.05 * want.abs().max()
    # causal: position 0 sees only itself, so its output is its own value vector
    torch.testing.assert_close(out[:, :, 0].float(), vb[:, :, 0].float(), rtol=0, atol=0)


def test_fp32_attention_is_torch_flash_attention_exactly():
    import torch.nn.functional as F

    from curate.instrument.decoder import causal_attention

    q, k, v = _qkv(torch.float32, seq=24)
    assert torch.equal(causal_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, is_causal=True))
