"""The intervals of ``goodput.json``: a ratio against the baseline (a multiplier or a data goodput: 1 is no
difference) with its bound marks, a paired bpb difference (0 is no difference), a relative multiplier and
the minimum detectable multipliers. Every interval has the same three numbers, ``value``, ``ci_low``,
``ci_high`` (null ends with one seed); a ratio's ends beyond the baseline's measured range are bounds,
marked in ``bounds``."""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from curate.goodput.typed import Block, legacy, opt, req

Num = float | None  # a measured number: null where it is not finite, not measured, or has no interval
Mark = Literal[">", "<"]  # a bound: the true value may be anything above (below) the number
Call = Literal["better", "worse", "not_called"]


@dataclass(frozen=True, kw_only=True)
class Bounds(Block):
    """Which of a ratio's numbers are bounds at the end of the baseline's measured range: ``>`` (the
    true value may be anything above it) or ``<``; null where the number was measured."""

    value: Mark | None = req()
    ci_low: Mark | None = req()
    ci_high: Mark | None = req()


@dataclass(frozen=True, kw_only=True)
class Ratio(Block):
    """A ratio against the baseline, 1 meaning no difference, with its 95% interval (null ends with one
    seed) and its bound marks: the shape of every data goodput (``recipes.<r>.goodput``) and the core of
    every multiplier."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    bounds: Bounds = req(Bounds)


@dataclass(frozen=True, kw_only=True)
class Multiplier(Ratio):
    """Tokens the baseline needs to reach a recipe's bpb at T, per token the recipe trained on, read off
    the baseline's finished runs (``range``: the measured multipliers, as fractions of T)."""

    range: list[float] = req(list)
    extrapolated: bool | None = req(doc="always false since schema 2: nothing is extrapolated")
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class DiffBpb(Block):
    """A paired difference of mean headline bpb at T (``a - b``: below 0, ``a`` is better) over ``n``
    seeds, with its 95% t-interval (df = n - 1; null ends with one seed) and the per-seed sd."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    n: int | None = req()
    sd: Num = req()


@dataclass(frozen=True, kw_only=True)
class RelativeMultiplier(Block):
    """``m_a / m_b`` from a paired difference ``a - b``, mapped through the baseline's measured curve at
    ``b``'s level; null where it leaves the measured range (no bounds: it is never one)."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class MdeBounds(Block):
    """Which minimum detectable multiplier is a bound at the end of the measured range."""

    worse: Mark | None = req()
    better: Mark | None = req()


@dataclass(frozen=True, kw_only=True)
class MdeMultiplier(Block):
    """The multipliers the run calls 80% of the time at its seeds and spread: below ``worse`` or above
    ``better``; null with one seed (then no bounds)."""

    worse: Num = req()
    better: Num = req()
    bounds: MdeBounds = opt(MdeBounds)
    extrapolated: bool | None = opt()


@dataclass(frozen=True, kw_only=True)
class GoodputBoundsV2(Block):
    """Schema 1-2's goodput bound marks: ``ci`` as a ``[low, high]`` pair."""

    value: Mark | None = legacy()
    ci: list[Mark | None] = legacy(list)


@dataclass(frozen=True, kw_only=True)
class GoodputV2(Block):
    """Schema 1-2's data goodput: its interval as ``ci: [low, high]`` (schema 3: ``ci_low``, ``ci_high``,
    the multiplier's shape); read files of it through :func:`curate.goodput.schema.upgrade`."""

    value: Num = legacy()
    ci: list[Num] = legacy(list)
    bounds: GoodputBoundsV2 = legacy(GoodputBoundsV2)
