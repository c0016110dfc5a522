"""Token exports: Megatron shards byte-identical to datatrove's, memmap shards decode to the texts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from curate.export.formats.megatron import read_megatron
from curate.export.formats.memmap import read_memmap
from curate.export.phase import run_phase
from curate.export.plan import split_order
from tests.export.export_fixtures import TEXTS, kept_rows, make_ctx, make_run
from tests.helpers import corpora_path

SECTION = {"formats": ["megatron", "memmap"], "shard_tokens": 200, "val_fraction": 0.1, "seed": 7}


def expected_shards(run_dir: Path, manifest: dict, fmt: str = "megatron") -> dict[str, list[list[str]]]:
    """Texts per shard, rebuilt independently: kept rows in file order, shuffled by the seed, cut by
    the document counts the manifest reports for each shard."""
    texts = kept_rows(run_dir).column("text").to_pylist()
    orders = split_order(len(texts), seed=manifest["seed"], val_fraction=manifest["val_fraction"])
    out: dict[str, list[list[str]]] = {}
    for split, order in orders.items():
        shards = sorted(
            {(f["shard"], f["docs"]) for f in manifest["files"] if f["format"] == fmt and f["split"] == split}
        )
        assert [s for s, _ in shards] == list(range(len(shards)))
        cuts = np.cumsum([0] + [n for _, n in shards])
        assert cuts[-1] == order.size
        out[split] = [[texts[i] for i in order[a:b]] for a, b in itertools.pairwise(cuts)]
    return out


def datatrove_megatron(texts: list[str], tokenizer: Path, out: Path, name: str) -> tuple[bytes, bytes]:
    """What datatrove 0.10.1's MegatronDocumentTokenizer writes for ``texts`` in this order."""
    from datatrove.data import Document
    from datatrove.pipeline.tokens import MegatronDocumentTokenizer

    step = MegatronDocumentTokenizer(
        output_folder=str(out),
        save_filename=name,
        tokenizer_name_or_path=str(tokenizer),
        eos_token="<|endoftext|>",
    )
    step.run(iter([Document(text=t, id=str(i)) for i, t in enumerate(texts)]), rank=0, world_size=1)
    prefix = out / f"{name}_00000_tokens"
    return prefix.with_suffix(".bin").read_bytes(), prefix.with_suffix(".idx").read_bytes()


def assert_megatron_matches_datatrove(run_dir: Path, tokenizer: Path, tmp_path: Path) -> int:
    export = run_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    compared = 0
    for split, shards in expected_shards(run_dir, manifest).items():
        for i, texts in enumerate(shards):
            bin_ref, idx_ref = datatrove_megatron(texts, tokenizer, tmp_path / "datatrove", f"{split}{i}")
            assert (export / "megatron" / f"{split}_{i:05d}.bin").read_bytes() == bin_ref
            assert (export / "megatron" / f"{split}_{i:05d}.idx").read_bytes() == idx_ref
            compared += 1
    return compared


def test_megatron_is_byte_identical_to_datatrove(run_dir, tiny_tokenizer, tmp_path):
    summary = run_phase(make_ctx(run_dir, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
    assert summary["docs"] == {"train": 54, "validation": 6}
    n = assert_megatron_matches_datatrove(run_dir, tiny_tokenizer, tmp_path)
    assert n == summary["files"] // 4
    assert n >= 4


def decode_docs(tokenizer: Path, docs: list[np.ndarray], eos_id: int) -> list[str]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    for d in docs:
        assert d.size >= 1
        assert int(d[-1]) == eos_id
    return tok.decode_batch([d[:-1].tolist() for d in docs], skip_special_tokens=False)


def test_memmap_and_megatron_decode_to_the_exported_texts(run_dir, tiny_tokenizer):
    run_phase(make_ctx(run_dir, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
    export = run_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    eos, dtype = manifest["tokenizer"]["eos_id"], manifest["tokenizer"]["dtype"]
    assert dtype == "uint16"
    assert manifest["megatron_dtype"] == "uint16"
    expected = expected_shards(run_dir, manifest, "memmap")
    all_texts = []
    for split, shards in expected.items():
        for i, texts in enumerate(shards):
            tokens, doc_idx = read_memmap(export / "memmap" / f"{split}_{i:05d}", dtype)
            assert doc_idx[0] == 0
            assert doc_idx[-1] == tokens.size
            docs = [np.asarray(tokens[a:b]) for a, b in itertools.pairwise(doc_idx)]
            assert decode_docs(export / manifest["tokenizer"]["file"], docs, eos) == texts
            mg = read_megatron(export / "megatron" / f"{split}_{i:05d}")
            assert [mg.document(j).tolist() for j in range(len(mg))] == [d.tolist() for d in docs]
            assert mg.doc_idx.tolist() == list(range(len(texts) + 1))
            entry = next(f for f in manifest["files"] if f["path"] == f"memmap/{split}_{i:05d}.bin")
            assert entry["tokens"] == tokens.size
            assert entry["docs"] == len(texts)
            all_texts += texts
    assert sorted(all_texts) == sorted(TEXTS)
    assert manifest["splits"]["train"]["tokens"] + manifest["splits"]["validation"]["tokens"] == sum(
        f["tokens"] for f in manifest["files"] if f["format"] == "memmap" and f["path"].endswith(".bin")
    )


def test_shards_respect_the_token_target(run_dir, tiny_tokenizer):
    run_phase(make_ctx(run_dir, {**SECTION, "tokenizer": str(tiny_tokenizer)}))
    manifest = json.loads((run_dir / "export" / "manifest.json").read_text())
    train = sorted({(f["shard"], f["tokens"]) for f in manifest["files"] if f.get("split") == "train"})
    # every shard but the last reaches the target; none overshoots by more than one document
    longest = max(len(t) for t in TEXTS) * 2  # byte-level BPE: tokens <= bytes; generous bound
    assert all(200 <= t < 200 + longest for _, t in train[:-1])
    assert 0 < train[-1][1] <= 200 + longest


def test_large_vocabulary_uses_int32_like_datatrove(tmp_path):
    """A vocabulary over 65,536 ids: datatrove writes int32 (dtype code 4); memmap uses uint32."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<|endoftext|>": 0, "[UNK]": 1} | {f"w{i}": i + 2 for i in range(70_000)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path / "big.json"
    tok.save(str(path))
    texts = [" ".join(f"w{(i * 7919 + j * 104729) % 70_000}" for j in range(i % 9)) for i in range(40)]
    run = make_run(tmp_path / "run", texts, parts=2)
    run_phase(make_ctx(run, {"formats": ["megatron", "memmap"], "tokenizer": str(path), "val_fraction": 0.1}))
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["tokenizer"]["dtype"] == "uint32"
    assert manifest["megatron_dtype"] == "int32"
    assert assert_megatron_matches_datatrove(run, path, tmp_path) == 2
    tokens, doc_idx = read_memmap(run / "export" / "memmap" / "train_00000", "uint32")
    assert tokens.max() > 65_535
    assert doc_idx.size == 37


@pytest.mark.corpora
def test_megatron_matches_datatrove_with_gpt_neox_on_web_text(tmp_path):
    from curate.io.readers import read_table

    table = read_table(str(corpora_path("web", "c4_en.jsonl.gz")), fmt="jsonl", limit=400)
    tokenizer = corpora_path("tokenizers", "gpt-neox-20b.json")
    run = make_run(tmp_path / "run", table.column("text").to_pylist(), parts=4)
    run_phase(
        make_ctx(
            run,
            {
                "formats": ["megatron", "memmap"],
                "tokenizer": str(tokenizer),
                "shard_tokens": 40_000,
                "val_fraction": 0.05,
                "seed": 1,
            },
        )
    )
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["tokenizer"]["vocab_size"] == 50_280
    assert assert_megatron_matches_datatrove(run, tokenizer, tmp_path) >= 3
