"""``goodput.json`` as one typed, versioned object: :class:`Goodput`, read by :func:`load` and written by
:func:`write` (the proxy phase writes it, the report, ``curate proxy`` and the summaries read it).

Schema 3 (:data:`SCHEMA_VERSION`) is read strictly: every key its writer writes is required, an unknown
key or a value of the wrong type is an error naming the file and the key's path. A file of schema 1 or 2
(an older run on disk) is brought to schema 3's shapes in memory by :func:`upgrade` (each recipe's data
goodput ``{"value", "ci": [lo, hi], "bounds": {"value", "ci": [lo, hi]}}`` becomes the multiplier's
``{"value", "ci_low", "ci_high", "bounds": {"value", "ci_low", "ci_high"}}``) and read without requiring
the keys its writer did not yet write. ``Goodput.from_json(d).to_json() == upgrade(d)`` for every file,
``== d`` for one of schema 3, the keys in their order.

The JSON Schema of both (``goodput.schema.json`` beside this module) is generated from these classes:
``python -m curate.goodput.schema > curate/goodput/goodput.schema.json``. docs/goodput.md describes the
fields.
"""

# ruff: noqa: RUF009 (req(), opt(), legacy() and rest() return dataclasses.field declarations)

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.goodput.intervals import (
    Bounds,
    Call,
    DiffBpb,
    Mark,
    MdeBounds,
    MdeMultiplier,
    Multiplier,
    Num,
    Ratio,
    RelativeMultiplier,
)
from curate.goodput.ladder import (
    Agreement,
    DecisionAgreement,
    GpuProjection,
    Ladder,
    LadderPoint,
    NoiseCeiling,
    PointAccuracy,
    PointCurve,
    PointRecipe,
    Published,
    Regime,
)
from curate.goodput.limited import LimitedEntry, RepetitionCurve
from curate.goodput.recipe import (
    Accuracy,
    BpbAtT,
    Costs,
    Curve,
    Draw,
    Paired,
    Recipe,
    Role,
    StreamShare,
)
from curate.goodput.typed import Block, GoodputError, block_schema, legacy, opt, req
from curate.goodput.verdict import (
    ControlBlock,
    Controls,
    Decision,
    HolmPair,
    Matched,
    MultipleComparisons,
    PairPower,
    Power,
    Ranking,
    RankPair,
    SeedsNeeded,
    Verdict,
)
from curate.io.files import atomic_write_json

SCHEMA_VERSION = 3
SCHEMA_FILE = Path(__file__).with_name("goodput.schema.json")

__all__ = [
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "Accuracy",
    "Agreement",
    "BaselineCurve",
    "Bootstrap",
    "Bounds",
    "BpbAtT",
    "Call",
    "ControlBlock",
    "Controls",
    "Costs",
    "Curve",
    "Decision",
    "DecisionAgreement",
    "DiffBpb",
    "Draw",
    "EvalSetInfo",
    "Goodput",
    "GoodputError",
    "GpuProjection",
    "HolmPair",
    "Ladder",
    "LadderPoint",
    "LimitedEntry",
    "Mark",
    "Matched",
    "MdeBounds",
    "MdeMultiplier",
    "Model",
    "MultipleComparisons",
    "Multiplier",
    "NoiseCeiling",
    "Num",
    "PairPower",
    "Paired",
    "PointAccuracy",
    "PointCurve",
    "PointRecipe",
    "Power",
    "Published",
    "RankPair",
    "Ranking",
    "Ratio",
    "Recipe",
    "Regime",
    "RelativeMultiplier",
    "RepetitionCurve",
    "Role",
    "ScorerOverlap",
    "SeedsNeeded",
    "SignalNoise",
    "Statistics",
    "StreamShare",
    "Tokenizer",
    "Verdict",
    "as_goodput",
    "as_recipe",
    "json_schema",
    "load",
    "upgrade",
    "write",
]


@dataclass(frozen=True, kw_only=True)
class SignalNoise(Block):
    """How far the recipes' mean bpb at T spread on one eval set (signal) against the seed noise of one
    recipe's mean; descriptive: no set is chosen, weighted or dropped by it."""

    signal: Num = req()
    noise: Num = req()
    snr: Num = req()
    too_noisy: bool | None = req()
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class EvalSetInfo(Block):
    """One eval set: its kind, whether it is in the headline, where it came from (a file ``path`` or an
    input ``source``), its size (``docs`` and ``chars``, or choice ``items``), its 13-grams and the
    documents each recipe lost to it."""

    kind: str | None = req()
    headline: bool | None = req()
    path: str | None = opt()
    source: str | None = opt()
    items: int | None = opt()
    multi_choice_items: int | None = opt()
    docs: int | None = opt()
    chars: int | None = opt()
    metric: str | None = req()
    note: str | None = opt()
    grams: int | None = req()
    decontaminated: dict[str, int] = req(dict)
    signal_noise: SignalNoise = opt(SignalNoise)


@dataclass(frozen=True, kw_only=True)
class Model(Block):
    """The proxy model of the main point (``curate.instrument.model_config.ModelConfig.describe``)."""

    name: str | None = req()
    depth: int | None = req()
    vocab_size: int | None = req()
    seq_len: int | None = req()
    width: int | None = req()
    heads: int | None = req()
    mlp: int | None = req()
    params: Num = req()
    non_embedding: int | None = req()
    matmul: int | None = req()
    flops_per_token: Num = req()


@dataclass(frozen=True, kw_only=True)
class Tokenizer(Block):
    """The proxy tokenizer: trained on raw rows (how, on what sample) or read from a file, its sha256."""

    source: str | None = req()
    method: str | None = opt()
    seed: int | None = opt()
    sample_docs: int | None = opt()
    sample_chars: int | None = opt()
    vocab_size_requested: int | None = opt()
    given_path: str | None = opt()
    path: str | None = req()
    vocab_size: int | None = req()
    sha256: str | None = req()


@dataclass(frozen=True, kw_only=True)
class BaselineCurve(Block):
    """The baseline's finished runs at each budget (``range``: the multipliers they measure)."""

    budgets: list[int] = req(list)
    bpb_mean: list[Num] = req(list)
    per_seed: list[list[Num]] = req(list)
    range: list[float] = req(list)
    method: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Statistics(Block):
    """How the calls and the descriptive bands were made."""

    calls: str | None = req()
    descriptive_bands: str | None = req()


@dataclass(frozen=True, kw_only=True)
class Bootstrap(Block):
    """The bootstrap of the descriptive bands over seeds."""

    n_boot: int | None = req()
    level: Num = req()
    seed: int | None = req()


@dataclass(frozen=True, kw_only=True)
class ScorerOverlap(Block):
    """A recipe that selects with a model trained on a (non-headline) eval set's file."""

    recipe: str | None = req()
    stage: str | None = req()
    model: str | None = req()
    eval_set: str | None = req()
    file: str | None = req()


@dataclass(frozen=True, kw_only=True)
class PowerLaw(Block):
    """Schema 1: a power law fitted to the baseline's curve (no longer read: nothing is extrapolated)."""

    a: Num = legacy()
    c: Num = legacy()
    alpha: Num = legacy()
    rmse: Num = legacy()


@dataclass(frozen=True, kw_only=True)
class Goodput(Block):
    """A proxy measurement: its recipes against the baseline, the ranking, the verdict, the controls,
    the power, the scale ladder and what the run was (docs/goodput.md, "goodput.json")."""

    schema_version: int | None = req(schema={"const": SCHEMA_VERSION}, legacy={"enum": [1, 2]})
    baseline: str | None = req()
    budget: int | None = req(doc="T: tokens each run trains on at the main point")
    seeds: list[int] = req(list)
    eval_sets: list[str] = req(list)
    headline: list[str] = req(list)
    eval_set_info: dict[str, EvalSetInfo] = req(dict)
    model: Model = req(Model)
    tokenizer: Tokenizer = req(Tokenizer)
    recipes: dict[str, Recipe] = req(dict)
    ranking: Ranking = req(Ranking)
    verdict: Verdict = req(Verdict)
    multiple_comparisons: MultipleComparisons = req(MultipleComparisons)
    controls: Controls = req(Controls)
    power: Power = req(Power)
    ladder: Ladder = req(Ladder)
    warnings: list[str] = req(list)
    regime: Regime = req(Regime)
    baseline_curve: BaselineCurve = req(BaselineCurve)
    curves_note: str | None = req()
    statistics: Statistics = req(Statistics)
    bootstrap: Bootstrap = req(Bootstrap)
    scorer_overlaps: list[ScorerOverlap] = req(list)
    held_out_sources: list[str] = req(list)
    data_limited: list[LimitedEntry] = opt(list, doc="the data-limited arm (proxy.data_limited)")
    repetition_curve: RepetitionCurve = opt(RepetitionCurve, doc="raw repeated 1..16 epochs against fresh")
    baseline_power_law: PowerLaw = legacy(PowerLaw, doc="schema 1")
    decision_agreement: Num = legacy(doc="schema 1: agreement of T/4 checkpoints with T (not shown)")

    @classmethod
    def from_json(
        cls, d: Any, *, strict: bool = True, source: str = "goodput.json", path: str = ""
    ) -> Goodput:
        """The measurement of ``d``: schema 3 read strictly (``strict=False``: its missing keys forgiven);
        schema 1 or 2 upgraded (:func:`upgrade`), its missing keys forgiven; a newer schema refused."""
        if not isinstance(d, Mapping):
            raise GoodputError(source, path, f"expected a JSON object, got {type(d).__name__}")
        version = schema_version(d, source)
        if version > SCHEMA_VERSION:
            raise GoodputError(
                source,
                "schema_version",
                f"{version} is newer than this curate reads ({SCHEMA_VERSION}); upgrade curate to read it",
            )
        if version < SCHEMA_VERSION:
            d, strict = upgrade(d), False
        return super().from_json(d, strict=strict, source=source, path=path)


def schema_version(d: Mapping[str, Any], source: str = "goodput.json") -> int:
    """A file's ``schema_version`` (1 when it has none: the first files had none)."""
    v = d.get("schema_version", 1)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise GoodputError(source, "schema_version", f"expected a positive integer, got {v!r}")
    return v


def _goodput_v3(g: Any) -> Any:
    """A schema-1/2 data goodput in schema 3's shape: ``ci: [lo, hi]`` as ``ci_low``, ``ci_high`` (in its
    place), in the goodput and in its ``bounds``; anything else as it was."""
    if not isinstance(g, Mapping):
        return g
    out: dict[str, Any] = {}
    for k, v in g.items():
        if k == "ci" and isinstance(v, list) and len(v) == 2:
            out["ci_low"], out["ci_high"] = v
        elif k == "bounds":
            out[k] = _goodput_v3(v)
        else:
            out[k] = v
    return out


def upgrade_recipe(r: Any) -> Any:
    """One recipe of a schema-1/2 file in schema 3's shapes (a copy; see :func:`upgrade`)."""
    if not isinstance(r, Mapping) or "goodput" not in r:
        return r
    return {k: _goodput_v3(v) if k == "goodput" else v for k, v in r.items()}


def upgrade(d: Mapping[str, Any]) -> dict[str, Any]:
    """A ``goodput.json`` of schema 1 or 2 in schema 3's shapes, as a new dict (``d`` is not changed):
    each recipe's data goodput takes the multiplier's shape (``ci_low``, ``ci_high``, its ``bounds``
    likewise) and ``schema_version`` is 3. A file of schema 3 is returned as it is. The keys an older
    writer did not write stay missing: no number is made up."""
    if schema_version(d) >= SCHEMA_VERSION:
        return dict(d)
    out = dict(d)
    recipes = d.get("recipes")
    if isinstance(recipes, Mapping):
        out["recipes"] = {r: upgrade_recipe(v) for r, v in recipes.items()}
    out["schema_version"] = SCHEMA_VERSION
    return out


def as_goodput(g: Goodput | Mapping[str, Any]) -> Goodput:
    """``g`` as a :class:`Goodput` (a dict is read as a file of its schema)."""
    return g if isinstance(g, Goodput) else Goodput.from_json(g)


def as_recipe(r: Recipe | Mapping[str, Any]) -> Recipe:
    """``r`` as a :class:`Recipe` (a dict is read as one recipe of a file of any schema, keys forgiven)."""
    return r if isinstance(r, Recipe) else Recipe.from_json(upgrade_recipe(r), strict=False, path="recipe")


def load(path: str | Path) -> Goodput:
    """Read ``path`` (a ``goodput.json``); a file that is not JSON or not the schema is a
    :class:`GoodputError` naming it and the key."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except ValueError as e:
        raise GoodputError(str(p), "", f"not JSON ({e})") from None
    return Goodput.from_json(d, source=str(p))


def write(g: Goodput, path: str | Path) -> Path:
    """Write ``g`` to ``path`` atomically, as the proxy phase always has (indent 1, no NaN)."""
    return atomic_write_json(path, g.to_json(), indent=1, allow_nan=False)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``goodput.json``: schema 3 (every key required), else a file of
    schema 1 or 2 (its own goodput shape, no key required)."""
    defs: dict[str, Any] = {}
    strict = block_schema(Goodput, defs, legacy=False)
    old = block_schema(Goodput, defs, legacy=True)
    defs = {"Goodput": strict, "LegacyGoodput": old, **dict(sorted(defs.items()))}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "goodput.json",
        "description": (
            f"The proxy phase's measurement (docs/goodput.md). Schema {SCHEMA_VERSION} has every key; a file "
            "of schema 1 or 2 (older runs) may lack any, and its data goodput interval is ci: [low, high]. "
            "Generated by python -m curate.goodput.schema from curate/goodput/*.py: do not edit."
        ),
        "if": {"required": ["schema_version"], "properties": {"schema_version": {"const": SCHEMA_VERSION}}},
        "then": {"$ref": "#/$defs/Goodput"},
        "else": {"$ref": "#/$defs/LegacyGoodput"},
        "$defs": defs,
    }


def schema_text() -> str:
    """:func:`json_schema` as the committed file's text."""
    return json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
