"""The pipeline's ``proxy:`` section, parsed and validated (unknown keys name the valid ones).

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
  controls: [null, rejected, planted]   # default where the input allows (docs/goodput.md); [] turns them off
  controls_for: curated          # the recipe the controls are built for (default: the plain kept/ recipe)
  planted: 0.4                   # the planted control: the null's subsample (raw's documents drawn at the
                                 # controlled recipe's token count) with this share of its documents
                                 # word-shuffled, layout kept (proxy/data/training.py, proxy/assembly/controls.py)
  null_draw: 0                   # which family of null draws (calibration studies draw 0, 1, 2, ...)
  noise: {sd: 0.027, dof: 40, source: seeds 1000-1059}   # a pair's per-seed spread measured on fresh
                                 # seeds: the null's equivalence test and the power figures pool with it
  planted_noise: {sd: 0.013, dof: 40, source: ...}   # planted - null's spread: the planted control is
                                 # then called by the z test the sequential calls use, on it pooled
  null_margin: 0.05              # the null must be shown within +-this many bpb of raw (TOST at 5%);
                                 # default: the margin an unbiased null passes 97.5% of the time at the
                                 # run's seeds and noise (said in the report)
  curve: [0.25, 0.5, 1, 2]       # budgets (x T) at which the baseline is trained to a finished model:
                                 # the measured tokens-to-bpb curve every multiplier is read from
  ladder:                        # extra (model, budget[, seeds]) points; every recipe runs at each
    - {model: proxy_tiny, budget: 200000, seeds: 2}
  train: {seq_len: 128, batch_size: 16, n_evals: 5, lr: 0.003}   # any curate.instrument.train_config.TrainConfig field
  cpus_per_run: 1                # Ray resources per run; on CPU, runs queue for cores
  gpu_fraction: 0.25             # num_gpus per run when CUDA is present (runs share a GPU)
  n_boot: 1000                   # bootstrap resamples for the CIs
  ablate: false                  # also run leave-one-stage-out recipes (ablation.json; curate ablate)
  search: {columns: {dsir_v1.resample_key: {min_quantile: [0.5, 0.9]}}}   # curate search (proxy/design/search.py)
  mix: {by: source, dirichlet: 12}   # weights over the sources: curate mix, or the phase (docs/mixtures.md)
```
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from curate.core.errors import ConfigError, PhaseError
from curate.core.registry import SECTIONS
from curate.instrument.evalsets import EvalSpec, check_files
from curate.instrument.model_config import DEFAULT_MODEL, LADDER
from curate.instrument.train_config import TrainConfig
from curate.pipeline.keys import located_phase_error
from curate.proxy.errors import ProxyConfigError, check_keys
from curate.proxy.kinds import Recipe, control_kinds
from curate.proxy.spec.entries import (
    DEFAULT_SEEDS,
    LadderPoint,
    parse_eval_specs,
    parse_ladder,
    parse_recipes,
    parse_seeds,
)
from curate.proxy.spec.mix import MixSpec, parse_mix
from curate.proxy.spec.search import SearchSpec, parse_search
from curate.proxy.spec.sequential import SequentialSpec, parse_sequential
from curate.proxy.statistics.gate import Noise

# CPU-sized defaults (the demo): 2 recipes x 3 seeds of proxy_tiny on 300k tokens each; the model and the
# training settings default to TrainConfig's (curate.instrument.train_config), the one place they live.
KEYS = [
    "baseline",
    "recipes",
    "model",
    "budget",
    "seeds",
    "tokenizer",
    "eval",
    "eval_chars",
    "train",
    "cpus_per_run",
    "gpu_fraction",
    "n_boot",
    "headline",
    "controls",
    "controls_for",
    "ladder",
    "eval_suite",
    "ablate",
    "search",
    "mix",
    "planted",
    "curve",
    "null_draw",
    "null_margin",
    "noise",
    "sequential",
    "planted_noise",
]
TOKENIZER_KEYS = ["path", "sha256", "vocab_size", "sample_chars", "seed"]
DEFAULT_CURVE = (0.25, 0.5, 1.0, 2.0)


@dataclass
class ProxyConfig:
    recipes: list[Recipe]
    baseline: str = "raw"
    model: str = DEFAULT_MODEL
    budget: int = 300_000
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    tokenizer_path: str | None = None
    tokenizer_sha256: str | None = None
    vocab_size: int = 2048
    sample_chars: int = 2_000_000
    eval: list[EvalSpec] = field(
        default_factory=lambda: [EvalSpec(name="heldout", kind="heldout", holdout=0.02)]
    )
    headline: list[str] = field(default_factory=list)
    controls: list[str] = field(default_factory=control_kinds)
    controls_explicit: bool = False
    controls_for: str | None = None
    ladder: list[LadderPoint] = field(default_factory=list)
    tokenizer_seed: int = 0
    eval_chars: int = 20_000
    train: TrainConfig = field(default_factory=TrainConfig)  # proxy.train: every run's settings
    cpus_per_run: float = 1.0
    gpu_fraction: float = 0.25
    n_boot: int = 1000
    ablate: bool = False
    planted: float = 0.4  # kinds.planted.PLANTED_DEFAULT
    curve: tuple[float, ...] = DEFAULT_CURVE
    null_draw: int = 0
    null_margin: float | None = None  # the null's equivalence margin (bpb); None: what its noise supports
    noise: Noise | None = None  # the calibrated per-seed spread of a recipe's (and the null's) pair with raw
    sequential: SequentialSpec | None = None  # seeds until decided (proxy.sequential)
    planted_noise: Noise | None = None  # the calibrated per-seed spread of planted - null
    search: SearchSpec | None = None  # proxy.search, run after the measurement (curate.proxy.design.search)
    mix: MixSpec | None = None  # proxy.mix: run by curate mix and by the proxy phase after its measurement

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
        controls, ladder or follow-ups of its own."""
        fixed: dict[str, Any] = dict(
            controls=[],
            controls_explicit=True,
            controls_for=None,
            ladder=[],
            ablate=False,
            search=None,
            mix=None,
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


def _plain_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """The scalar keys (model, numbers, ablate, seeds) and the tokenizer's, validated."""
    kw: dict[str, Any] = {}
    if "model" in raw:
        if raw["model"] not in LADDER:
            raise PhaseError(f"proxy.model: {raw['model']!r}; valid sizes: {', '.join(LADDER)}")
        kw["model"] = raw["model"]
    for key, tp in (
        ("null_draw", int),
        ("budget", int),
        ("eval_chars", int),
        ("n_boot", int),
        ("cpus_per_run", float),
        ("gpu_fraction", float),
    ):
        if key in raw:
            if not isinstance(raw[key], int | float) or isinstance(raw[key], bool):
                raise PhaseError(f"proxy.{key}: expected a number, got {raw[key]!r}")
            kw[key] = tp(raw[key])
    kw.update(_gate_keys(raw))
    if "planted" in raw:
        v = raw["planted"]
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 < v < 1:
            raise ProxyConfigError(("planted",), f"expected a fraction in (0, 1), got {v!r}")
        kw["planted"] = float(v)
    if "curve" in raw:
        c = raw["curve"]
        ok = (
            isinstance(c, list)
            and c
            and all(isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in c)
        )
        if not ok or 1 not in c:
            raise ProxyConfigError(
                ("curve",),
                f"expected a list of positive budget factors including 1 (e.g. [0.25, 0.5, 1, 2]), got {c!r}",
            )
        kw["curve"] = tuple(sorted({float(x) for x in c}))
    if "ablate" in raw:
        if not isinstance(raw["ablate"], bool):
            raise ProxyConfigError(("ablate",), f"expected true or false, got {raw['ablate']!r}")
        kw["ablate"] = raw["ablate"]
    if "seeds" in raw:
        kw["seeds"] = list(parse_seeds(raw["seeds"], ("seeds",)))
    if "tokenizer" in raw:
        kw.update(_tokenizer_keys(raw["tokenizer"]))
    return kw


def _gate_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """``proxy.null_margin`` and ``proxy.noise``: what the null's equivalence test is judged on."""
    kw: dict[str, Any] = {}
    if "null_margin" in raw:
        v = raw["null_margin"]
        if not isinstance(v, int | float) or isinstance(v, bool) or not v > 0:
            raise ProxyConfigError(("null_margin",), f"expected a margin in bpb > 0, got {v!r}")
        kw["null_margin"] = float(v)
    if "noise" in raw:
        kw["noise"] = _noise(raw["noise"])
    if "planted_noise" in raw:
        kw["planted_noise"] = _noise(raw["planted_noise"], "planted_noise")
    if "sequential" in raw:
        if "noise" not in raw:
            raise ProxyConfigError(
                ("sequential",), "needs proxy.noise: the design is built on the calibrated spread"
            )
        kw["sequential"] = parse_sequential(raw["sequential"])
    return kw


def _noise(raw: Any, key: str = "noise") -> Noise:
    """``proxy.noise`` (``planted_noise``): a pair's per-seed spread measured on fresh calibration seeds."""
    n = check_keys(raw, ["sd", "dof", "source"], f"proxy.{key}")
    sd, dof = n.get("sd"), n.get("dof")
    if not isinstance(sd, int | float) or isinstance(sd, bool) or not sd > 0:
        raise ProxyConfigError((key, "sd"), f"expected a spread in bpb > 0, got {sd!r}")
    if not isinstance(dof, int) or isinstance(dof, bool) or dof < 1:
        raise ProxyConfigError(
            (key, "dof"), f"expected its degrees of freedom (an integer >= 1), got {dof!r}"
        )
    return Noise(float(sd), dof, str(n.get("source", "")))


def _tokenizer_keys(raw: Any) -> dict[str, Any]:
    """``proxy.tokenizer``: a file (``path``, optionally pinned by ``sha256``) or how to train one."""
    tok = check_keys(raw, TOKENIZER_KEYS, "proxy.tokenizer")
    kw: dict[str, Any] = {"tokenizer_path": tok.get("path")}
    if "sha256" in tok:
        if not tok.get("path"):
            raise ProxyConfigError(("tokenizer", "sha256"), "pins a tokenizer file: give tokenizer.path too")
        kw["tokenizer_sha256"] = str(tok["sha256"]).lower()
    kw["vocab_size"] = int(tok.get("vocab_size", 2048))
    kw["sample_chars"] = int(tok.get("sample_chars", 2_000_000))
    kw["tokenizer_seed"] = int(tok.get("seed", 0))
    return kw


def _headline_sets(raw: dict[str, Any], evals: list[EvalSpec]) -> list[str]:
    """``proxy.headline`` checked against the eval sets; by default every set but the held-out splits."""
    set_names = [e.name for e in evals]
    if "headline" not in raw:
        return [e.name for e in evals if e.kind != "heldout"] or set_names
    head = raw["headline"]
    if not isinstance(head, list) or not head:
        raise ProxyConfigError(("headline",), "expected a non-empty list of eval set names")
    for i, h in enumerate(head):
        if h not in set_names:
            raise ProxyConfigError(
                ("headline", i), f"{h!r} names no eval set; eval sets: {', '.join(set_names)}"
            )
    return [str(h) for h in head]


def _control_keys(raw: dict[str, Any], names: list[str], baseline: str) -> dict[str, Any]:
    """``proxy.controls`` (names, not clashing with recipes) and ``proxy.controls_for`` (a non-baseline recipe)."""
    kw: dict[str, Any] = {}
    if "controls" in raw:
        ctl = raw["controls"] or []
        # YAML reads a bare `null` as None: `controls: [null]` means the null control.
        if isinstance(ctl, list):
            ctl = ["null" if c is None else c for c in ctl]
        bad = [c for c in ctl if c not in control_kinds()] if isinstance(ctl, list) else [ctl]
        if bad:
            raise ProxyConfigError(
                ("controls",), f"unknown control(s) {bad}; valid: {', '.join(control_kinds())} (or [])"
            )
        clash = [c for c in ctl if c in names]
        if clash:
            raise ProxyConfigError(
                ("controls",), f"control name(s) {clash} clash with recipes of the same name"
            )
        kw["controls"], kw["controls_explicit"] = list(ctl), True
    if "controls_for" in raw:
        if raw["controls_for"] not in names or raw["controls_for"] == baseline:
            raise ProxyConfigError(
                ("controls_for",),
                f"{raw['controls_for']!r} is not a non-baseline recipe; recipes: {', '.join(names)}",
            )
        kw["controls_for"] = raw["controls_for"]
    return kw


def _check_budgets(cfg: ProxyConfig, raw: dict[str, Any]) -> None:
    """Fail at parse time when the main point, a search rung or a ladder point has under 4 steps, or a
    budget of the baseline's curve does; ``proxy.search`` is parsed into ``cfg.search`` on the way."""
    try:
        cfg.train_config(0).steps  # noqa: B018
    except ValueError as e:
        raise ProxyConfigError(("budget",), f"{e}; raise proxy.budget") from None
    try:
        cfg.train_config(0, baseline=True).branch_steps()
    except ValueError as e:
        raise ProxyConfigError(("curve",), str(e)) from None
    if "search" in raw:
        cfg.search = parse_search(raw["search"], cfg.budget, cfg.seeds)
        for i, rung in enumerate(cfg.search.rungs):
            try:
                dataclasses.replace(cfg.train, model=cfg.model, tokens=rung.budget).steps  # noqa: B018
            except ValueError as e:
                raise ProxyConfigError(("search", "rungs", i, "budget"), str(e)) from None
    if "mix" in raw:
        cfg.mix = parse_mix(raw["mix"], cfg.budget, cfg.seeds)
    for i, p in enumerate(cfg.ladder):
        try:
            cfg.train_config(0, p).steps  # noqa: B018
        except ValueError as e:
            raise ProxyConfigError(("ladder", i, "budget"), str(e)) from None


def parse(section: dict[str, Any] | None) -> ProxyConfig:
    """Validate the ``proxy:`` mapping into a :class:`ProxyConfig` (CPU-sized defaults)."""
    raw = check_keys(section or {}, KEYS, "proxy")
    kw: dict[str, Any] = {}
    rec = raw.get("recipes") or {"raw": {"from": "raw"}, "curated": {"from": "kept"}}
    kw["recipes"] = parse_recipes(check_keys(rec, list(rec), "proxy.recipes"))
    names = [r.name for r in kw["recipes"]]
    if len(set(names)) != len(names):
        raise PhaseError(f"proxy.recipes: duplicate names in {names}")
    for r in kw["recipes"]:
        for need in r.requires():
            src = next((x for x in kw["recipes"] if x.name == need), None)
            if src is None or not src.FROM_FILES:
                built = [x.name for x in kw["recipes"] if x.FROM_FILES]
                raise PhaseError(
                    f"proxy.recipes.{r.name}: {need!r} is not a recipe read from the run's files; "
                    f"recipes: {', '.join(built)}"
                )
    kw["baseline"] = raw.get("baseline", "raw")
    if kw["baseline"] not in names:
        raise PhaseError(f"proxy.baseline: {kw['baseline']!r} is not a recipe; recipes: {', '.join(names)}")
    kw.update(_plain_keys(raw))
    kw["eval"] = parse_eval_specs(raw)
    kw["headline"] = _headline_sets(raw, kw["eval"])
    kw.update(_control_keys(raw, names, kw["baseline"]))
    if "train" in raw:
        valid = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("model", "tokens", "seed")]
        kw["train"] = TrainConfig(**check_keys(raw["train"], valid, "proxy.train"))
    if "ladder" in raw:
        kw["ladder"] = parse_ladder(raw["ladder"], kw.get("seeds", list(DEFAULT_SEEDS)))
    cfg = ProxyConfig(**kw)
    _check_budgets(cfg, raw)
    return cfg


@SECTIONS.add("proxy")
def parse_section(section: Any, err: Any = None, path: str | None = None) -> ProxyConfig:
    """The registered parser of the ``proxy:`` section (:data:`curate.core.registry.SECTIONS`).

    At pipeline load (``err``, ``path``: :func:`curate.pipeline.keys.located` and the pipeline file) the
    eval files are checked too (present; choice items parse, gold included) and an error names the file,
    line and key; without them (a verb reading a finished run's manifest) it raises the
    :class:`ProxyConfigError` / ``PhaseError`` of :func:`parse`."""
    if err is None:
        return parse(section)
    try:
        cfg = parse(section)
        check_files(cfg.eval, path)
    except ProxyConfigError as e:
        raise err(("proxy", *e.keys), e.msg) from None
    except PhaseError as e:
        if str(e).startswith("proxy."):  # "proxy.key: msg": at that key's line, or the --set that wrote it
            raise located_phase_error(e, "proxy", err) from None
        raise ConfigError(f"{path}: {e}") from None  # an eval file's own error names the file and line
    return cfg
