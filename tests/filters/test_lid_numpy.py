"""language_v1's numpy engine (``curate/filters/lid_numpy.py``) against fastText's own predict."""

from __future__ import annotations

import fasttext
import numpy as np
import pytest

from curate.filters.lang import LanguageId, LanguageParams, lid176_path
from curate.filters.lid_numpy import FastTextModel, NumpyPredictor, huffman_tree
from tests.helpers import make_table

TEXTS = [
    "This is a plain English sentence about the weather today. It is sunny.",
    "Dies ist ein ganz normaler deutscher Satz über das Wetter heute.",
    "Ceci est une phrase française tout à fait ordinaire sur la météo.",
    "これは日本語の文章です。天気についての普通の文です。",
    "Это обычное русское предложение о погоде сегодня.",
    "emoji 😀🎉 and 4-byte chars 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 in English text",
    "",
    "   ",
    "tabs\tcarriage\rreturns\x0bvertical\x0cform\x00nul separate words too",
    "no-break\u00a0spaces\u3000are\u2003not separators for fastText",
    "English words first </s> und dann deutsche Wörter, die fastText nicht mehr liest",
    "__label__de __label__xx this text is English with label-like tokens",
    "x" * 3000,
    "a b c d e f g",
]


@pytest.fixture(scope="module")
def reference() -> fasttext.FastText._FastText:
    return fasttext.load_model(lid176_path())


@pytest.fixture(scope="module")
def predictor() -> NumpyPredictor:
    return NumpyPredictor(lid176_path())


def test_decoded_rows_are_fasttexts_rows_bit_for_bit(predictor, reference) -> None:
    m = predictor.model
    assert m.input.shape == (50000, 16)
    assert m.nwords == 7235
    assert len(m.labels) == 176
    for row in [0, 1, 7234, 7235, 20000, 49999]:
        assert np.array_equal(m.input[row].astype(np.float32), reference.get_input_vector(row)), row


def test_ngram_rows_are_fasttexts_subwords(predictor, reference) -> None:
    words = ["hello", "Wörter", "天気", "😀🎉", "𝔘𝔫𝔦", "a", "xyzzyplugh", "naïve-café"]
    owner, rows = predictor._ngram_rows(words)
    for i, word in enumerate(words):
        ids = reference.get_subwords(word)[1].tolist()
        wid = reference.get_word_id(word)
        expected = sorted(ids[1:] if wid >= 0 else ids)
        assert sorted(rows[owner == i].tolist()) == expected, word


def test_same_labels_and_decisions_as_fasttext(reference) -> None:
    table = make_table(TEXTS)
    for threshold in (0.65, 0.3):  # 0.3: every label's probability is read
        out = {}
        for engine in ("fasttext", "numpy"):
            stage = LanguageId(LanguageParams(languages=["en", "de"], threshold=threshold, engine=engine))
            stage.ensure_setup()
            out[engine] = stage.score(table)
        ft, nx = out["fasttext"], out["numpy"]
        assert nx["language"].to_pylist() == ft["language"].to_pylist()
        for col in ("language_score", "languages_score"):
            np.testing.assert_allclose(nx[col].to_numpy(), ft[col].to_numpy(), rtol=0, atol=2e-5)
        keep_ft = ft["languages_score"].to_numpy() > threshold
        assert (nx["languages_score"].to_numpy() > threshold).tolist() == keep_ft.tolist()
    assert ft["language"].to_pylist()[:5] == ["en", "de", "fr", "ja", "ru"]


def test_a_literal_eos_ends_the_line_and_label_tokens_count_for_nothing(predictor) -> None:
    import polars as pl

    logp, has = predictor.log_probs(
        pl.Series(
            [
                "English words first </s> und dann deutsche Wörter",
                "English words first",
                "__label__de English words first",
                "__label__en",
                "",
            ]
        )
    )
    np.testing.assert_allclose(logp[0], logp[1], rtol=0, atol=1e-9)  # BLAS may round rows apart
    np.testing.assert_allclose(logp[0], logp[2], rtol=0, atol=1e-9)
    # only the end-of-line token is left: fastText still predicts (from </s>'s row)
    assert has.tolist() == [True, True, True, True, True]
    np.testing.assert_allclose(logp[3], logp[4], rtol=0, atol=1e-9)


def test_huffman_tree_is_fasttexts() -> None:
    left, right = huffman_tree(np.array([5, 3, 2, 1]))
    assert left[4:].tolist() == [3, 4, 0]
    assert right[4:].tolist() == [2, 1, 5]


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"engine: 'numpi' is not one of numpy, fasttext .did you mean 'numpy'"
    ):
        LanguageId(LanguageParams(engine="numpi")).validate()


def test_a_model_the_numpy_engine_cannot_read_is_named(tmp_path) -> None:
    bad = tmp_path / "not_a_model.bin"
    bad.write_bytes(b"\0" * 64)
    with pytest.raises(ValueError, match="not a fastText model of format version 12"):
        FastTextModel.load(str(bad))
