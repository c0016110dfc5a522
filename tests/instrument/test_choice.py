"""Benchmark items as targets: every record shape, exact masks and bytes, gold bpb and accuracy."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from curate.core.errors import PhaseError
from curate.instrument.choice import accuracy, build_rows, gold_bpb, parse_item, read_items
from curate.instrument.tokenizer import train_bpe


def test_every_gauntlet_shape_parses():
    a = parse_item({"query": "Q: sky?", "choices": ["blue", "red"], "gold": 0}, "f:1")
    assert (a.contexts, a.continuations, a.gold) == (["Q: sky?"] * 2, ["blue", "red"], 0)
    w = parse_item({"context_options": ["A so A", "A so B"], "continuation": "won.", "gold": 1}, "f:2")
    assert (w.contexts, w.continuations, w.gold) == (["A so A", "A so B"], ["won.", "won."], 1)
    lam = parse_item({"context": "the end of the", "continuation": "day"}, "f:3")
    assert (lam.contexts, lam.continuations, lam.gold) == (["the end of the"], ["day"], 0)
    tq = parse_item({"context": "Question: x?\nAnswer:", "answer": "Onion", "aliases": ["Onions"]}, "f:4")
    assert tq.continuations == ["Onion"]


def test_records_without_gold_or_context_are_refused_with_file_and_line(tmp_path):
    with pytest.raises(PhaseError, match=r"^f:7: a record with choices has no gold"):
        parse_item({"query": "q", "choices": ["a", "b"]}, "f:7")
    with pytest.raises(PhaseError, match=r"gold=2 is not an index into its 2 choices"):
        parse_item({"query": "q", "choices": ["a", "b"], "gold": 2}, "f:1")
    p = tmp_path / "x.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write(json.dumps({"query": "q", "choices": ["a"], "gold": 0}) + "\n" + "{bad\n")
    with pytest.raises(PhaseError, match=r"x.jsonl.gz:2: not JSON"):
        read_items(p)
    assert len(read_items(p, max_items=1)) == 1


@pytest.fixture(scope="module")
def tok():
    return train_bpe(["the cat sat on the mat. the dog ran. blue sky, red sun."] * 20, vocab_size=300)


def test_rows_mask_exactly_the_continuation_tokens_and_bytes(tok):
    items = [parse_item({"query": "the cat", "choices": ["sat on the mat.", "ran."], "gold": 0}, "f:1")]
    rows = build_rows("t", items, tok, seq_len=16)
    assert rows.windows.shape == (2, 17)
    assert rows.mask.shape == (2, 16)
    assert rows.is_gold.tolist() == [True, False]
    assert rows.item.tolist() == [0, 0]
    for r, cont in enumerate([" sat on the mat.", " ran."]):
        ids = tok.encode_batch([cont])[0]
        ctx = tok.encode_batch(["the cat"])[0]
        assert rows.windows[r, 0] == tok.eos_id
        assert rows.windows[r, 1 : 1 + len(ctx)].tolist() == ctx.tolist()
        targets = rows.windows[r, 1:][rows.mask[r]]
        assert targets.tolist() == ids.tolist()
        assert rows.cont_bytes[r] == len(cont.encode("utf-8"))


def test_long_contexts_are_cut_from_the_left(tok):
    items = [parse_item({"context": "the cat sat on the mat. " * 10, "continuation": "blue sky"}, "f:1")]
    rows = build_rows("t", items, tok, seq_len=8)
    cont = tok.encode_batch(["blue sky"])[0]  # the context ends in a space: no delimiter is added
    assert rows.mask[0].sum() == len(cont)
    assert rows.windows[0, 0] == tok.eos_id
    assert rows.windows[0, -len(cont) :].tolist() == cont.tolist()  # the continuation ends the row


def test_gold_bpb_and_length_normalised_accuracy():
    from curate.instrument.choice import ChoiceRows

    rows = ChoiceRows(
        name="t",
        windows=np.zeros((5, 3), dtype=np.int64),
        mask=np.ones((5, 2), dtype=bool),
        item=np.array([0, 0, 1, 1, 2]),
        is_gold=np.array([True, False, False, True, True]),
        cont_bytes=np.array([10, 2, 4, 4, 8]),
    )
    nll = np.array([5.0, 2.0, 1.0, 3.0, 4.0])
    # gold rows 0, 3, 4: (5 + 3 + 4) nats over 22 bytes
    assert gold_bpb(nll, rows) == pytest.approx(12 / (math.log(2) * 22))
    # item 0: 0.5 vs 1.0 per byte -> gold wins; item 1: 0.25 vs 0.75 -> gold loses; item 2 has one choice.
    assert accuracy(nll, rows) == 0.5
    gold = rows.gold()  # gold rows only: every item has one row, so no accuracy
    assert gold.item.tolist() == [0, 1, 2]
    assert accuracy(nll[rows.is_gold], gold) is None
