"""synthesize_v1 end to end on a tiny Llama the test trains itself (no hub), then the synthetic filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.scorers.degeneration import Degeneration
from curate.scorers.synthesize import Synthesize, SynthesizeParams
from tests.helpers import make_table
from tests.scorers.tiny_lm import build_tiny_lm


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    return build_tiny_lm(tmp_path_factory.mktemp("tiny_lm"))


def test_continue_end_to_end(tiny_lm):
    stage = Synthesize(
        SynthesizeParams(
            model=str(tiny_lm), mode="continue", prefix_chars=11, max_new_tokens=10, batch_size=2
        )
    )
    table = make_table(
        ["the cat sat on the mat all day", "the dog sat", "a cat and a dog"], ids=["x", "y", "z"]
    )
    out = stage.process(table)
    assert out.num_rows == 3
    assert out.column("id").to_pylist() == ["x#syn", "y#syn", "z#syn"]
    assert out.column("synthesize_v1.source_id").to_pylist() == ["x", "y", "z"]
    assert out.column("synthesize_v1.source_text").to_pylist() == table.column("text").to_pylist()
    gen = out.column("text").to_pylist()
    assert all(gen)
    assert gen != table.column("text").to_pylist()
    # The model learned its three sentences: continuations are made of their words.
    vocab = set(" ".join(["the cat sat on the mat.", "the dog sat on the log.", "a cat and a dog"]).split())
    words = [w for g in gen for w in g.replace(".", " .").split() if w != "."]
    assert sum(w.strip(".") in vocab for w in words) / len(words) > 0.8
    # Greedy decoding is deterministic, batch order does not matter.
    again = Synthesize(
        SynthesizeParams(
            model=str(tiny_lm), mode="continue", prefix_chars=11, max_new_tokens=10, batch_size=3
        )
    ).process(table)
    assert again.column("text").to_pylist() == gen
    # The synthetic filters run on the output.
    scored = Degeneration().process(out)
    assert scored.num_rows == 3
    assert "degeneration_v1.zlib_ratio" in scored.column_names


def test_rephrase_prompt_and_empty_generation(tiny_lm, monkeypatch):
    stage = Synthesize(
        SynthesizeParams(
            model=str(tiny_lm),
            prompt="Say: {text} ->",
            max_new_tokens=4,
            id_suffix="",
            keep_source_text=False,
        )
    )
    assert stage.prompts(["hi"]) == ["Say: hi ->"]
    real = stage.generate(stage.prompts(["the cat", "a dog"]))
    assert len(real) == 2
    assert all(isinstance(g, str) for g in real)
    monkeypatch.setattr(stage, "generate", lambda prompts: ["", "the mat."])
    out = stage.process(make_table(["the cat", "a dog"]))
    assert out.column("__reject__").to_pylist() == ["synthesize_v1:empty_generation", None]
    assert out.column("id").to_pylist() == ["d0", "d1"]
    assert "synthesize_v1.source_text" not in out.column_names


def test_params_are_checked():
    with pytest.raises(ValueError, match="local causal-LM folder"):
        Synthesize(SynthesizeParams())
    with pytest.raises(ValueError, match="must contain"):
        Synthesize(SynthesizeParams(model="m", prompt="no placeholder"))
    assert Synthesize(SynthesizeParams(model="m", num_gpus=0.5)).resources.num_gpus == 0.5


def test_pickles_without_model(tiny_lm):
    import pickle

    stage = Synthesize(SynthesizeParams(model=str(tiny_lm), mode="continue", max_new_tokens=3))
    stage.ensure_setup()
    clone = pickle.loads(pickle.dumps(stage))
    assert clone._model is None
    assert clone._tokenizer is None
    assert not clone._ready
    assert clone.process(make_table(["the cat"])).num_rows == 1
