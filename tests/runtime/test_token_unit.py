"""One rule for a run's token unit (the export's tokenizer, else the proxy's fixed file, else whitespace
words), named in the manifest, in the stage table's header and in the summary, with the yields' unit said
where it differs; and the summary's cost line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from curate.runtime.tokens import WHITESPACE_WORDS, token_counter, unit_label
from curate.verbs.summary import cost_line, stage_table, tokens_line
from tests.helpers import pipeline, write_inputs


def _tokenizer(path: Path) -> Path:
    from curate.instrument.tokenizer import train_bpe

    return train_bpe(["Doc one from file zero. End."] * 50, vocab_size=300, min_frequency=1).save(path)


def test_the_export_tokenizer_then_the_proxys_file_then_words(tmp_path: Path) -> None:
    tok = str(_tokenizer(tmp_path / "tok.json"))
    assert token_counter(None).unit == WHITESPACE_WORDS
    assert token_counter(None, proxy_tokenizer=tok).unit == "tokenizer:tok.json"
    assert token_counter({"tokenizer": "proxy"}, proxy_tokenizer=tok).unit == "tokenizer:tok.json"
    assert token_counter({"tokenizer": "proxy"}).unit == WHITESPACE_WORDS  # trained after the stages
    assert token_counter({"tokenizer": "gpt2"}, proxy_tokenizer=tok).unit == "tokenizer:gpt2"


def test_a_missing_proxy_tokenizer_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"proxy\.tokenizer\.path"):
        token_counter(None, proxy_tokenizer=str(tmp_path / "nope.json"))


def test_a_unit_in_a_word() -> None:
    assert unit_label("tokenizer:gpt2") == "gpt2"
    assert unit_label("tokenizer:proxy_tokenizer_python_docs.json") == "proxy_tokenizer_python_docs.json"
    assert unit_label(WHITESPACE_WORDS) == "words"


def test_a_run_with_a_fixed_proxy_tokenizer_counts_its_tokens(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    tok = _tokenizer(tmp_path / "tok.json")
    write_inputs(tmp_path / "in")
    text = pipeline(tmp_path / "in") + f"proxy:\n  tokenizer: {{path: {tok}}}\n"
    m = run_pipeline(parse_pipeline(text), tmp_path / "run", engine=InlineEngine(), phases=False)
    assert m["tokens_unit"] == "tokenizer:tok.json"
    counter = Tokenizer.from_file(str(tok))
    texts = [
        json.loads(line)["text"]
        for f in sorted((tmp_path / "in").glob("*.jsonl"))
        for line in f.read_text().splitlines()
        if line.startswith("{") and line != "{broken"
    ]
    read = next(s for s in m["stages"] if s["name"] == "read")
    assert read["tokens_out"] == sum(len(counter.encode(t, add_special_tokens=False).ids) for t in texts)
    assert stage_table(m).splitlines()[0].split("  ").count("tokens out (tok.json)") == 1


MANIFEST = {
    "tokens_unit": "tokenizer:gpt2",
    "config": {"proxy": {"tokenizer": {"path": "models/proxy_tokenizer_python_docs.json"}}},
    "phases": {"proxy": {"wall_s": 300.0, "cpu_s": 551.25}, "export": {"wall_s": 5.0, "cpu_s": 4.5}},
    "cpu": {"stages_s": 40.0, "io_s": 2.25, "target_s": 16.5, "total_s": 58.75},
}


def test_the_summary_says_that_yields_count_the_proxys_tokens_when_the_tables_do_not() -> None:
    assert tokens_line(MANIFEST) == (
        "tokens counted as tokenizer:gpt2; yield and goodput count the proxy tokenizer's tokens "
        "(its multiplier is measured in them)"
    )
    same = MANIFEST | {"tokens_unit": "tokenizer:proxy_tokenizer_python_docs.json"}
    assert tokens_line(same) == "tokens counted as tokenizer:proxy_tokenizer_python_docs.json"
    no_proxy = {"tokens_unit": WHITESPACE_WORDS, "config": {}}
    assert tokens_line(no_proxy) == "tokens counted as whitespace_words"


def test_the_cost_line_is_every_cpu_second_of_the_run() -> None:
    assert cost_line(MANIFEST) == (
        "cost: curation 58.8 CPU-s (stages 40.0, part I/O 2.2, target 16.5); proxy 551.2, export 4.5; "
        "workers' CPU included"
    )
    assert cost_line({"stages": []}) is None  # a manifest from before the cpu block
