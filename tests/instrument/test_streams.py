"""Common random numbers: one document order per seed for every recipe, the null's and the planted
control's draws by id hash, shards that carry the id hashes."""

from __future__ import annotations

import numpy as np
import pytest

from curate.instrument.shards import (
    concat_shards,
    id_hashes,
    read_hids,
    read_shard,
    shuffle_words,
    subsample_shard,
    unit_hash,
)
from curate.instrument.streams import DocStream
from tests.instrument.stream_docs import CharTok as _Tok
from tests.instrument.stream_docs import docs as _docs


def _stream_docs(prefix, seed: int, n_tokens: int) -> list[int]:
    toks, idx, _ = read_shard(prefix)
    s = DocStream(toks, idx, read_hids(prefix), seq_len=8, seed=seed)
    return list(s.doc_tokens(n_tokens))


def test_a_recipes_stream_is_raws_with_its_dropped_documents_deleted(tmp_path):
    from curate.instrument.shards import write_shard

    ids, texts = _docs(40)
    write_shard(texts, tmp_path / "raw", _Tok(), ids=ids)
    keep = [i for i in range(40) if i % 3]  # a "recipe" that drops every third document
    write_shard([texts[i] for i in keep], tmp_path / "cur", _Tok(), ids=[ids[i] for i in keep])
    assert (read_hids(tmp_path / "raw") == id_hashes(ids)).all()
    for seed in (0, 1):
        raw = [h for h in _stream_docs(tmp_path / "raw", seed, 10**6)]
        cur = [h for h in _stream_docs(tmp_path / "cur", seed, 10**6)]
        kept = set(id_hashes([ids[i] for i in keep]).tolist())
        assert cur == [h for h in raw if h in kept]  # the same order, the dropped documents deleted
    assert _stream_docs(tmp_path / "raw", 0, 10**6) != _stream_docs(tmp_path / "raw", 1, 10**6)


def test_stream_batches_read_the_packed_order_front_to_back_across_epochs():
    toks = np.arange(1, 41, dtype=np.uint16)
    idx = np.array([0, 10, 25, 40])
    s = DocStream(toks, idx, np.array([7, 8, 9], dtype=np.uint64), seq_len=4, seed=0)
    order = s.order(0)
    packed = np.concatenate([toks[idx[i] : idx[i + 1]] for i in order])
    b = s.batch(0, 3).numpy()
    assert b.tolist() == [packed[0:5].tolist(), packed[4:9].tolist(), packed[8:13].tolist()]
    later = s.batch(12, 1).numpy()[0]  # tokens 48..52: past the first epoch's 40 tokens
    second = np.concatenate([toks[idx[i] : idx[i + 1]] for i in s.order(1)])
    assert later.tolist() == second[8:13].tolist()
    assert s.epochs_at(10) == pytest.approx(1.0)


def test_null_membership_is_an_id_hash_and_its_stream_is_raws_minus_the_others(tmp_path):
    from curate.instrument.shards import write_shard

    ids, texts = _docs(60)
    for k, part in enumerate((range(0, 30), range(30, 60))):  # two files, concatenated as the phase does
        write_shard([texts[i] for i in part], tmp_path / f"p{k}", _Tok(), ids=[ids[i] for i in part])
    meta = concat_shards([tmp_path / "p0", tmp_path / "p1"], tmp_path / "raw")
    assert meta["docs"] == 60
    assert (read_hids(tmp_path / "raw") == id_hashes(ids)).all()
    null = subsample_shard(tmp_path / "raw", tmp_path / "null", tokens=meta["tokens"] // 2, seed=3)
    assert meta["tokens"] // 2 <= null["tokens"] < meta["tokens"] // 2 + 100
    members = set(read_hids(tmp_path / "null").tolist())
    u = unit_hash(id_hashes(ids), 0x6E756C6C + 3)
    # the members are exactly the documents with the smallest membership hash
    assert members == set(id_hashes(ids)[np.argsort(u)[: len(members)]].tolist())
    raw = _stream_docs(tmp_path / "raw", 3, 10**6)
    assert _stream_docs(tmp_path / "null", 3, 10**6) == [h for h in raw if h in members]


def test_planted_corruption_shuffles_words_deterministically():
    text = "one two three four five six seven eight"
    out = shuffle_words(text, 12345)
    assert out != text
    assert sorted(out.split()) == sorted(text.split())
    assert shuffle_words(text, 12345) == out
    u = unit_hash(id_hashes([f"d{i}" for i in range(20000)]), 0x706C616E74)
    assert ((u >= 0) & (u < 1)).all()
    assert abs((u < 0.2).mean() - 0.2) < 0.01  # a uniform draw: 20% of documents below 0.2


def test_shuffling_moves_words_and_keeps_every_newline_and_indentation():
    """Words move across the whole document; every whitespace run (newlines, a blank line, the leading
    indentation of each line, a double space, a tab) stays where it was; (seed, key) fix the result."""
    text = "def f(x):\n    return x  + 1\n\n\tpass\n"
    assert shuffle_words(text, 7, 3) == "+ def\n    f(x): return  x 1\n\n\tpass\n"
    assert shuffle_words(text, 7, 4) == "1 f(x):\n    + def  return x\n\n\tpass\n"  # another seed
    assert shuffle_words(text, 8, 3) == "f(x): return\n    x +  def 1\n\n\tpass\n"  # another document
    assert shuffle_words(text, 7, 3) == shuffle_words(text, 7, 3)
    # a two-word document always changes (an identity permutation is drawn again); one that cannot stays
    assert shuffle_words("one two", 5) == "two one"
    assert [shuffle_words(t, 1) for t in ("a a", "solo", "", "  \n ")] == ["a a", "solo", "", "  \n "]


def test_letter_shuffling_scrambles_each_word_in_place_and_keeps_the_layout():
    """``letters``: each word's characters permuted within the word; word order, word lengths, every
    whitespace run stay; (seed, key) fix the result; a text that can change always does."""
    from curate.instrument.shards import CORRUPTIONS, shuffle_letters

    text = "def f(x):\n    return  x + 1\n\n\tpass\n"
    assert shuffle_letters(text, 7, 3) == "def :f(x)\n    uretnr  x + 1\n\n\tspas\n"
    assert shuffle_letters(text, 7, 4) == "def )(:fx\n    unretr  x + 1\n\n\tassp\n"  # another seed
    assert shuffle_letters(text, 8, 3) == "def (x):f\n    ertunr  x + 1\n\n\tsasp\n"  # another document
    assert shuffle_letters("ab", 5) == "ba"  # an identity permutation is drawn again
    assert [shuffle_letters(t, 1) for t in ("aa a", "", "  \n ", "x")] == ["aa a", "", "  \n ", "x"]
    assert {"words": shuffle_words, "letters": shuffle_letters} == CORRUPTIONS


def test_the_planted_shard_holds_exactly_the_nulls_documents(tmp_path):
    """``draw_from``: the planted control's shard (raw with some documents corrupted, so other token
    counts) drawn from raw's holds the null's documents for that seed, in the same order, and counts
    the corrupted ones among them."""
    from curate.instrument.shards import corrupted_mask, write_shard

    ids, texts = _docs(60)
    hids = id_hashes(ids)
    hit = corrupted_mask(hids, 0.5, 11)
    shuffled = [
        shuffle_words(t, int(h), 11) + " extra words" if c else t
        for t, h, c in zip(texts, hids, hit, strict=True)
    ]
    write_shard(texts, tmp_path / "raw", _Tok(), ids=ids)
    write_shard(shuffled, tmp_path / "planted", _Tok(), ids=ids)
    tokens = read_shard(tmp_path / "raw")[2]["tokens"] // 3
    null = subsample_shard(tmp_path / "raw", tmp_path / "null", tokens=tokens, seed=2)
    planted = subsample_shard(
        tmp_path / "planted",
        tmp_path / "p",
        tokens=tokens,
        seed=2,
        draw_from=tmp_path / "raw",
        corrupt=(0.5, 11),
    )
    members = read_hids(tmp_path / "null")
    assert read_hids(tmp_path / "p").tolist() == members.tolist()
    assert planted["docs"] == null["docs"]
    assert planted["tokens"] > null["tokens"]
    assert planted["corrupted"] == int(hit[np.isin(hids, members)].sum()) > 0
    assert planted["drawn_from"] == tmp_path.name
    assert "corrupted" not in null


def test_long_documents_enter_the_stream_in_pieces_spread_over_the_run():
    """``chunk``: a 200-token document among 40 short ones becomes 20 pieces of 10 tokens, each placed by
    its own key; every token is read once per epoch, and the pieces do not sit together."""
    lengths = [200] + [5] * 40
    idx = np.concatenate([[0], np.cumsum(lengths)])
    toks = np.arange(1, idx[-1] + 1, dtype=np.uint16)
    hids = id_hashes([f"d{i}" for i in range(len(lengths))])
    s = DocStream(toks, idx, hids, seq_len=4, seed=0, chunk=10)
    assert len(s.lengths) == 20 + 40
    assert s.lengths.tolist() == [10] * 20 + [5] * 40
    order = s.order(0).tolist()
    packed = np.concatenate([toks[s.starts[i] : s.starts[i] + s.lengths[i]] for i in order])
    assert sorted(packed.tolist()) == toks.tolist()  # each token once in an epoch
    where = [k for k, i in enumerate(order) if i < 20]  # the long document's pieces
    assert max(where) - min(where) > 30  # spread over the order, not consecutive
    # The whole-document stream keeps the long document in one piece.
    whole = DocStream(toks, idx, hids, seq_len=4, seed=0)
    assert len(whole.lengths) == 41
    # Accounting is per document: the long one's pieces add up under its id hash.
    counts = s.doc_tokens(int(idx[-1]))
    assert counts[int(hids[0])] == 200
    assert sum(counts.values()) == int(idx[-1])


def test_pieces_keep_common_random_numbers(tmp_path):
    """With pieces, a recipe's stream is still raw's with its dropped documents' pieces deleted."""
    from curate.instrument.shards import write_shard

    ids, texts = _docs(40)
    texts = [t * 6 for t in texts]  # 100-500 tokens: several pieces each
    write_shard(texts, tmp_path / "raw", _Tok(), ids=ids)
    keep = [i for i in range(40) if i % 3]
    write_shard([texts[i] for i in keep], tmp_path / "cur", _Tok(), ids=[ids[i] for i in keep])

    def pieces(prefix):
        toks, idx, _ = read_shard(prefix)
        s = DocStream(toks, idx, read_hids(prefix), seq_len=8, seed=1, chunk=64)
        return [(int(s.doc_hids[i]), int(s.starts[i] - idx[np.searchsorted(idx, s.starts[i], "right") - 1]))
                for i in s.order(0)]  # fmt: skip

    raw, cur = pieces(tmp_path / "raw"), pieces(tmp_path / "cur")
    kept = set(id_hashes([ids[i] for i in keep]).tolist())
    assert len(raw) > 80
    assert cur == [p for p in raw if p[0] in kept]
