"""Number formatting shared by the HTML, Markdown and terminal reports."""

from __future__ import annotations

import math
from typing import Any

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
