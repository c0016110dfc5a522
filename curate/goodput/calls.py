"""The one rule from an interval to a call, and how a number that may be a bound is written.

A difference is *called* only when its whole 95% interval lies on one side of "no difference": 0 for a
paired bpb difference (``a - b``; lower bpb is better), 1 for a ratio (a multiplier or a data goodput). An
interval that touches or crosses it is not called, nor is one without an interval (one seed: null ends).
A ratio's end that is a bound (``>2.00``: beyond the baseline's measured range, the true end may be
anything above it) counts only on its own side: a low end ``<0.30`` is still below 1, but a low end
``<1.20`` may reach below 1, so that interval is not above 1.

Every reader of ``goodput.json`` (the report, ``curate proxy``'s and ``curate ablate``'s tables, the
benchmarks) calls through here; the proxy's statistic makes its own calls on the same rule
(``curate.proxy.stats.Interval.excludes``), and this module is tested to agree with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from curate.goodput.intervals import Call, Mark

Side = Literal["above", "below", "overlaps", "unknown"]
Effect = Literal["pays", "costs", "not_called"]

__all__ = [
    "Call",
    "Effect",
    "Side",
    "diff_call",
    "fmt_bounded",
    "fmt_multiplier",
    "multiplier_call",
    "multiplier_ci",
    "ratio_call",
    "side",
]


def diff_call(lo: float | None, hi: float | None) -> Call:
    """A paired bpb difference ``a - b`` by its interval ``[lo, hi]``: ``better`` (``a`` has lower bpb)
    when all of it is below 0, ``worse`` when all of it is above, else ``not_called`` (it touches or
    crosses 0, or has no interval)."""
    if lo is None or hi is None:
        return "not_called"
    if hi < 0:
        return "better"
    if lo > 0:
        return "worse"
    return "not_called"


def side(
    lo: float | None,
    hi: float | None,
    value: float | None = None,
    marks: tuple[Mark | str | None, Mark | str | None] = (None, None),
) -> Side:
    """Where a ratio's interval ``[lo, hi]`` lies against 1: ``above`` when its low end is a number above
    1 that is not a ``<`` bound, ``below`` when its high end is a number below 1 that is not a ``>`` bound,
    ``overlaps`` when it touches or crosses 1 (or a bound end may), ``unknown`` with no number at all.
    ``marks``: the bound marks of the low and the high end."""
    if value is None and lo is None:
        return "unknown"
    if lo is not None and lo > 1 and marks[0] != "<":
        return "above"
    if hi is not None and hi < 1 and marks[1] != ">":
        return "below"
    if lo is None and hi is None:
        return "unknown"
    return "overlaps"


def ratio_call(
    lo: float | None,
    hi: float | None,
    marks: tuple[Mark | str | None, Mark | str | None] = (None, None),
) -> Effect:
    """A multiplier's or data goodput's interval against 1, as an effect: ``pays`` (all of it above 1),
    ``costs`` (all below), else ``not_called``."""
    s = side(lo, hi, None, marks)
    return "pays" if s == "above" else "costs" if s == "below" else "not_called"


def multiplier_call(
    lo: float | None,
    hi: float | None,
    marks: tuple[Mark | str | None, Mark | str | None] = (None, None),
) -> Call:
    """A multiplier's interval against 1 as a call per training token: ``better`` above 1, ``worse``
    below, else ``not_called`` (the multiplier is a decreasing map of the bpb difference, so this is
    :func:`diff_call` of the difference it maps)."""
    effect = ratio_call(lo, hi, marks)
    return "better" if effect == "pays" else "worse" if effect == "costs" else "not_called"


def fmt_bounded(x: float | None, mark: str | None = None, digits: int = 2) -> str:
    """A ratio for text: ``1.31``, ``>2.00`` / ``<0.25`` for a bound, ``—`` when it was not measured."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{mark or ''}{x:.{digits}f}"


def _get(block: Any, key: str) -> Any:
    if block is None:
        return None
    if isinstance(block, Mapping):
        return block.get(key)
    return getattr(block, key, None)


def fmt_multiplier(block: Any, key: str = "value", digits: int = 2) -> str:
    """One number of a multiplier, a goodput or a minimum detectable multiplier (``key``: ``value``,
    ``ci_low``, ``ci_high``, ``worse``, ``better``), with its bound mark: ``1.31``, ``>2.00``, ``—``.
    ``block``: a typed block or its JSON object."""
    return fmt_bounded(_get(block, key), _get(_get(block, "bounds"), key), digits)


def multiplier_ci(block: Any) -> str:
    """A multiplier with its interval, bounds marked: ``1.38x (1.34–1.42)``, ``1.25x`` with no interval,
    ``—`` when not measured."""
    if not block or _get(block, "value") is None:
        return "—"
    if _get(block, "ci_low") is None:
        return f"{fmt_multiplier(block)}x"
    return f"{fmt_multiplier(block)}x ({fmt_multiplier(block, 'ci_low')}–{fmt_multiplier(block, 'ci_high')})"
