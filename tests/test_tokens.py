"""Tokens in the accounting: exact per-stage counts, whitespace words by default, a configured tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from curate.core.engine import InlineEngine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline
from curate.runtime.tokens import WHITESPACE_WORDS, TokenCounter, token_counter, whitespace_word_counts
from curate.verbs.summary import format_run_summary


def make_table(texts: list[str]) -> pa.Table:
    return pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts, "source": ["t"] * len(texts)})


DOCS = ["one two  three", "four\tfive", "  six\n", "seven eight nine ten"]


def _pipeline(d: Path, export: str = "") -> str:
    d.mkdir(parents=True, exist_ok=True)
    (d / "in.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(DOCS))
    )
    return f"""\
name: tok
input: {{path: {d}/in.jsonl, format: jsonl}}
stages:
  - transform: normalize_v1
  - select:
      - {{column: text, equals: "four five", reason: not_four_five}}
{export}"""


def test_whitespace_words_are_counted_exactly() -> None:
    counter = TokenCounter()
    assert counter.unit == WHITESPACE_WORDS
    assert counter.count(make_table(DOCS)) == 10
    assert counter.count(pa.table({"id": ["a", "b"], "text": [None, " \n "], "source": ["s", "s"]})) == 0
    assert counter.count(make_table(["x"]).slice(0, 0)) == 0


def test_whitespace_words_are_unicode_whitespace_runs_as_the_regex_counts() -> None:
    # every Unicode White_Space character separates words; \x1c-\x1f (str.isspace only), U+200B and
    # U+FEFF do not; a text's first word counts even when the text before it ends mid-word
    texts = [
        "a\x85b\xa0c\u1680d\u2000e\u200af\u2028g\u2029h\u202fi\u205fj\u3000k",
        "x\x1cy\x1fz\u200bw\ufeffv",
        "\u3000\u3000",
        None,
        "",
        "tail",
        "é中😀 Â\u00e2\u2019s",
        "\u2000lead and trail\u3000",
    ]
    want = [11, 1, 0, 0, 0, 1, 2, 3]
    arr = pa.array(texts, pa.string())
    assert whitespace_word_counts(arr).tolist() == want
    assert whitespace_word_counts(arr.slice(5)).tolist() == want[5:]
    assert whitespace_word_counts(pa.chunked_array([arr, arr])).tolist() == want * 2
    assert whitespace_word_counts(arr.cast(pa.large_string())).tolist() == want
    import polars as pl

    regex = pl.Series(arr).fill_null("").str.count_matches(r"\S+").to_list()
    assert regex == want  # the definition the numpy count reproduces


def test_every_stage_row_has_tokens_in_and_out(tmp_path: Path) -> None:
    m = run_pipeline(parse_pipeline(_pipeline(tmp_path / "in")), tmp_path / "run", engine=InlineEngine())
    assert m["tokens_unit"] == "whitespace_words"
    got = {s["name"]: (s["tokens_in"], s["tokens_out"]) for s in m["stages"]}
    assert got == {"read": (10, 10), "normalize_v1": (10, 10), "select": (10, 2)}
    text = format_run_summary(m, tmp_path / "run")
    assert "tokens counted as whitespace_words" in text
    header = text.splitlines()[1]
    assert "tokens out" in header
    select_row = next(line for line in text.splitlines() if line.startswith("select"))
    assert select_row.split()[:7] == ["select", "4", "1", "3", "9", "B", "2"]  # ..., bytes out, tokens out


def test_a_configured_tokenizer_counts_instead(tmp_path: Path) -> None:
    from curate.instrument.tokenizer import train_bpe

    tok_path = train_bpe(DOCS * 50, vocab_size=300, min_frequency=1).save(tmp_path / "tok.json")
    cfg = parse_pipeline(_pipeline(tmp_path / "in", f"export: {{formats: [parquet], tokenizer: {tok_path}}}"))
    m = run_pipeline(cfg, tmp_path / "run", engine=InlineEngine(), phases=False)
    assert m["tokens_unit"] == "tokenizer:tok.json"
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_path))
    normalized = ["one two three", "four five", "six", "seven eight nine ten"]
    expect_in = sum(len(tok.encode(t, add_special_tokens=False).ids) for t in normalized)
    select = next(s for s in m["stages"] if s["name"] == "select")
    assert select["tokens_in"] == expect_in
    assert select["tokens_out"] == len(tok.encode("four five", add_special_tokens=False).ids)


def test_a_missing_tokenizer_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"export.tokenizer: .*nope.json does not exist"):
        token_counter({"tokenizer": str(tmp_path / "nope.json")})


def test_per_row_counts_sum_to_the_batch_count() -> None:
    counter = TokenCounter()
    table = pa.table({"id": ["a", "b", "c"], "text": ["one two", None, " x\ty z "], "source": ["s"] * 3})
    assert counter.per_row(table.column("text")).tolist() == [2, 0, 3]
    assert counter.count(table) == 5
    assert counter.per_row(pa.chunked_array([], pa.string())).tolist() == []


def test_the_row_tally_recounts_only_rewritten_text() -> None:
    from curate.runtime.segments import _RowTally

    tally = _RowTally(TokenCounter())
    t = make_table(["a b", "ccc", "d e f"])
    assert [x.tolist() for x in tally.of(t)] == [[3, 3, 5], [2, 1, 3]]
    scored = t.append_column("score", pa.array([1, 2, 3]))  # same text: the counts are reused
    assert [x.tolist() for x in tally.of(scored)] == [[3, 3, 5], [2, 1, 3]]

    kept = scored.filter(pa.array([True, False, True]))
    tally.keep(kept, np.array([True, False, True]))
    assert [x.tolist() for x in tally.of(kept)] == [[3, 5], [2, 3]]
    rewritten = kept.set_column(1, "text", pa.array(["a", "d e f g"]))
    assert [x.tolist() for x in tally.of(rewritten)] == [[1, 7], [1, 4]]


def test_the_row_tally_counts_only_the_rows_a_transform_changed() -> None:
    from curate.runtime.segments import _RowTally

    class Spy(TokenCounter):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[list[str | None]] = []

        def per_row(self, text: pa.ChunkedArray | pa.Array) -> np.ndarray:
            self.seen.append(text.to_pylist())
            return super().per_row(text)

    spy = Spy()
    tally = _RowTally(spy)
    t = make_table(["a b", "ccc", "d e f", "g"])
    tally.of(t)
    same_rows = t.set_column(1, "text", pa.array(["a b", "c c", None, "g"]))  # rows 1 and 2 rewritten
    assert [x.tolist() for x in tally.of(same_rows)] == [[3, 3, 0, 1], [2, 2, 0, 1]]
    assert spy.seen == [["a b", "ccc", "d e f", "g"], ["c c", None]]
    fewer = t.slice(0, 3)  # another row count: everything is counted again
    assert [x.tolist() for x in tally.of(fewer)] == [[3, 3, 5], [2, 1, 3]]
    assert spy.seen[-1] == ["a b", "ccc", "d e f"]


def test_a_relative_tokenizer_resolves_by_the_one_rule_for_paths(tmp_path: Path, monkeypatch) -> None:
    """Given here unresolved (the pipeline's load resolves it first), a relative path is looked for in the
    working directory, then the repository root: the counter holds where it was found."""
    from curate.io.paths import REPO_ROOT

    monkeypatch.chdir(tmp_path)
    shipped = "models/proxy_tokenizer_python_docs.json"
    assert token_counter({"tokenizer": shipped}).tokenizer == str(REPO_ROOT / shipped)
    with pytest.raises(FileNotFoundError) as e:
        token_counter({"tokenizer": "models/nope.json"})
    assert str(e.value) == (
        f"export.tokenizer: models/nope.json does not exist (looked for {tmp_path / 'models/nope.json'}, "
        f"{REPO_ROOT / 'models/nope.json'}); give a Hugging Face tokenizer.json or remove the key (tokens are "
        "then counted as whitespace words)"
    )
