"""The report's words, shared by the HTML, Markdown and terminal reports: number formats, and the label
table, each control's words by its name in one place (a new control kind adds its row here, or is shown by
its name; the renderers read controls by the fields their blocks carry)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from curate.goodput.schema import ControlBlock

DASH = "–"  # en dash between CI bounds


def num(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits ("—" for missing, "∞" for infinite)."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    if abs(x) >= 10**digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def ratio(x: Any) -> str:
    """A multiplier or goodput to 2 decimals."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def pct(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def count(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{round(x):,}"


def nbytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def ci_text(lo: Any, hi: Any, fmt: Any = ratio) -> str:
    if lo is None and hi is None:
        return "CI —"
    return f"CI {fmt(lo)}{DASH}{fmt(hi) if hi is not None else '∞'}"


def sci(x: Any) -> str:
    """A large count in short scientific form: ``3.3e12`` ("—" when missing)."""
    if x is None or not isinstance(x, int | float) or not math.isfinite(x):
        return "—"
    mant, exp = f"{x:.2g}".split("e") if "e" in f"{x:.2g}" else (f"{x:.2g}", "")
    return f"{mant}e{int(exp)}" if exp else mant


# The gating controls' words on the card, by name (files from before a control said its own).
CARD: dict[str, tuple[str, str]] = {
    "null": ("null passed (no bias seen)", "null FAILED (it separates from the baseline)"),
    "planted": (
        "planted passed ({share}corruption called worse)",
        "planted FAILED ({share}corruption not called worse)",
    ),
}

# The glossary's entry for a control.
CONTROL_GLOSSARY = (
    "a recipe with a known answer: null (a random raw subsample, should not separate from raw) and "
    "planted (the null's subsample with a share of its documents word-shuffled, should be called worse). "
    "A failed control "
    "means the run cannot support a decision; a planted control missed where the run states its power "
    "below 95% makes it inconclusive (a working instrument misses it that often)."
)


def _corrupted(block: ControlBlock) -> str:
    """A corrupted share of the null's subsample (``matched``), or, in a file written before controls were
    matched to a recipe, of raw."""
    share = f"{100 * float(block.fraction or 0):.0f}%"
    how = (
        "letter-shuffled within words"
        if (block.extra or {}).get("corruption") == "letters"
        else "word-shuffled"
    )
    if block.matched.to_json():
        return f"the null's subsample with {share} of its documents {how}"
    return f"{share} of raw {how}"


# What each control was, in words, from its block.
WHAT = {
    "null": lambda block: "random raw subsample",
    "planted": _corrupted,
}


def what(name: str, block: ControlBlock | Mapping[str, Any]) -> str:
    """What the control ``name`` was, in words (its name when the table has no row for it)."""
    blk = block if isinstance(block, ControlBlock) else ControlBlock.from_json(block, strict=False, path=name)
    return WHAT[name](blk) if name in WHAT else name


def row_label(name: str, block: ControlBlock) -> str:
    """The control's row in the report's controls table: its name and what it was."""
    return f"{name} ({what(name, block)})" if name in WHAT else name


# A control's failure at other points of the scale ladder (``ladder.<key>``), by the key its kind writes.
LADDER = {
    "null_separated_at": "the null control separates from raw at {points}: rankings there are doubtful.",
    "planted_not_called_at": (
        "the planted control is not called worse at {points}: that point could not see a known effect; "
        "rankings there are doubtful."
    ),
}


def ladder_warning(key: str, points: list[str]) -> str:
    """The report's warning for a control failed at ``points`` of the ladder (``ladder.<key>``)."""
    at = ", ".join(points)
    text = LADDER.get(key, key.removesuffix("_at").replace("_", " ") + " at {points}.")
    return "Warning: " + text.format(points=at)
