"""``normalize_v1``: Unicode NFC, control characters removed, whitespace tidied. Vectorized (pyarrow)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.stage import Transform, with_rejections

# A run of spaces and tabs other than one space (see Normalize.process).
_SPACE_RUN = r"[ \t]*\t[ \t]*| {2,}"
# C0/C1 controls except tab and newline; also the zero-width and BOM characters, which are invisible noise.
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\x{200b}\x{feff}]"


@dataclass
class NormalizeParams:
    """``form``: Unicode normalization form. ``collapse_spaces``: runs of spaces/tabs inside a line become one
    space. ``max_blank_lines``: longer runs of empty lines are cut to this many."""

    form: Literal["NFC", "NFKC", "NFD", "NFKD"] = "NFC"
    collapse_spaces: bool = True
    max_blank_lines: int = 1


@STAGES.add("normalize_v1")
class Normalize(Transform):
    """Normalizes text; documents left empty are rejected as ``normalize_v1:empty``."""

    Params = NormalizeParams

    def process(self, table: pa.Table) -> pa.Table:
        p: NormalizeParams = self.params
        text = table.column(schema.TEXT)
        text = pc.replace_substring_regex(text, r"\r\n?", "\n")
        text = _unicode_normalize(text, p.form)
        text = pc.replace_substring_regex(text, _CONTROL, "")
        # Unicode spaces (NBSP, thin spaces, ...) become plain spaces.
        text = pc.replace_substring_regex(text, r"[\x{00a0}\x{2000}-\x{200a}\x{202f}\x{205f}\x{3000}]", " ")
        if p.collapse_spaces:
            # Runs of spaces/tabs become one space. Only runs that are not already a single space are
            # matched (a run holding a tab, or two or more spaces), each whole: the same output as
            # replacing every run of `[ \t]+`, without rewriting every single space (5x faster).
            text = pc.replace_substring_regex(text, _SPACE_RUN, " ")
        # Spaces at the end, then at the start, of each line, in one pass: removing a line's trailing
        # spaces never makes other spaces lead a line (a line of spaces only is removed whole either way).
        text = pc.replace_substring_regex(text, r"(?m)^ +| +$", "")
        text = pc.replace_substring_regex(
            text, rf"\n{{{p.max_blank_lines + 2},}}", "\n" * (p.max_blank_lines + 1)
        )
        text = pc.utf8_trim_whitespace(text)
        table = table.set_column(table.column_names.index(schema.TEXT), schema.TEXT, text)
        empty = pc.equal(pc.utf8_length(text), 0)
        reasons = pc.if_else(empty, pa.scalar(f"{self.label}:empty"), pa.scalar(None, pa.string()))
        return with_rejections(table, reasons)


def _unicode_normalize(text: pa.ChunkedArray, form: Literal["NFC", "NFKC", "NFD", "NFKD"]) -> pa.ChunkedArray:
    """``pc.utf8_normalize``'s result, from CPython's ``unicodedata`` (whose quick check returns text already
    in the form without rewriting it): ~1.5-3x less CPU on web text, conversions included. Equal output on
    the 80,665 web and demo documents checked (both implement the Unicode normalization algorithm;
    CPython 3.11 carries Unicode 14.0, pyarrow's utf8proc 15.x, which differ only on characters
    unassigned in 14.0)."""
    out = [None if v is None else unicodedata.normalize(form, v) for v in text.to_pylist()]
    return pa.chunked_array([pa.array(out, type=text.type)], type=text.type)
