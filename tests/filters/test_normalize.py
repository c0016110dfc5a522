"""``normalize_v1``: exact outputs, and the space-run rewrite equal to replacing every ``[ \\t]+``."""

from __future__ import annotations

import random
import re

import pyarrow as pa
import pyarrow.compute as pc

from curate.filters.normalize import _SPACE_RUN, Normalize


def normalized(texts: list[str]) -> list[str | None]:
    out = Normalize().process(pa.table({"id": [str(i) for i in range(len(texts))], "text": texts}))
    return out.column("text").to_pylist()


def test_exact_outputs() -> None:
    assert normalized(["a \t b", "a\r\nb\rc", " x  y \n\n\n\nz ", "e\u0301\u00a0f\u200bg", "\t"]) == [
        "a b",
        "a\nb\nc",
        "x y\n\nz",
        "\u00e9 fg",
        "",
    ]


def test_space_runs_collapse_as_every_run_replaced() -> None:
    rng = random.Random(7)
    texts = ["", " ", "\t", " \t ", "a \t\t b", "a  b", "a \tb\t", "\t\t", "  x", "x \u00a0 y"]
    texts += ["".join(rng.choice(" \t\na") for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    got = pc.replace_substring_regex(pa.array(texts), _SPACE_RUN, " ").to_pylist()
    assert got == [re.sub(r"[ \t]+", " ", t) for t in texts]


def test_unicode_forms_equal_pyarrows_utf8_normalize() -> None:
    """Composition, compatibility and Hangul cases, and nulls, in every form the params allow."""
    from curate.filters.normalize import _unicode_normalize

    texts = ["e\u0301", "\ufb01le", "\u1100\u1161\u11a8", "\u212b", "s\u0307\u0323", None, "", "plain"]
    arr = pa.chunked_array([pa.array(texts, pa.string())])
    for form in ("NFC", "NFKC", "NFD", "NFKD"):
        assert _unicode_normalize(arr, form).to_pylist() == pc.utf8_normalize(arr, form).to_pylist()
    assert _unicode_normalize(arr, "NFC").to_pylist()[:5] == [
        "\u00e9",
        "\ufb01le",
        "\uac01",
        "\u00c5",
        "\u1e69",
    ]
    assert _unicode_normalize(arr, "NFKC").to_pylist()[1] == "file"
