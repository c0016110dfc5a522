"""decontaminate_v1: planted eval items are caught whatever the case/wrapping; summary names the items."""

from __future__ import annotations

import gzip
import json

import pytest

from curate.dedup.decontam import Decontaminate, DecontamParams, item_texts
from tests.dedup.dedup_helpers import column, run_global
from tests.helpers import corpora_path, make_table

ITEM = (
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
    "for her friends every day with four."
)


@pytest.fixture
def eval_file(tmp_path):
    path = tmp_path / "evalset.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"context": ITEM, "answer": "18"}) + "\n")
        f.write(
            json.dumps(
                {
                    "query": "Question: Which gas do plants take in from the air?",
                    "choices": ["carbon dioxide", "oxygen"],
                    "gold": 0,
                }
            )
            + "\n"
        )
    return str(path)


def test_item_texts_reads_fields_and_drops_labels():
    assert item_texts({"query": "Question: Why?", "choices": ["a b", "c"], "gold": 1}) == [
        "  Why?",
        "a b",
        "c",
    ]


def test_planted_variants_rejected_and_counted(eval_file, inline_engine, tmp_path):
    texts = [
        f"Some intro text. {ITEM} Some outro.",  # verbatim, mid-document
        "prefix " + ITEM.lower().replace(" ", "\n  ") + " suffix",  # lower-cased, re-wrapped
        "which gas do plants take in from the air? a quiz.",  # short field (9 words) matched whole
        "Janet's ducks lay 16 eggs per day. Nothing else in common with the item here.",  # 7 shared words only
    ]
    stage = Decontaminate(DecontamParams(eval_paths=[eval_file]))
    parts, state = run_global(stage, [make_table(texts)], inline_engine, tmp_path)
    r = "decontaminate_v1:contaminated"
    assert column(parts, "__reject__") == [r, r, r, None]
    facts = stage.summary(state)
    assert facts["hits"] == {"evalset:0": 2, "evalset:1": 1}
    assert facts["docs_contaminated"] == 3
    assert facts["items_hit_by_set"] == {"evalset": 2}


def test_strip_mode_removes_the_span(eval_file, inline_engine, tmp_path):
    body = "A long article about farming and what ducks need to stay healthy through the winter. " * 4
    stage = Decontaminate(DecontamParams(eval_paths=[eval_file], mode="strip", min_chars=100))
    parts, _ = run_global(stage, [make_table([body + ITEM + " The end.", ITEM])], inline_engine, tmp_path)
    text = column(parts, "text")
    assert "ducks lay 16 eggs" not in text[0]
    assert text[0].startswith(body.strip())
    assert text[0].endswith("The end.")
    assert column(parts, "__reject__") == [None, "decontaminate_v1:too_short_after_strip"]


def test_missing_eval_files_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="no eval file matches"):
        Decontaminate(DecontamParams(eval_paths=[str(tmp_path / "none*.jsonl")])).ensure_setup()


@pytest.mark.corpora
def test_real_eval_sets_load_every_layout():
    corpora_path("eval", "gsm8k.jsonl.gz")
    stage = Decontaminate(DecontamParams(eval_paths=[str(corpora_path("eval")) + "/*.jsonl.gz"]))
    stage.ensure_setup()
    sets = {n.split(":")[0] for n in stage._names}
    assert len(sets) == 14
    assert len(stage._grams) > 500_000


def test_gram_index_counts_and_owners():
    """15 words -> 3 13-grams; a 9-word field -> one whole-field gram; a 5-word field -> none; a gram two
    texts share is kept once, owned by the smaller owner."""
    import numpy as np
    import pyarrow as pa

    from curate.dedup import _common as c

    long = " ".join(f"w{i}" for i in range(15))
    texts = [long, "a b c d e f g h i", "too short to match x", long]
    tokens, off = c.word_hashes(pa.array(texts, pa.string()))
    g, owner, lengths = c.gram_index(tokens, off, np.array([2, 0, 1, 1]), ngram=13, min_words=8)
    assert lengths == [9, 13]
    assert len(g) == 4
    assert bool(np.all(g[1:] > g[:-1]))
    h13, _ = c.ngram_hashes(tokens[: off[1]], off[:2], 13, short=False)
    assert sorted(owner[np.isin(g, h13)].tolist()) == [1, 1, 1]  # texts 0 (owner 2) and 3 (owner 1)
    assert owner[~np.isin(g, h13)].tolist() == [0]
