"""The native module's facade (curate/filters/native.py): the switch, the reported path, the kernels, and
that nothing else reaches the extension."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import curate
from curate.filters import native as N
from curate.filters import words as W
from curate.filters import words_en as E


def test_the_path_follows_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert N.built()  # make's pip install -e . compiles it (tests/filters/test_native.py)
    monkeypatch.delenv(N.NATIVE_ENV, raising=False)
    assert N.path() == {"path": "native", "reason": None}
    assert N.enabled()
    assert N.active() is N.module()
    for on in ("1", "", "yes"):  # only 0 switches it off
        monkeypatch.setenv(N.NATIVE_ENV, on)
        assert N.path() == {"path": "native", "reason": None}
    monkeypatch.setenv(N.NATIVE_ENV, "0")
    assert N.path() == {"path": "fallback", "reason": "disabled by CURATE_NATIVE=0"}
    assert not N.enabled()
    assert N.active() is None
    assert N.module().__name__ == "curate.filters._native"  # still there for whoever asks for it by name


def test_a_module_that_is_not_built_is_reported_and_never_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["One line. Two!\nOne line. Two!", "don't stop (ever)."]
    frame = W.texts_frame(texts)
    W.clear_word_memo()
    words_on = W.split_words(frame)
    monkeypatch.setattr(N, "_MODULE", None)
    monkeypatch.setenv(N.NATIVE_ENV, "1")
    assert N.path() == {"path": "fallback", "reason": "not built"}
    assert not N.built()
    assert not N.enabled()
    assert N.active() is None
    with pytest.raises(RuntimeError, match="not built"):
        N.module()
    monkeypatch.setattr(E, "split_words_en_native", lambda frame: pytest.fail("native path taken"))
    W.clear_word_memo()
    assert W.split_words(frame).equals(words_on)
    W.clear_word_memo()


def test_the_fallback_paths_give_the_native_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    from curate.filters.c4 import sentence_counts
    from curate.filters.gopher_repetition import ngram_chars, piece_stats

    docs = W.texts_frame(["a\nb\na\n\nb", "x y x y x y", ""])
    lines = pl.Series(["One. Two! three", "Mr. Smith went."])
    args = (np.array([0, 0, 0, 0], np.uint32), np.array([1, 2, 1, 2], np.uint64), np.ones(4, np.uint32))

    def run() -> list:
        paras, line_stats = piece_stats(docs)
        grams = ngram_chars(*args, [2], [3], 1)
        return [
            {k: v.tolist() for k, v in paras.items()},
            {k: v.tolist() for k, v in line_stats.items()},
            {k: v.tolist() for k, v in grams.items()},
            sentence_counts(lines).tolist(),
        ]

    on = run()
    monkeypatch.setattr(N, "_MODULE", None)
    assert run() == on
    assert on[3] == [3, 1]  # "Mr." is one token: no sentence starts at "Smith"


def test_the_kernels_are_the_modules_functions() -> None:
    ext = N.module()
    public = {name for name, value in vars(ext).items() if callable(value) and not name.startswith("_")}
    listed = [f for functions in N.KERNELS.values() for f in functions]
    assert sorted(listed) == sorted(public)  # each function in one kernel, none left out
    assert list(N.KERNELS) == ["word_split", "sentences", "dup_pieces", "ngram_chars"]
    stub = ast.parse((Path(inspect.getfile(N)).parent / "_native.pyi").read_text())
    assert {f.name for f in stub.body if isinstance(f, ast.FunctionDef)} == public


def test_arrow_buffers_for_the_kernels_of_a_sliced_array() -> None:
    arr = pa.chunked_array([["ab", "c"], ["", "déf"]]).cast(pa.string())
    big = N.large_strings(arr)
    assert big.type == pa.large_string()
    assert big.to_pylist() == ["ab", "c", "", "déf"]
    part = big.slice(1, 2)
    assert N.offsets(part).tolist() == [2, 3, 3]
    assert bytes(N.data(part))[:3] == b"abc"
    empty = N.large_strings(pa.array([], pa.large_string()))
    assert N.offsets(empty).tolist() == [0]
    assert bytes(N.data(empty)) == b""


def test_only_the_facade_imports_the_extension() -> None:
    root = Path(inspect.getfile(curate)).parent
    importers = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if "curate.filters._native" in names:
                importers.append(path.relative_to(root).as_posix())
    assert importers == ["filters/native.py"]
