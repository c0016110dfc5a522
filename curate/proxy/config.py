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
  model: proxy_tiny              # a ladder name (curate.proxy.model.LADDER)
  budget: 300000                 # T, training tokens per run
  seeds: 3                       # or a list, e.g. [0, 1, 2]
  tokenizer: {vocab_size: 2048, sample_chars: 2000000}   # or {path: path/to/tokenizer.json}
  eval:                          # default: [{name: heldout, holdout: 0.02}]
    - {name: heldout, holdout: 0.02}                       # a split of the raw input, by id hash
    - {name: wiki, path: data/wiki.jsonl.gz, max_docs: 200, format: jsonl}
  eval_chars: 20000              # per eval set: documents in order, the last one cut at the limit
  train: {seq_len: 128, batch_size: 16, n_evals: 5, lr: 0.003}   # any curate.proxy.train.TrainConfig field
  cpus_per_run: 1                # Ray resources per run; on CPU, runs queue for cores
  gpu_fraction: 0.25             # num_gpus per run when CUDA is present (runs share a GPU)
  n_boot: 1000                   # bootstrap resamples for the CIs
```
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from curate.context import PhaseError
from curate.proxy.model import LADDER
from curate.proxy.train import TrainConfig

# CPU-sized defaults (the demo): 2 recipes x 3 seeds of proxy_tiny on 300k tokens each.
CPU_TRAIN: dict[str, Any] = {"seq_len": 128, "batch_size": 16, "n_evals": 5}
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
]
RECIPE_KEYS = ["from", "select", "without_stages", "sweep"]
EVAL_KEYS = ["name", "holdout", "path", "max_docs", "format"]
TOKENIZER_KEYS = ["path", "vocab_size", "sample_chars"]


@dataclass
class Recipe:
    """A candidate dataset: ``source`` ``raw`` or ``kept``; ``rules`` over kept/ score columns;
    ``without_stages``: also take the rows these stages rejected (an ablation of those stages)."""

    name: str
    source: str = "kept"
    rules: list[dict[str, Any]] = field(default_factory=list)
    without_stages: list[str] = field(default_factory=list)


@dataclass
class EvalSpec:
    name: str
    holdout: float | None = None
    path: str | None = None
    max_docs: int | None = None
    format: str = "jsonl"


@dataclass
class ProxyConfig:
    recipes: list[Recipe]
    baseline: str = "raw"
    model: str = "proxy_tiny"
    budget: int = 300_000
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    tokenizer_path: str | None = None
    vocab_size: int = 2048
    sample_chars: int = 2_000_000
    eval: list[EvalSpec] = field(default_factory=lambda: [EvalSpec(name="heldout", holdout=0.02)])
    eval_chars: int = 20_000
    train: dict[str, Any] = field(default_factory=lambda: dict(CPU_TRAIN))
    cpus_per_run: float = 1.0
    gpu_fraction: float = 0.25
    n_boot: int = 1000

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(**{**self.train, "model": self.model, "tokens": self.budget, "seed": seed})


def _check_keys(raw: Any, valid: list[str], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise PhaseError(f"{where}: expected a mapping, got {type(raw).__name__} {raw!r}")
    unknown = sorted(set(raw) - set(valid))
    if unknown:
        raise PhaseError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
    return raw


def _recipes(raw: dict[str, Any]) -> list[Recipe]:
    out = []
    for name, spec in raw.items():
        spec = _check_keys(spec or {}, RECIPE_KEYS, f"proxy.recipes.{name}")
        source = spec.get("from", "kept")
        if source not in ("raw", "kept"):
            raise PhaseError(f"proxy.recipes.{name}.from: {source!r}; valid: raw, kept")
        rules = list(spec.get("select") or [])
        for i, r in enumerate(rules):
            _check_keys(
                r,
                ["column", "min", "max", "equals", "reason", "exclusive", "min_quantile", "max_quantile"],
                f"proxy.recipes.{name}.select[{i}]",
            )
        if source == "raw" and (rules or spec.get("without_stages")):
            raise PhaseError(f"proxy.recipes.{name}: select/without_stages apply to from: kept only")
        sweep = spec.get("sweep")
        if sweep is None:
            out.append(
                Recipe(
                    name=name,
                    source=source,
                    rules=rules,
                    without_stages=list(spec.get("without_stages") or []),
                )
            )
            continue
        sweep = _check_keys(sweep, ["column", "min", "max"], f"proxy.recipes.{name}.sweep")
        for bound in ("min", "max"):
            for v in sweep.get(bound) or []:
                out.append(
                    Recipe(
                        name=f"{name}@{bound}={v:g}",
                        source=source,
                        rules=rules + [{"column": sweep["column"], bound: v}],
                        without_stages=list(spec.get("without_stages") or []),
                    )
                )
    return out


def parse(section: dict[str, Any] | None) -> ProxyConfig:
    """Validate the ``proxy:`` mapping into a :class:`ProxyConfig` (CPU-sized defaults)."""
    raw = _check_keys(section or {}, KEYS, "proxy")
    kw: dict[str, Any] = {}
    rec = raw.get("recipes") or {"raw": {"from": "raw"}, "curated": {"from": "kept"}}
    kw["recipes"] = _recipes(_check_keys(rec, list(rec), "proxy.recipes"))
    names = [r.name for r in kw["recipes"]]
    if len(set(names)) != len(names):
        raise PhaseError(f"proxy.recipes: duplicate names in {names}")
    kw["baseline"] = raw.get("baseline", "raw")
    if kw["baseline"] not in names:
        raise PhaseError(f"proxy.baseline: {kw['baseline']!r} is not a recipe; recipes: {', '.join(names)}")
    if "model" in raw:
        if raw["model"] not in LADDER:
            raise PhaseError(f"proxy.model: {raw['model']!r}; valid sizes: {', '.join(LADDER)}")
        kw["model"] = raw["model"]
    for key, tp in (
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
    if "seeds" in raw:
        s = raw["seeds"]
        kw["seeds"] = list(range(s)) if isinstance(s, int) else [int(x) for x in s]
    if "tokenizer" in raw:
        tok = _check_keys(raw["tokenizer"], TOKENIZER_KEYS, "proxy.tokenizer")
        kw["tokenizer_path"] = tok.get("path")
        kw["vocab_size"] = int(tok.get("vocab_size", 2048))
        kw["sample_chars"] = int(tok.get("sample_chars", 2_000_000))
    if "eval" in raw:
        evs = []
        for i, e in enumerate(raw["eval"]):
            e = _check_keys(e, EVAL_KEYS, f"proxy.eval[{i}]")
            if "name" not in e or (e.get("holdout") is None) == (e.get("path") is None):
                raise PhaseError(f"proxy.eval[{i}]: needs a name and exactly one of holdout, path")
            evs.append(EvalSpec(**e))
        kw["eval"] = evs
    if "train" in raw:
        valid = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("model", "tokens", "seed")]
        kw["train"] = {**CPU_TRAIN, **_check_keys(raw["train"], valid, "proxy.train")}
    cfg = ProxyConfig(**kw)
    cfg.train_config(0).steps  # noqa: B018  (fails early when the budget is under 4 steps)
    return cfg
