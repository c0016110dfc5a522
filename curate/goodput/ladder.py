"""The scale ladder of ``goodput.json`` (every point's paired numbers and decision accuracy against the
largest) and the regime the run measured, beside published ones."""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

from dataclasses import dataclass

from curate.goodput.intervals import Call, DiffBpb, MdeMultiplier, Multiplier, Num
from curate.goodput.typed import Block, opt, req, rest
from curate.goodput.verdict import RankPair


@dataclass(frozen=True, kw_only=True)
class PointRecipe(Block):
    """One recipe at one ladder point: its mean and per-seed headline bpb at the point's budget and its
    paired numbers against the baseline there."""

    bpb_at_T: Num = req()
    per_seed_bpb_at_T: list[Num] = req(list)
    diff_bpb: DiffBpb = req(DiffBpb)
    call: Call | None = req()
    multiplier: Multiplier = req(Multiplier)


@dataclass(frozen=True, kw_only=True)
class PointCurve(Block):
    """The baseline's finished-run bpb at each budget of one point."""

    budgets: list[int] = req(list)
    bpb: list[Num] = req(list)


@dataclass(frozen=True, kw_only=True)
class Agreement(Block):
    """A share of recipe pairs two rankings order alike (``value``), with its 95% cluster-bootstrap interval
    (``ci``; recipes and seeds resampled, :mod:`curate.proxy.statistics.transfer`), the pairs it rests on
    and how many of the bootstrap's draws had a value (a draw whose reference calls no pair has none)."""

    value: Num = req()
    ci: list[Num] | None = req()
    pairs: int | None = opt()
    weight: Num = opt(doc="the sum of the pairs' weights (1 - p of the reference's paired t)")
    draws_with_value: int | None = req()


@dataclass(frozen=True, kw_only=True)
class PointAccuracy(Block):
    """A point's decision accuracy against the reference point: over every pair of non-control recipes,
    each weighted by the reference's confidence in its sign, and over the pairs the reference calls (Holm)."""

    all_pairs_weighted: Agreement = req(Agreement)
    called: Agreement = req(Agreement)


@dataclass(frozen=True, kw_only=True)
class NoiseCeiling(Block):
    """The reference point against itself, half its seeds against the other half (``splits`` ordered
    splits): the decision accuracy a point that ranks exactly as the reference does reaches through seed
    noise."""

    all_pairs_weighted: Agreement = req(Agreement)
    called: Agreement = req(Agreement)
    splits: int | None = req()
    seeds_per_half: list[int] = req(list)


@dataclass(frozen=True, kw_only=True)
class LadderPoint(Block):
    """One point of the ladder (a model at a budget, its seeds): sizes, cost, each recipe's numbers, its
    order and power, and its decision accuracy against the reference point (absent at the reference)."""

    name: str | None = req()
    model: str | None = req()
    budget: int | None = req()
    seeds: list[int] = req(list)
    params: Num = req()
    non_embedding: int | None = req()
    flops_per_token: Num = req()
    tokens_per_param: Num = req()
    compute_flops_per_run: Num = req()
    device_s: Num = req()
    tokens_per_s: Num = req()
    recipes: dict[str, PointRecipe] = req(dict)
    ranking: list[str] = req(list)
    called_pairs: list[RankPair] = req(list)
    sd_diff_bpb: Num = req()
    sd_dof: int | None = req()
    mde_multiplier: MdeMultiplier = req(MdeMultiplier)
    baseline_curve: PointCurve = req(PointCurve)
    anomalies: int | None = req()
    rollbacks: int | None = req()
    branch_anomalies: int | None = req()
    decision_accuracy: PointAccuracy = opt(PointAccuracy)
    decision_accuracy_vs_reference: Num = opt(doc="before 2026-12-07: over the pairs the reference called")
    decision_accuracy_ci: list[Num] | None = opt(doc="before 2026-12-07: its bootstrap over seeds")
    decision_pairs: int | None = opt(doc="before 2026-12-07: the pairs the reference called, unadjusted")


@dataclass(frozen=True, kw_only=True)
class DecisionAgreement(Block):
    """The share of (point, recipe pair) orders that agree with the reference point's, controls out."""

    value: Num = req()
    pairs: int | None = req()
    points: list[str] = req(list)
    reference: str | None = req()
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Ladder(Block):
    """The ladder: its points (the main one first), the reference (largest compute) point, the agreement
    across points, what decision accuracy is read against (the noise ceiling, chance), whether the points'
    seeds are disjoint, and the points where a check failed (``<check>_at``: the controls' kinds name them)."""

    reference: str | None = req()
    points: list[LadderPoint] = req(list)
    main: str | None = req()
    decision_agreement: DecisionAgreement = opt(DecisionAgreement)
    noise_ceiling: NoiseCeiling = opt(NoiseCeiling)
    chance: Num = opt(doc="the decision accuracy of coin flips")
    seeds_disjoint: bool | None = opt()
    shared_seeds: dict[str, list[str]] = opt(dict, doc="each seed more than one point runs: those points")
    accuracy_method: str | None = opt()
    warning: str | None = opt()
    failed_at: dict[str, list[str]] = rest(
        pattern="_at$", doc="each control kind's failed points, by its key"
    )


@dataclass(frozen=True, kw_only=True)
class Published(Block):
    """A published training regime to set this run beside."""

    name: str | None = req()
    params: Num = req()
    tokens: Num = opt()
    tokens_per_param: Num = req()
    note: str | None = req()


@dataclass(frozen=True, kw_only=True)
class GpuProjection(Block):
    """This point's speed on a GPU projected from FLOPs (an upper bound, not a measurement)."""

    device: str | None = req()
    peak_flops: Num = req()
    mfu: Num = req()
    note: str | None = req()
    this_point_tokens_per_s: Num = req()
    this_point_run_s: Num = req()
    datadecide_150m_run_hours: Num = req()
    ladder_compute_flops: list[Num] = req(list)


@dataclass(frozen=True, kw_only=True)
class Regime(Block):
    """The main point's size and compute beside published regimes, and a GPU projection."""

    model: str | None = req()
    params: Num = req()
    non_embedding: int | None = req()
    tokens: int | None = req()
    tokens_per_param: Num = req()
    compute_flops_per_run: Num = req()
    measured_tokens_per_s: Num = req()
    published: list[Published] = req(list)
    gpu_projection: GpuProjection = req(GpuProjection)
