"""One recipe's entry of ``goodput.json`` (``recipes.<r>``): the called numbers (multiplier, data goodput,
the paired difference), the descriptive ones (bpb at T with its bootstrap band, accuracy, curves), its data
and its costs."""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from curate.goodput.intervals import Call, DiffBpb, GoodputV2, Multiplier, Num, Ratio
from curate.goodput.typed import Block, legacy, opt, req

Role = Literal["baseline", "recipe", "control"]


@dataclass(frozen=True, kw_only=True)
class BpbAtT(Block):
    """Mean headline bpb of the recipe's finished models at T, with a bootstrap band over its own seeds:
    descriptive (calls use the paired difference)."""

    value: Num = req()
    ci_low: Num = req()
    ci_high: Num = req()
    note: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Paired(Block):
    """The recipe against the baseline at T: the paired difference (recipe - baseline), each seed's, and
    the call its own interval makes (unadjusted; the decision's are in ``multiple_comparisons``)."""

    diff_bpb: DiffBpb = req(DiffBpb)
    per_seed_diff: list[Num] = req(list)
    call: Call | None = req()
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Accuracy(Block):
    """Accuracy on a multiple-choice eval set at T: the mean over seeds and each seed's."""

    at_T: Num = req()
    per_seed: list[Num] = req(list)


@dataclass(frozen=True, kw_only=True)
class StreamShare(Block):
    """The share of the recipe's training tokens that are the baseline's own stream, per seed."""

    per_seed: list[Num] = req(list)
    mean: Num = req()


@dataclass(frozen=True, kw_only=True)
class Draw(Block):
    """One seed's draw of a sampled control: its documents and tokens (a corrupting one's: corrupted too)."""

    docs: int | None = req()
    tokens: int | None = req()
    corrupted: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class Costs(Block):
    """What the recipe cost: proxy training (device-seconds, tokens) and, for the curated recipes, the
    pipeline's CPU-seconds, by stage."""

    proxy_device_s: Num = req()
    proxy_tokens_trained: int | None = req()
    curation_cpu_s: Num = req()
    curation_cpu_s_by_stage: dict[str, float] = req(dict)
    effective_tokens_per_device_hour: Num = legacy(doc="schema 1")


@dataclass(frozen=True, kw_only=True)
class Curve(Block):
    """A training curve on one eval set: mean bpb with a bootstrap band over seeds at the eval points
    (``tokens``), each seed's, and the slope ``-d bpb / d ln t`` between points (descriptive)."""

    tokens: list[float] = req(list)
    bpb_mean: list[Num] = req(list)
    bpb_ci_low: list[Num] = req(list)
    bpb_ci_high: list[Num] = req(list)
    per_seed: list[list[Num]] = req(list)
    slope_tokens: list[float] = req(list)
    neg_dbpb_dlnt: list[Num] = req(list)


@dataclass(frozen=True, kw_only=True)
class LearningSignalCurve(Block):
    """Schema 1-2: the headline curve's slope ``-d bpb / d ln t`` between eval points."""

    tokens: list[float] = legacy(list)
    neg_dbpb_dlnt: list[Num] = legacy(list)


@dataclass(frozen=True, kw_only=True)
class Recipe(Block):
    """One recipe (or the baseline, or a control) of the measurement."""

    role: Role | None = req()
    multiplier: Multiplier = req(Multiplier)
    multiplier_adjusted: Multiplier = opt(
        Multiplier,
        doc="the multiplier's interval at the family's Bonferroni level: what a recipe picked as the best keeps",
    )
    goodput: Ratio = req(Ratio, legacy=GoodputV2, doc="data goodput: yield x multiplier")
    yield_: Num = req(key="yield", doc="tokens kept / tokens in")
    effective_tokens: Num = req()
    tokens_in: int | None = req()
    tokens_kept: int | None = req()
    stream_shared_with_baseline: StreamShare = req(StreamShare)
    corrupted_docs: int | None = req()
    branch_anomalies: int | None = req()
    paired: Paired = req(Paired)
    bpb_at_T: BpbAtT = req(BpbAtT)
    accuracy: dict[str, Accuracy] = req(dict)
    epochs_at_T: Num = req()
    docs: int | None = req()
    decontaminated: int | None = req()
    decontaminated_by_set: dict[str, int] = req(dict)
    rules: list[dict[str, Any]] = req(list, doc="its select rules over stored scores (curate.core.rules)")
    subsample_of: str | None = opt()
    draws: dict[str, Draw] = opt(dict, doc="a sampled control's draw per seed")
    learning_signal_per_token: Num = req()
    anomalies: int | None = req()
    rollbacks: int | None = req()
    costs: Costs = req(Costs)
    curves: dict[str, Curve] = req(dict)
    learning_signal_curve: LearningSignalCurve = legacy(LearningSignalCurve, doc="schema 1-2")
    bpb_at_T_over_4: Num = legacy(doc="schema 1")
