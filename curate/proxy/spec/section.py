"""The ``proxy:`` section as written (:class:`ProxySection`): every key typed and checked by the machinery of
stage parameters (:mod:`curate.core.params`), the checks that need several keys in its ``validate()``.
:mod:`curate.proxy.spec.config` makes the measurement's settings (:class:`ProxyConfig`) of it, with the
defaults that follow from other keys (the headline from the eval sets, a ladder point's seeds, a search's
rungs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from curate.core.params import Keys, Parse, bounds, build_params, invalid, one_of
from curate.instrument.train_config import TrainConfig
from curate.proxy.kinds import Recipe, control_kinds
from curate.proxy.spec.entries import (
    EvalEntry,
    LadderEntry,
    Model,
    Seeds,
    TokenizerSpec,
    built,
    parse_recipes,
)
from curate.proxy.spec.limited import DataLimitedSpec
from curate.proxy.spec.mix import MixSection, mix_written
from curate.proxy.spec.search import SearchSection
from curate.proxy.spec.sequential import SequentialSpec
from curate.proxy.statistics.gate import NoiseSpec

DEFAULT_RECIPES = {"raw": {"from": "raw"}, "curated": {"from": "kept"}}
DEFAULT_EVAL = EvalEntry(name="heldout", kind="heldout", holdout=0.02)
RUN_KEYS = {"model": "proxy.model", "tokens": "proxy.budget", "seed": "proxy.seeds"}  # not proxy.train's


def _controls(value: Any) -> list[str]:
    """``proxy.controls``: control kinds (YAML reads a bare ``null`` as None: ``[null]`` is the null
    control); an empty list, or no value, turns them off."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"expected a list of controls ({', '.join(control_kinds())}) or [], got {value!r}")
    names = ["null" if c is None else c for c in value]
    for i, c in enumerate(names):
        if c not in control_kinds():
            raise invalid(i, one_of(c, control_kinds()))
    return names


def _curve(value: list[float]) -> tuple[float, ...]:
    """``proxy.curve``: positive budget factors including 1, sorted, each once."""
    if not value or 1 not in value or not all(x > 0 for x in value):
        raise ValueError(
            f"expected a list of positive budget factors including 1 (e.g. [0.25, 0.5, 1, 2]), got {value!r}"
        )
    return tuple(sorted(set(value)))


def _train(value: Mapping[str, Any]) -> TrainConfig:
    """``proxy.train``: any :class:`TrainConfig` field but those the section's own keys set."""
    for key, by in RUN_KEYS.items():
        if key in value:
            raise invalid(key, f"set by {by}, not under proxy.train")
    return build_params(TrainConfig, value, where="", noun="key", exclude=tuple(RUN_KEYS))


@dataclass(kw_only=True)
class ProxySection:
    """The ``proxy:`` mapping as written (keys: :mod:`curate.proxy.spec.config`'s docstring); None: not
    written (the measurement's default, :class:`curate.proxy.spec.config.ProxyConfig`'s). A control kind's
    own keys (its ``SETTINGS``) are not fields here: the kind builds them
    (:func:`curate.proxy.kinds.base.kind_settings`)."""

    baseline: str | None = None
    recipes: Annotated[list[Recipe], Parse(parse_recipes, written=dict[str, Any])] | None = None
    model: Model | None = None
    budget: int | None = field(default=None, metadata=bounds(1))
    seeds: Seeds | None = None
    tokenizer: TokenizerSpec | None = None
    eval_suite: str | None = None
    eval: list[EvalEntry] | None = None
    eval_chars: int | None = field(default=None, metadata=bounds(1))
    headline: list[str] | None = None
    controls: Annotated[list[str], Parse(_controls)] | None = None
    controls_for: str | None = None
    ladder: list[LadderEntry] | None = None
    disjoint_seeds: bool | None = None
    train: Annotated[TrainConfig, Parse(_train, written=dict[str, Any])] | None = None
    cpus_per_run: float | None = field(default=None, metadata=bounds(0, lo_open=True))
    gpu_fraction: float | None = field(default=None, metadata=bounds(0))
    n_boot: int | None = field(default=None, metadata=bounds(1))
    ablate: bool | None = None
    search: SearchSection | None = None
    mix: Annotated[MixSection, Parse(mix_written)] | None = None
    curve: Annotated[tuple[float, ...], Parse(_curve, written=list[float])] | None = None
    null_draw: int | None = field(default=None, metadata=bounds(0))
    null_margin: float | None = field(default=None, metadata=bounds(0, lo_open=True))
    noise: NoiseSpec | None = None
    sequential: SequentialSpec | None = None
    data_limited: DataLimitedSpec | None = None

    def recipe_list(self) -> list[Recipe]:
        """The recipes written, or raw (every valid input document) and curated (kept/)."""
        return self.recipes or parse_recipes(DEFAULT_RECIPES)

    def eval_entries(self) -> list[tuple[Keys, EvalEntry]]:
        """The eval sets written, each with its key path: ``eval_suite``'s first, then ``eval``'s; none
        written: a 2% held-out split of the raw input."""
        from curate.instrument.suites import suite

        out: list[tuple[Keys, EvalEntry]] = []
        if self.eval_suite is not None:
            try:
                entries = suite(self.eval_suite)
            except KeyError as e:
                raise invalid("eval_suite", str(e.args[0])) from None
            out += [(("eval_suite",), built(EvalEntry, e, ("eval_suite",))) for e in entries]
        out += [(("eval", i), e) for i, e in enumerate(self.eval or [])]
        return out or [(("eval",), DEFAULT_EVAL)]

    def validate(self) -> None:
        """What needs several keys: the baseline, the controls' recipe and no control's name is a recipe;
        eval sets named once and the headline naming them; a sequential design's calibrated noise."""
        names = [r.name for r in self.recipe_list()]
        baseline = "raw" if self.baseline is None else self.baseline
        if baseline not in names:
            raise invalid("baseline", f"{baseline!r} is not a recipe; recipes: {', '.join(names)}")
        sets: list[str] = []
        for keys, e in self.eval_entries():
            if e.name in sets:
                raise invalid(keys, f"eval set {e.name!r} is defined twice")
            sets.append(e.name)
        if self.headline is not None:
            if not self.headline:
                raise invalid("headline", "expected a non-empty list of eval set names")
            for i, h in enumerate(self.headline):
                if h not in sets:
                    raise invalid(("headline", i), f"{h!r} names no eval set; eval sets: {', '.join(sets)}")
        clash = [c for c in self.controls or [] if c in names]
        if clash:
            raise invalid("controls", f"control name(s) {clash} clash with recipes of the same name")
        if self.controls_for is not None and (
            self.controls_for not in names or self.controls_for == baseline
        ):
            raise invalid(
                "controls_for",
                f"{self.controls_for!r} is not a non-baseline recipe; recipes: {', '.join(names)}",
            )
        if self.sequential is not None and self.noise is None:
            raise invalid("sequential", "needs proxy.noise: the design is built on the calibrated spread")
        if self.search is not None and self.search.objective == "data_limited" and self.data_limited is None:
            raise invalid(
                ("search", "objective"),
                "data_limited needs proxy.data_limited: the search ranks at its first compute-to-data ratio k",
            )
