"""The shared text constants of the heuristic filters (curate/filters/_text.py)."""

from __future__ import annotations

from curate.filters._text import PY_SPACE_CHARS


def test_py_space_chars_are_exactly_the_characters_python_calls_space() -> None:
    want = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    assert want == PY_SPACE_CHARS
    assert len(PY_SPACE_CHARS) == 29
