"""The called part of ``goodput.json``: the ranking of every pair, the verdict, the Holm-adjusted calls
of the decision, the controls and the power of the run."""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curate.goodput.intervals import Call, DiffBpb, MdeMultiplier, Multiplier, Num, RelativeMultiplier
from curate.goodput.typed import Block, opt, req, rest


@dataclass(frozen=True, kw_only=True)
class RankPair(Block):
    """Two recipes by their own paired interval (``diff_bpb``: a - b): ``better`` where it excludes 0."""

    a: str | None = req()
    b: str | None = req()
    better: str | None = req()
    separated: bool | None = req()
    diff_bpb: DiffBpb = req(DiffBpb)


@dataclass(frozen=True, kw_only=True)
class Ranking(Block):
    """Recipes by mean headline bpb at T (best first), in tiers where a pair is not called."""

    metric: str | None = req()
    order: list[str] = req(list)
    tiers: list[list[str]] = req(list)
    pairs: list[RankPair] = req(list)


@dataclass(frozen=True, kw_only=True)
class Verdict(Block):
    """The one verdict, on ``recipe`` (the controlled recipe, else the best non-control one): its call
    (Holm-adjusted where the recipe is in the family) and whether the controls let it support a decision."""

    recipe: str | None = req()
    statistic: str | None = req()
    call: Call | None = req()
    call_unadjusted: Call | None = opt()
    diff_bpb: DiffBpb = opt(DiffBpb)
    multiplier: Multiplier = opt(Multiplier)
    sentence: str | None = req()
    supported: bool | None = req()
    unsupported_reasons: list[str] = req(list)


@dataclass(frozen=True, kw_only=True)
class HolmPair(Block):
    """One recipe of the decision's family against the baseline: its paired p, Holm's adjusted p (none
    under a sequential design) and the call each makes; under a sequential design, the look and seeds that
    decided it and its z statistic."""

    p: Num = req()
    p_holm: Num = req()
    call: Call | None = req()
    call_unadjusted: Call | None = req()
    look: int | None = opt()
    seeds: int | None = opt()
    z: Num = opt()


@dataclass(frozen=True, kw_only=True)
class MultipleComparisons(Block):
    """The decision's family (the non-control recipes against the baseline), Holm-adjusted at ``alpha``."""

    method: str | None = req()
    alpha: Num = req()
    family: list[str] = req(list)
    pairs: dict[str, HolmPair] = req(dict)
    note: str | None = req()
    design: dict[str, Any] = opt(dict, doc="a sequential design: its looks and boundaries")
    history: list[dict[str, Any]] = opt(list, doc="a sequential design: every pair's z at each look taken")


@dataclass(frozen=True, kw_only=True)
class Decision(Block):
    """Whether the controls let the run support a decision (``reasons``: the failures; ``note``: that no
    gating control was trained)."""

    supported: bool | None = req()
    reasons: list[str] = req(list)
    inconclusive: bool | None = opt(
        doc="true (else absent) when every failure is a control missed at a stated power below 0.95 (a "
        "working instrument misses it that often): no decision, and no sign the instrument is blind "
        "(since 2026-12-07)"
    )
    note: str | None = opt()


@dataclass(frozen=True, kw_only=True)
class Matched(Block):
    """What a control drawn for a recipe was matched to: the recipe whose token count it drew, and how much of the
    baseline's stream each shares."""

    of: str | None = req()
    shares_with_baseline: Num = req()
    recipe_shares_with_baseline: Num = req()


@dataclass(frozen=True, kw_only=True)
class ControlBlock(Block):
    """One control's check (``controls.<name>``): the fields every kind writes, those of the null
    (``contains_1``), a control built worse (``fraction``, ``matched``, ``called_worse``) and rejected (kept minus
    rejected) kinds, and any other kind's own fields in ``extra``, so a new kind needs no schema edit."""

    diff_bpb: DiffBpb = opt(DiffBpb)
    multiplier: Multiplier = opt(Multiplier)
    epochs_at_T: Num = opt()
    message: str | None = req()
    contains_1: bool | None = opt()
    fraction: Num = opt()
    matched: Matched = opt(Matched)
    called_worse: bool | None = opt()
    diff_bpb_kept_minus_rejected: DiffBpb = opt(DiffBpb)
    call: Call | None = opt()
    m_kept_over_m_rejected: RelativeMultiplier = opt(RelativeMultiplier)
    extra: dict[str, Any] = rest(doc="another kind's own fields")


@dataclass(frozen=True, kw_only=True)
class Controls(Block):
    """The controls: whose token count they match (``for``), those not built and why, each trained one's
    check (``checks``, by the control's name) and the decision they support."""

    for_: str | None = req(key="for")
    skipped: dict[str, str] = req(dict)
    decision: Decision = req(Decision)
    checks: dict[str, ControlBlock] = rest(doc="each trained control's check, by its name")


@dataclass(frozen=True, kw_only=True)
class PairPower(Block):
    """What one pair (a recipe or control against the baseline) could detect: the spread of its per-seed
    differences (df), the minimum detectable difference and multipliers."""

    sd_diff_bpb: Num = req()
    sd_dof: int | None = req()
    mde_bpb: Num = req()
    mde_multiplier: MdeMultiplier = req(MdeMultiplier)
    sd_interval: list[Num] = opt(list, doc="the spread's 95% interval (chi-square at its df)")
    sd_source: str | None = opt(doc="what the spread was pooled from")
    mde_bpb_interval: list[Num] = opt(list, doc="the MDE at the spread interval's ends")


@dataclass(frozen=True, kw_only=True)
class SeedsNeeded(Block):
    """The seeds a multiplier would need to be called at the verdict pair's spread (null: over 1000, or
    beyond the measured range)."""

    multiplier: Num = req()
    diff_bpb: Num = req()
    seeds: int | None = req()


@dataclass(frozen=True, kw_only=True)
class Power(Block):
    """The power of the verdict's pair (``pair``: recipe, baseline) at ``level`` and ``power``, the seeds
    each multiplier would need, and every pair's own (``by_pair``)."""

    level: Num = req()
    power: Num = req()
    n_seeds: int | None = req()
    pair: list[str] | None = req()
    sd_diff_bpb: Num = req()
    sd_dof: int | None = req()
    mde_bpb: Num = req()
    mde_multiplier: MdeMultiplier = req(MdeMultiplier)
    sd_interval: list[Num] = opt(list, doc="the spread's 95% interval (chi-square at its df)")
    sd_source: str | None = opt(doc="what the spread was pooled from")
    mde_bpb_interval: list[Num] = opt(list, doc="the MDE at the spread interval's ends")
    method: str | None = req()
    by_pair: dict[str, PairPower] = opt(dict)
    seeds_needed: list[SeedsNeeded] = req(list)
    note: str | None = opt()
