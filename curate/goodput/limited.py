"""``goodput.json``'s data-limited blocks (a run that asks for ``proxy.data_limited``): ``data_limited``, one
entry per compute-to-data ratio and recipe (and the arm's null per ratio), and ``repetition_curve``
(:mod:`curate.proxy.assembly.limited` writes them; docs/goodput.md describes them)."""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from curate.goodput.intervals import Bounds, Call, DiffBpb, Multiplier, Num
from curate.goodput.typed import Block, opt, req


@dataclass(frozen=True, kw_only=True)
class PerSeedTokens(Block):
    """A per-seed draw's tokens, and their mean."""

    per_seed: list[int] = req(list)
    mean: Num = req()


@dataclass(frozen=True, kw_only=True)
class Pair(Block):
    """One number of the recipe's arm and of raw's pool."""

    recipe: Num = req()
    baseline: Num = req()


@dataclass(frozen=True, kw_only=True)
class CurveRatio(Block):
    """How many times the fresh raw tokens raw repeated is worth the recipe repeated is worth, read off
    raw's measured curve of fresh data: bounds beyond it (``bounds``), nothing where raw repeated itself
    leaves it (``off_curve``)."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    bounds: Bounds = req(Bounds)
    method: str | None = req()
    off_curve: str | None = opt()


@dataclass(frozen=True, kw_only=True)
class NoiseBlock(Block):
    sd: Num = req()
    dof: int | None = req()
    source: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Equivalence(Block):
    """Two one-sided tests of ``|null - raw's pool| < margin``: the 90% interval, the margin and whether
    the interval lies inside it."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    level: Num = req()
    margin: Num = req()
    equivalent: bool | None = req()
    bound: Num = req()
    n: int | None = req()
    noise: NoiseBlock = req(NoiseBlock)
    method: str | None = req()
    margin_source: str | None = req()


@dataclass(frozen=True, kw_only=True)
class LimitedEntry(Block):
    """One recipe (``role: recipe``) or the arm's null (``role: control``) at compute-to-data ratio ``k``:
    its share of raw's per-seed pool of ``T / k`` tokens against the pool, both trained at ``T``."""

    k: Num = req(doc="compute / data: raw's pool is T / k tokens")
    recipe: str | None = req()
    role: Literal["recipe", "control"] | None = req()
    arm: str | None = req(doc="its runs: proxy/limited/<arm>/seed<k>/")
    baseline_arm: str | None = req()
    pool_tokens: PerSeedTokens = opt(PerSeedTokens)
    subset_of: str | None = opt(doc="the null: the recipe arm whose tokens it matches")
    tokens: PerSeedTokens = req(PerSeedTokens)
    epochs_at_T: Pair = req(Pair)
    bpb_at_T: Pair = opt(Pair)
    diff_bpb: DiffBpb = req(DiffBpb)
    per_seed_diff: list[float] = req(list)
    call: Call | None = req()
    goodput: CurveRatio = opt(CurveRatio, doc="the data-limited goodput (a recipe)")
    goodput_trained_once: Num = opt(doc="yield x multiplier: each raw token trained once, for comparison")
    supported: bool | None = opt()
    unsupported_reason: str | None = opt()
    sentence: str | None = opt()
    equivalence: Equivalence = opt(Equivalence)
    passed: bool | None = opt()
    message: str | None = opt()


@dataclass(frozen=True, kw_only=True)
class RepetitionPoint(Block):
    """raw's pool trained ``epochs`` times at T against raw's own runs at T (fresh data)."""

    epochs: Num = req()
    epochs_at_T: Num = req()
    pool_tokens: PerSeedTokens = req(PerSeedTokens)
    diff_bpb: DiffBpb = req(DiffBpb)
    per_seed_diff: list[float] = req(list)
    call: Call | None = req()
    fresh_equivalent: Multiplier = req(Multiplier, doc="t_raw(bpb) / T: fresh tokens per trained token")
    muennighoff: Num = req()
    against_muennighoff: Literal["less", "more", "as_fit"] | None = req()


@dataclass(frozen=True, kw_only=True)
class RepetitionCurve(Block):
    """What repetition costs this proxy, beside Muennighoff et al.'s fit."""

    baseline: str | None = req()
    points: list[RepetitionPoint] = req(list)
    muennighoff: str | None = req()
    sentence: str | None = req()
