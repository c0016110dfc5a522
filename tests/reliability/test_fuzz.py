"""Bad input, fuzzed (hypothesis): readers, normalize_v1 and every registered stage never crash and
account for every row: the same rows come out, and only rejected rows carry a reason, prefixed by the
stage (``quarantine:`` for readers).

Every registered stage is fuzzed: those that need a reference set get a small one, those that load a
model get a tiny one (built once per session); a stage that cannot be built fails the test, never
skips it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.core import schema
from curate.core.engine import InlineEngine
from curate.core.registry import SOURCES, STAGES, build_params
from curate.core.stage import GlobalStage, RowStage
from curate.io.sources import Shard
from curate.runtime.runner import ORDER, _with_order

FUZZ = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# Valid Unicode (Arrow strings are UTF-8, so no lone surrogates here; readers get those below), with
# control characters, odd spaces, combining marks and RTL text well represented; sometimes a huge line.
CHARS = st.characters(blacklist_categories=("Cs",))
ODD = st.sampled_from(
    [
        "\x00",
        "\x07",
        "\x1b[31m",
        "\u200b",
        "\ufeff",
        "\u00a0",
        "\u2028",
        "\r\n",
        "\r",
        "\t",
        "e\u0301",
        "\u05e9\u05dc\u05d5\u05dd",
        "\U0001f600",
        "\x85",
        "\ud7ff",
        " ",
    ]
)
TEXT = st.one_of(
    st.text(CHARS, max_size=200),
    st.lists(st.one_of(st.text(CHARS, max_size=8), ODD), max_size=40).map("".join),
    st.sampled_from(["", " ", "\n\n", "same text", "Same  text.", "same text"]),  # blanks and duplicates
    st.integers(50_000, 300_000).map(lambda n: "word " * (n // 5)),  # huge
)


def _table(texts: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"d{i}" for i in range(len(texts))], pa.string()),
            "text": pa.array(texts, pa.string()),
            "source": pa.array(["fuzz"] * len(texts), pa.string()),
        }
    )


def _check_accounted(out: pa.Table, n: int, prefix: str, id_suffix: str = "") -> None:
    assert out.num_rows == n
    assert out.column("id").to_pylist() == [f"d{i}{id_suffix}" for i in range(n)]
    if schema.REJECT in out.column_names:
        for r in out.column(schema.REJECT).to_pylist():
            assert r is None or r.startswith(prefix), r


# -- readers ---------------------------------------------------------------------------------------------
LINE = st.one_of(
    st.builds(lambda t: json.dumps({"id": None, "text": t}), TEXT),  # id None: the default id is used
    st.builds(
        lambda t: json.dumps({"text": t}, ensure_ascii=False), st.text(max_size=100)
    ),  # lone surrogates too
    st.builds(lambda t: json.dumps({"text": t}), st.text(max_size=100)),
    st.builds(
        lambda v: json.dumps({"text": v}), st.one_of(st.integers(), st.none(), st.lists(st.integers()))
    ),
    st.builds(json.dumps, st.one_of(st.integers(), st.text(max_size=20), st.lists(st.text(max_size=5)))),
    st.text(max_size=60),  # not JSON
).map(lambda s: s.encode("utf-8", "surrogatepass"))
RAW = st.one_of(LINE, st.binary(max_size=200), st.just(b""), st.just(b"\r"), st.just(b"\x00" * 5))


@FUZZ
@given(lines=st.lists(RAW, max_size=30), trailing_newline=st.booleans())
def test_jsonl_reader_accounts_for_every_line(lines: list[bytes], trailing_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    expected = _lines_in(data)  # a blank line too is a row (quarantined)
    src_cls = SOURCES.get("jsonl")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.jsonl"
        path.write_bytes(data)
        src = src_cls(build_params(src_cls.Params, {"path": str(path), "batch_docs": 7}, where="input"))
        tables = list(src.read(Shard(index=0, path=str(path), key="f.jsonl")))
    rows = [r for t in tables for r in t.select(["id", "text", schema.REJECT]).to_pylist()]
    assert len(rows) == expected
    assert len({r["id"] for r in rows}) == expected  # ids are unique
    for r in rows:
        assert isinstance(r["text"], str)
        if r[schema.REJECT] is not None:
            assert r[schema.REJECT].startswith("quarantine:"), r
        else:
            assert r["text"] != ""


def _lines_in(data: bytes) -> int:
    """Lines of a file as ``readline`` sees them: each ends at a newline, the last one may not."""
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n\n",
        b"\x00\xff\xfe" * 1000,
        b"\x1f\x8b\x08garbage",
        json.dumps({"text": "x" * 2_000_000}).encode(),
    ],
)
def test_jsonl_reader_edge_files(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    src_cls = SOURCES.get("jsonl")
    src = src_cls(build_params(src_cls.Params, {"path": str(path)}, where="input"))
    rows = [r for t in src.read(Shard(index=0, path=str(path), key="f.jsonl")) for r in t.to_pylist()]
    assert len(rows) == _lines_in(data)
    if data == b"\n\n\n":
        assert [r[schema.REJECT] for r in rows] == ["quarantine:blank_line"] * 3
    if data.startswith(b"\x00"):
        assert rows[0][schema.REJECT] == "quarantine:invalid_utf8"
    if data.startswith(b'{"text"'):
        assert rows[0][schema.REJECT] is None
        assert len(rows[0]["text"]) == 2_000_000


def test_jsonl_reader_truncated_gzip(tmp_path: Path) -> None:
    import gzip

    blob = gzip.compress(
        b"".join(json.dumps({"id": str(i), "text": f"doc {i}"}).encode() + b"\n" for i in range(500))
    )
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(blob[: len(blob) // 2])
    src_cls = SOURCES.get("jsonl")
    src = src_cls(build_params(src_cls.Params, {"path": str(path)}, where="input"))
    rows = [r for t in src.read(Shard(index=0, path=str(path), key="f.jsonl.gz")) for r in t.to_pylist()]
    assert rows[-1][schema.REJECT] == "quarantine:truncated_file"
    assert all(r[schema.REJECT] is None for r in rows[:-1])
    assert 0 < len(rows) - 1 < 500


# -- normalize_v1 ------------------------------------------------------------------------------------------
@FUZZ
@given(texts=st.lists(TEXT, max_size=20))
def test_normalize_accounts_for_every_row(texts: list[str]) -> None:
    stage = STAGES.get("normalize_v1")()
    out = stage.process(_table(texts))
    _check_accounted(out, len(texts), "normalize_v1:")
    reasons = out.column(schema.REJECT).to_pylist()
    for text, r in zip(out.column("text").to_pylist(), reasons, strict=True):
        assert (r == "normalize_v1:empty") == (text == "")
        assert "\x00" not in text
        assert "\r" not in text
    kept = [t for t, r in zip(out.column("text").to_pylist(), reasons, strict=True) if r is None]
    again = stage.process(_table(kept)).column("text").to_pylist()
    assert again == kept  # normalizing is idempotent


# -- every registered stage --------------------------------------------------------------------------------
# Stages that need a reference file get a small one; the fuzzed texts sometimes contain its item.
_EVAL = Path(tempfile.mkdtemp(prefix="fuzz-eval-")) / "eval.jsonl"
_EVAL.write_text(
    json.dumps(
        {
            "question": "word word word word word word word word word word word word word",
            "answer": "same text",
        }
    )
    + "\n"
)
EXTRA_PARAMS = {
    "decontaminate_v1": [
        {"eval_paths": [str(_EVAL)]},
        {"eval_paths": [str(_EVAL)], "mode": "strip", "min_chars": 20},
    ]
}


# Stages that load a model get a tiny one, built once per session (a tiny Llama for the Hugging Face
# stages; the target-aware ones fitted to a toy target sample); none of them is skipped.
MODEL_STAGES = ("dsir_v1", "target_classifier_v1", "perplexity_diff_v1", "perplexity_v1", "synthesize_v1")


@pytest.fixture(scope="session")
def model_params(tmp_path_factory) -> dict[str, dict]:
    import numpy as np

    from curate.targeting.draw import write_jsonl
    from curate.targeting.fitted import TargetSample
    from curate.targeting.prepare import fit_stages
    from tests.proxy.toy import WORDS
    from tests.scorers.tiny_lm import build_tiny_lm

    d = tmp_path_factory.mktemp("fuzz-models")
    rng = np.random.default_rng(0)  # a toy target (its words) against a toy raw sample (other words)
    raw_words = ["buy", "cheap", "deals", "now", "click", "here", "best", "price", "free", "offer"]
    target = [" ".join(rng.choice(WORDS[:16], 40)) for _ in range(60)]
    raw = [" ".join(rng.choice(raw_words + WORDS[:3], 40)) for _ in range(60)]
    write_jsonl(target, d / "target.jsonl.gz")
    write_jsonl(raw, d / "raw.jsonl.gz")
    sample = TargetSample(
        target_texts=target,
        raw_texts=raw,
        target_jsonl=str(d / "target.jsonl.gz"),
        raw_jsonl=str(d / "raw.jsonl.gz"),
    )
    lm = build_tiny_lm(d / "lm", steps=5)
    out: dict[str, dict] = {
        "perplexity_v1": {"model": str(lm), "max_tokens": 64, "seq_len": 32},
        "synthesize_v1": {"model": str(lm), "max_new_tokens": 3, "max_input_tokens": 32, "batch_size": 4},
    }
    fit = {
        "dsir_v1": {},
        "target_classifier_v1": {},
        "perplexity_diff_v1": {"tokens": 4096, "seq_len": 32, "batch_size": 4, "vocab_size": 300},
    }
    for name, params in fit.items():
        cls = STAGES.get(name)
        stage = cls(build_params(cls.Params, params, where=name))
        fit_stages([stage], sample, d / "fits")
        out[name] = {**params, "model": stage.params.model}
    return out


def _cases() -> list:
    out = []
    for name in STAGES.names():
        variants = EXTRA_PARAMS.get(name, [{}])
        for params in variants:
            pid = f"{name}-{params.get('mode')}" if len(variants) > 1 else name
            out.append(pytest.param(name, params, id=pid))
    return out


def test_the_model_stages_are_fuzzed() -> None:
    assert set(MODEL_STAGES) <= {c.values[0] for c in _cases()}


def _run_stage(stage, table: pa.Table) -> pa.Table:
    if isinstance(stage, RowStage):
        return stage.process(table)
    assert isinstance(stage, GlobalStage)
    with tempfile.TemporaryDirectory() as d:
        ordered = _with_order(table, 0)
        pq.write_table(stage.collect(ordered), Path(d) / "k0.parquet")
        state = stage.reduce([str(Path(d) / "k0.parquet")], InlineEngine())
        return stage.apply(ordered, state).drop_columns([ORDER])


@pytest.mark.parametrize(("name", "params"), _cases())
def test_every_stage_accounts_for_every_row(name: str, params: dict, model_params) -> None:
    # Built outside hypothesis: a stage that cannot be built fails here, with its error (never a skip).
    cls = STAGES.get(name)
    stage = cls(build_params(cls.Params, {**params, **model_params.get(name, {})}, where=name))
    stage.ensure_setup()

    # A model stage is slower per example (a forward pass per window): fewer examples, same inputs.
    examples = 8 if name in MODEL_STAGES else FUZZ.max_examples

    @settings(FUZZ, max_examples=examples)
    @given(texts=st.lists(TEXT, max_size=12))
    def fuzz(texts: list[str]) -> None:
        # Stages see what they see in a run: text after normalize_v1, empty documents already rejected.
        table = STAGES.get("normalize_v1")().process(_table(texts))
        keep = [r is None for r in table.column(schema.REJECT).to_pylist()]
        table = table.filter(pa.array(keep, pa.bool_())).drop_columns([schema.REJECT])
        table = table.set_column(0, "id", pa.array([f"d{i}" for i in range(table.num_rows)], pa.string()))
        out = _run_stage(stage, table)
        suffix = stage.params.id_suffix if name == "synthesize_v1" else ""  # a new document's id
        _check_accounted(out, table.num_rows, f"{stage.label}:", suffix)

    fuzz()
