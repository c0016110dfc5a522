"""The pipeline's ``proxy:`` section: every key typed and checked by the machinery of stage parameters
(:mod:`curate.core.params`; the section as written is :class:`curate.proxy.spec.section.ProxySection`), made
into the measurement's settings (:class:`ProxyConfig`), registered as the ``proxy`` section.

```yaml
proxy:
  baseline: raw                  # the recipe every multiplier is measured against
  recipes:                       # default: raw (every valid input document) and curated (kept/)
    raw: {from: raw}             # kept/ ∪ rejected/ rows whose reason does not start with "quarantine:"
    curated: {from: kept}        # kept/
    hq: {from: kept, select: [{column: fasttext_quality_v1.hq_prob, min: 0.5}]}   # re-threshold stored scores
    ppl_mid: {from: kept, select: [{column: perplexity_v1.bpb, min_quantile: 0.25, max_quantile: 0.75}]}
                                 # a percentile band over kept/'s stored scores (Ankner et al. 2024)
    no_dedup: {from: kept, without_stages: [exact_dedup_v1]}   # kept ∪ rows that stage X rejected
    q: {from: kept, sweep: {column: gopher_quality_v1.word_count, min: [50, 100, 200]}}  # -> q@min=50, ...
  model: proxy_tiny              # a ladder name (curate.instrument.model_config.LADDER)
  budget: 300000                 # T, training tokens per run
  seeds: 3                       # or a list, e.g. [0, 1, 2]
  tokenizer: {vocab_size: 2048, sample_chars: 2000000, seed: 0}   # or {path: path/to/tokenizer.json}
                                 # (optional sha256: pin); a fixed file keeps a corpus revision's runs
                                 # comparable (a retrained BPE renumbers every token: a new noise draw)
                                 # trained on raw rows drawn by xxh64(seed, id): layout- and recipe-free
  eval_suite: web_targets        # a built-in target suite (curate.instrument.suites), before `eval:` entries
  eval:                          # default: [{name: heldout, kind: heldout, holdout: 0.02}]
    - {name: heldout, kind: heldout, holdout: 0.02}        # a split of the raw input, by id hash: FIT, not quality
    - {name: wiki, kind: text, path: data/wiki.jsonl.gz, max_docs: 200, format: jsonl}
    - {name: docs, kind: text, source: pydoc_topic}        # rows of this input source, held out of every recipe
    - {name: arc, kind: choice, path: eval/arc_easy.jsonl.gz, max_items: 200}   # {context, choices, gold}
  headline: [wiki, arc]          # sets averaged into the verdict; default: every set but heldout ones
  eval_chars: 20000              # per text set: documents in order, the last one cut at the limit
  controls: [null, rejected]     # control kinds; default: every one the input allows (docs/goodput.md); [] none
  controls_for: curated          # the recipe the controls are built for (default: the plain kept/ recipe)
  # a control kind's own keys (its dose, its calibrated spread) are documented in its module under
  # curate/proxy/kinds/ and built by it (curate.proxy.kinds.base.kind_settings)
  null_draw: 0                   # which family of null draws (calibration studies draw 0, 1, 2, ...)
  noise: {sd: 0.027, dof: 40, source: seeds 1000-1059}   # a pair's per-seed spread measured on fresh
                                 # seeds: the null's equivalence test and the power figures pool with it
  null_margin: 0.05              # the null must be shown within +-this many bpb of raw (TOST at 5%);
                                 # default: the margin an unbiased null passes 97.5% of the time at the
                                 # run's seeds and noise (said in the report)
  curve: [0.25, 0.5, 1, 2]       # budgets (x T) at which the baseline is trained to a finished model:
                                 # the measured tokens-to-bpb curve every multiplier is read from
  ladder:                        # extra (model, budget[, seeds]) points; every recipe runs at each
    - {model: proxy_tiny, budget: 200000, seeds: 2}   # seeds: a count or a list, e.g. [10, 11]
  disjoint_seeds: true           # every point runs seeds no other point runs (a ladder entry's count:
                                 # that many after the largest seed in use; a list sharing one is refused),
                                 # so points share no initialisation or stream order and agree by data alone
  train: {seq_len: 128, batch_size: 16, n_evals: 5, lr: 0.003}   # any curate.instrument.train_config.TrainConfig field
  cpus_per_run: 1                # Ray resources per run; on CPU, runs queue for cores
  gpu_fraction: 0.25             # num_gpus per run when CUDA is present (runs share a GPU)
  n_boot: 1000                   # bootstrap resamples for the CIs
  ablate: false                  # also run leave-one-stage-out recipes (ablation.json; curate ablate)
  search: {columns: {dsir_v1.resample_key: {min_quantile: [0.5, 0.9]}}}   # curate search (proxy/design/search.py)
  mix: {by: source, runs: 48}        # weights over the sources: curate mix, or the phase (docs/mixtures.md)
  data_limited: {k: [1, 4], repetition: [1, 2, 4, 8, 16]}   # when data is the limit: each recipe's share
                                 # of raw's pool of T/k tokens repeated against the pool repeated, and the
                                 # cost of repetition (docs/goodput.md, "When data is the limit")
```
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from curate.core.errors import PhaseError
from curate.core.params import RegistryError, Section, build_params, invalid
from curate.core.registry import SECTIONS
from curate.instrument.evalsets import EvalSpec, check_files
from curate.instrument.model_config import DEFAULT_MODEL
from curate.instrument.train_config import TrainConfig
from curate.proxy.errors import ProxyConfigError
from curate.proxy.kinds import Recipe, control_kinds
from curate.proxy.kinds.base import kind_settings, owned_keys
from curate.proxy.spec.entries import DEFAULT_SEEDS, LadderPoint, TokenizerSpec
from curate.proxy.spec.limited import DataLimitedSpec
from curate.proxy.spec.mix import MixSpec
from curate.proxy.spec.search import SearchSpec
from curate.proxy.spec.section import ProxySection
from curate.proxy.spec.sequential import SequentialSpec
from curate.proxy.statistics.gate import Noise

__all__ = ["LadderPoint", "ProxyConfig", "ProxyConfigError", "parse", "parse_section"]

DEFAULT_CURVE = (0.25, 0.5, 1.0, 2.0)


# CPU-sized defaults (the demo): 2 recipes x 3 seeds of proxy_tiny on 300k tokens each; the model and the
# training settings default to TrainConfig's (curate.instrument.train_config), the one place they live.
@SECTIONS.add("proxy")
@dataclass
class ProxyConfig(Section):
    """The measurement's settings, made from the ``proxy:`` section (:meth:`parse`)."""

    recipes: list[Recipe]
    baseline: str = "raw"
    model: str = DEFAULT_MODEL
    budget: int = 300_000
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    tokenizer: TokenizerSpec = field(default_factory=TokenizerSpec)
    eval: list[EvalSpec] = field(
        default_factory=lambda: [EvalSpec(name="heldout", kind="heldout", holdout=0.02)]
    )
    headline: list[str] = field(default_factory=list)
    controls: list[str] = field(default_factory=control_kinds)
    controls_explicit: bool = False
    controls_for: str | None = None
    ladder: list[LadderPoint] = field(default_factory=list)
    eval_chars: int = 20_000
    train: TrainConfig = field(default_factory=TrainConfig)  # proxy.train: every run's settings
    cpus_per_run: float = 1.0
    gpu_fraction: float = 0.25
    n_boot: int = 1000
    ablate: bool = False
    curve: tuple[float, ...] = DEFAULT_CURVE
    null_draw: int = 0
    null_margin: float | None = None  # the null's equivalence margin (bpb); None: what its noise supports
    noise: Noise | None = None  # the calibrated per-seed spread of a recipe's (and the null's) pair with raw
    sequential: SequentialSpec | None = None  # seeds until decided (proxy.sequential)
    kind_settings: dict[str, Any] = field(default_factory=dict)  # each kind's own keys, by kind
    search: SearchSpec | None = None  # proxy.search, run after the measurement (curate.proxy.design.search)
    mix: MixSpec | None = None  # proxy.mix: run by curate mix and by the proxy phase after its measurement
    data_limited: DataLimitedSpec | None = None  # the data-limited arm (proxy.data_limited)

    @classmethod
    def parse(cls, raw: Any, *, pipeline_path: str | None = None, load: bool = False) -> Self:
        """The measurement's settings from the ``proxy:`` mapping (None: every default); errors are
        :class:`ProxyConfigError` at the key's path (``proxy.ladder[0].budget: ...``). At ``load`` (a
        pipeline about to run) the eval files are checked too: present, and a choice file's items parse."""
        try:
            written = build_params(ProxySection, raw, where="proxy", noun="key", ignore=tuple(owned_keys()))
            cfg = cls.made(written, kind_settings(raw if isinstance(raw, Mapping) else None))
        except RegistryError as e:
            raise ProxyConfigError(e.keys, e.detail) from None
        if load:
            for keys, entry in written.eval_entries():
                try:
                    check_files([entry.spec()], pipeline_path)
                except PhaseError as e:
                    detail = str(e).removeprefix(f"proxy.eval {entry.name}: ")
                    raise ProxyConfigError((*keys, "path"), detail) from None
        return cfg

    @classmethod
    def made(cls, s: ProxySection, kinds: dict[str, Any] | None = None) -> Self:
        """The settings of the section as written: its keys, the defaults that follow from others (the
        headline: every eval set but the held-out splits; a ladder point's seeds: as many as the main
        point's; a search's and a mixture search's rungs and confirmation seeds), every budget checked to
        buy 4 steps. ``kinds``: the kinds' own keys (:func:`curate.proxy.kinds.base.kind_settings`; None: every
        kind's defaults)."""
        plain = (
            "baseline",
            "model",
            "budget",
            "eval_chars",
            "train",
            "cpus_per_run",
            "gpu_fraction",
            "n_boot",
            "ablate",
            "curve",
            "null_draw",
            "null_margin",
            "controls_for",
            "sequential",
            "tokenizer",
            "data_limited",
        )
        kw: dict[str, Any] = {k: getattr(s, k) for k in plain if getattr(s, k) is not None}
        if s.seeds is not None:
            kw["seeds"] = list(s.seeds)
        if s.controls is not None:
            kw["controls"], kw["controls_explicit"] = list(s.controls), True
        kw["noise"] = s.noise.noise() if s.noise else None
        kw["kind_settings"] = kinds if kinds is not None else kind_settings(None)
        evals = [e.spec() for _, e in s.eval_entries()]
        recipes = s.recipe_list()
        headline = [e.name for e in evals if e.kind != "heldout"] or [e.name for e in evals]
        cfg = cls(recipes=recipes, eval=evals, headline=list(s.headline or headline), **kw)
        cfg.ladder = ladder_points(s, tuple(cfg.seeds))
        cfg.search = s.search.spec(cfg.budget, cfg.seeds) if s.search is not None else None
        cfg.mix = s.mix.spec(cfg.budget, cfg.seeds) if s.mix is not None else None
        cfg.check_budgets()
        return cfg

    def check_budgets(self) -> None:
        """Every budget buys at least 4 steps: the main point's, the baseline's curve's, a search rung's, a
        ladder point's (a RegistryError at its key)."""
        checks: list[tuple[tuple[str | int, ...], Any, str]] = [
            (("budget",), lambda: self.train_config(0).steps, "; raise proxy.budget"),
            (("curve",), lambda: self.train_config(0, baseline=True).branch_steps(), ""),
        ]
        for i, rung in enumerate(self.search.rungs if self.search else []):
            run = dataclasses.replace(self.train, model=self.model, tokens=rung.budget)
            checks.append((("search", "rungs", i, "budget"), lambda run=run: run.steps, ""))
        for i, p in enumerate(self.ladder):
            checks.append((("ladder", i, "budget"), lambda p=p: self.train_config(0, p).steps, ""))
        for keys, check, hint in checks:
            try:
                check()
            except ValueError as e:
                raise invalid(keys, f"{e}{hint}") from None

    @property
    def tokenizer_path(self) -> str | None:
        """``proxy.tokenizer.path``: a fixed tokenizer file (None: one is trained on raw rows)."""
        return self.tokenizer.path

    @property
    def tokenizer_sha256(self) -> str | None:
        """``proxy.tokenizer.sha256`` (lower case): the file's pinned digest."""
        return self.tokenizer.sha256.lower() if self.tokenizer.sha256 else None

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def sample_chars(self) -> int:
        return self.tokenizer.sample_chars

    @property
    def tokenizer_seed(self) -> int:
        return self.tokenizer.seed

    def tokenizer_named(self) -> str | None:
        return self.tokenizer.path

    def train_config(
        self, seed: int, point: LadderPoint | None = None, *, baseline: bool = False
    ) -> TrainConfig:
        """The run of one recipe at ``point`` (default: the main point). Every run of a point shares one
        warmup (in steps), so the baseline's trunk is each shorter run's, step for step; ``baseline``: the
        trunk to the curve's longest budget with a finished branch at each other one (the main budget's
        eval curve logged as a standalone run's)."""
        model, budget = (point.model, point.budget) if point else (self.model, self.budget)
        main = dataclasses.replace(self.train, model=model, tokens=budget, seed=seed)
        run = dataclasses.replace(main, warmup_steps=main.warmup_steps or main.warmup())
        if baseline and main.schedule == "wsd" and len(self.curve) > 1:
            budgets = self.curve_budgets(point)
            run = dataclasses.replace(run, tokens=budgets[-1], branches=budgets[:-1], eval_budget=budget)
        return run

    def follow_up(self, **changes: Any) -> ProxyConfig:
        """A measurement derived from this one (an ablation, a search rung) with ``changes``: one point, no
        controls, ladder, data-limited arm or follow-ups of its own."""
        fixed: dict[str, Any] = dict(
            controls=[],
            controls_explicit=True,
            controls_for=None,
            ladder=[],
            ablate=False,
            search=None,
            mix=None,
            data_limited=None,
        )
        return dataclasses.replace(self, **{**fixed, **changes})

    def curve_budgets(self, point: LadderPoint | None = None) -> list[int]:
        """The budgets the baseline is finished at (``curve`` x T), those under 4 steps dropped."""
        budget = point.budget if point else self.budget
        main = dataclasses.replace(self.train, model=self.model, tokens=budget)
        out: dict[int, int] = {}
        for f in self.curve:
            b = budget if f == 1 else round(f * budget)
            if b // main.tokens_per_step >= 4:
                out.setdefault(main.steps_for(b), b)
        return sorted(out.values())

    @property
    def main_point(self) -> LadderPoint:
        return LadderPoint(self.model, self.budget, tuple(self.seeds))

    def points(self) -> list[LadderPoint]:
        """The main point first, then the ladder's other points (duplicates of the main one dropped)."""
        out = [self.main_point]
        for p in self.ladder:
            if (p.model, p.budget) != (self.model, self.budget):
                out.append(p)
        return out


def ladder_points(s: ProxySection, main: tuple[int, ...]) -> list[LadderPoint]:
    """``proxy.ladder``'s points, their seeds resolved in order (``proxy.disjoint_seeds``: each entry's
    fresh against the main point's and every entry's before it; an error at ``ladder[i].seeds``)."""
    first = LadderPoint(s.model or DEFAULT_MODEL, s.budget or ProxyConfig.budget, main).name
    used = dict.fromkeys(main, f"the main point {first}") if s.disjoint_seeds else None
    out = []
    for i, entry in enumerate(s.ladder or []):
        try:
            point = entry.point(main, used)
        except RegistryError as e:
            raise invalid(("ladder", i, *e.keys), e.detail) from None
        if used is not None:
            used.update(dict.fromkeys(point.seeds, point.name))
        out.append(point)
    return out


def parse(section: dict[str, Any] | None) -> ProxyConfig:
    """The ``proxy:`` mapping as :class:`ProxyConfig` (CPU-sized defaults); errors are
    :class:`ProxyConfigError` at the key's path (a verb on a finished run shows them as they are)."""
    return ProxyConfig.parse(section)


def parse_section(section: Any) -> ProxyConfig:
    """:func:`parse`: the section as a verb on a finished run (or a benchmark) reads it."""
    return ProxyConfig.parse(section)
