"""Each recipe's training data (step 3 of :mod:`curate.proxy.measure`): its rows (kept/, rejected/, a
``select`` over stored scores, ``without_stages``) through decontamination and the tokenizer into token
shards under ``proxy/data/<recipe>/``, and the controls: ``null`` (a seeded document subsample of raw at
the controlled recipe's token count, drawn afresh per seed), ``rejected`` (the rows the stages dropped)
and ``planted`` (the null's subsample with a share of its documents word-shuffled: worse by construction,
and sharing with raw what the controlled recipe shares, so its call shows what the run can see for a
recipe)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.core import schema
from curate.core.errors import PhaseError
from curate.core.stage import Resources
from curate.instrument.shards import (
    SHARD_FILES,
    ShardJob,
    concat_shards,
    shard_jobs,
    subsample_shard,
)
from curate.io import runfiles
from curate.proxy.config import ProxyConfig, Recipe
from curate.runtime.context import RunContext

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


NULL_SEED = 0
PLANTED_SALT = 0x706C616E74  # "plant": which documents the planted control corrupts
PLANTED_DEFAULT = 0.4


def data_name(r: Recipe, planted: float) -> str:
    """The folder of a recipe's token shards under ``proxy/data/``: the planted control's names its
    fraction, so another ``proxy.planted`` never reuses shards corrupted at a different rate."""
    return f"planted@{planted:g}" if r.source == "planted" else r.name


def recipe_jobs(
    ctx: RunContext,
    r: Recipe,
    pdir: Path,
    tok_path: str,
    excl: str,
    grams: str,
    sources: list[str],
    planted: float = 0.0,
) -> list[ShardJob]:
    common: dict[str, Any] = {
        "tokenizer": tok_path,
        "exclude_hashes": excl,
        "exclude_grams": grams,
        "exclude_sources": sources,
        "remote": ctx.mirror.root() if ctx.mirror else None,
    }
    if r.source == "planted":  # raw's rows, a share of them word-shuffled
        common.update({"corrupt_fraction": planted, "corrupt_salt": PLANTED_SALT})
    jobs = []
    ddir = pdir / "data" / data_name(r, planted)
    if r.source != "rejected":
        for i, f in enumerate(ctx.kept_files()):
            jobs.append(ShardJob(src=str(f), out=str(ddir / f"kept-{i:05d}"), rules=r.rules, **common))
    if r.source in ("raw", "rejected", "planted") or r.without_stages:
        only = r.without_stages if r.source == "kept" else None
        for i, f in enumerate(ctx.rejected_files()):
            jobs.append(
                ShardJob(
                    src=str(f),
                    out=str(ddir / f"rejected-{i:05d}"),
                    rejected=True,
                    only_stages=only,
                    rules=r.rules,  # a recipe's select applies to the rows without_stages adds, too
                    **common,
                )
            )
    return jobs


def recipe_scores(ctx: RunContext, r: Recipe | None, column: str) -> np.ndarray:
    """The non-NaN values of score ``column`` over the rows recipe ``r`` draws from *before* its own
    rules: kept/, plus the rows its ``without_stages`` rejected (or, for ``from: rejected``, every
    non-quarantined rejected row). ``r=None``: kept/ only. Rows rejected before ``column`` was computed
    carry no score and do not count."""
    import pyarrow.compute as pc

    parts = []
    if r is None or r.source != "rejected":
        parts += [
            runfiles.read_table(f, columns=[column]).column(column).to_numpy(zero_copy_only=False)
            for f in ctx.kept_files()
        ]
    if r is not None and (r.source == "rejected" or r.without_stages):
        for f in ctx.rejected_files():
            names = runfiles.read_schema(f).names
            if column not in names:
                continue
            t = runfiles.read_table(
                f, columns=[c for c in (column, schema.STAGE, schema.REASON) if c in names]
            )
            mask = np.ones(t.num_rows, dtype=bool)
            if schema.REASON in names:
                q = pc.fill_null(pc.starts_with(t.column(schema.REASON), schema.QUARANTINE_PREFIX), False)
                mask &= ~np.asarray(q.to_numpy(zero_copy_only=False), dtype=bool)
            if r.source == "kept":
                stages = t.column(schema.STAGE).to_pylist() if schema.STAGE in names else [None] * t.num_rows
                mask &= np.array([s in r.without_stages for s in stages], dtype=bool)
            parts.append(t.column(column).to_numpy(zero_copy_only=False)[mask])
    values = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
    return values[~np.isnan(values)]


def resolve_quantiles(ctx: RunContext, rule: dict[str, Any], r: Recipe | None = None) -> dict[str, Any]:
    """``min_quantile`` / ``max_quantile`` (fractions) -> absolute ``min`` / ``max`` over the scores of
    the rows recipe ``r`` draws from (:func:`recipe_scores`), so ``min_quantile: 0.5`` keeps half of
    them also when ``without_stages`` adds rejected rows to kept/ (over kept/ alone it kept 72% of the
    issue-13 DSIR recipe). ``r=None``: over kept/."""
    if "min_quantile" not in rule and "max_quantile" not in rule:
        return rule
    lo_q, hi_q = float(rule.get("min_quantile", 0.0)), float(rule.get("max_quantile", 1.0))
    values = recipe_scores(ctx, r, rule["column"])
    if not len(values):
        raise PhaseError(f"{rule['column']}: no scores to resolve a quantile over (is the stage in stages:?)")
    lo, hi = (float(x) for x in np.quantile(values, [lo_q, hi_q]))
    out = {k: v for k, v in rule.items() if k not in ("min_quantile", "max_quantile")}
    if "min_quantile" in rule:
        out["min"] = lo
    if "max_quantile" in rule:
        out["max"] = hi
    return out


def control_recipes(cfg: ProxyConfig) -> tuple[list[Recipe], str | None, dict[str, str]]:
    """The control recipes to build, the recipe they control, and why any control was skipped."""
    skipped: dict[str, str] = {}
    target = cfg.controls_for
    if target is None:
        others = [r for r in cfg.recipes if r.name != cfg.baseline]
        plain = [r for r in others if r.source == "kept" and not r.rules and not r.without_stages]
        target = (plain or others)[0].name if others else None
    base = next(r for r in cfg.recipes if r.name == cfg.baseline)
    out = []
    for c in cfg.controls:
        why = None
        if target is None:
            why = "no recipe besides the baseline to control"
        elif c in ("null", "planted") and base.source != "raw":
            why = f"the baseline {cfg.baseline!r} is not from: raw"
        if why:
            if cfg.controls_explicit:
                raise PhaseError(f"proxy.controls: {c}: {why}")
            skipped[c] = why
            continue
        out.append(Recipe(name=c, source=c))
    return out, target, skipped


def null_prefix(pdir: Path, seed: int, draw: int = 0) -> Path:
    """The null control's shard for training seed ``seed``: its own document draw (``draw`` > 0: another
    family of draws, for calibration studies, beside the default one)."""
    return pdir / "data" / "null" / (f"draw{draw}" if draw else "") / f"seed{seed}" / "train"


def planted_prefix(pdir: Path, planted: float, seed: int, draw: int = 0) -> Path:
    """The planted control's shard for training seed ``seed``: the null's draw for that seed (and family
    ``draw``) taken from ``planted@<fraction>/train``, raw with the fraction of documents corrupted."""
    return pdir / "data" / f"planted@{planted:g}" / (f"draw{draw}" if draw else "") / f"seed{seed}" / "train"


@dataclass
class TrainingData:
    """What step 2 built: each recipe's training shard meta, the recipes to train (controls included),
    the recipe the controls control, and why any control was skipped."""

    meta: dict[str, dict[str, Any]]
    recipes: list[Recipe]
    controlled: str | None
    skipped: dict[str, str]


def training_data(
    ctx: RunContext, cfg: ProxyConfig, pdir: Path, sources: list[str], min_tokens: int
) -> TrainingData:
    """Step 2: token shards per recipe, in parallel over files (percentile bands resolved per recipe
    first), concatenated per recipe; then the controls (rejected rows, null draws of raw)."""
    controls, controlled, skipped = control_recipes(cfg)
    for r in cfg.recipes:
        r.rules = [resolve_quantiles(ctx, rule, r) for rule in r.rules]
    built = [r for r in cfg.recipes + controls if r.source != "null"]
    excl, grams = str(pdir / "eval_hashes.npy"), str(pdir / "eval_grams.npz")
    tok_path = str(pdir / "tokenizer.json")
    jobs = {r.name: recipe_jobs(ctx, r, pdir, tok_path, excl, grams, sources, cfg.planted) for r in built}
    flat = [j for r in built for j in jobs[r.name]]
    if ctx.mirror:  # the shard tasks fetch these from the run's storage, on whatever node they run
        ctx.mirror.send([Path(tok_path), Path(excl), Path(grams)])
    by_file: dict[str, list[ShardJob]] = {}  # one work item per parquet file: its documents tokenized once
    for j in flat:
        by_file.setdefault(j.src, []).append(j)
    ctx.engine.map(shard_jobs, list(by_file.values()), resources=Resources(num_cpus=1), desc="proxy shards")
    if ctx.mirror:  # ... and upload their shards there, which the driver concatenates here
        ctx.mirror.receive([Path(j.out + sfx) for j in flat for sfx in SHARD_FILES])
    data = {
        r.name: concat_shards(
            [j.out for j in jobs[r.name]], pdir / "data" / data_name(r, cfg.planted) / "train"
        )
        for r in built
    }
    if any(c.name == "rejected" for c in controls) and data["rejected"]["tokens"] <= min_tokens:
        if cfg.controls_explicit:
            raise PhaseError(
                f"proxy.controls: rejected: only {data['rejected']['tokens']} tokens of rejected data"
            )
        skipped["rejected"] = f"only {data['rejected']['tokens']} tokens of rejected (non-quarantine) data"
        controls = [c for c in controls if c.name != "rejected"]
    if any(c.name == "null" for c in controls):
        assert controlled is not None
        data["null"] = null_draws(cfg, pdir, tokens=data[controlled]["tokens"])
    if any(c.name == "planted" for c in controls):  # the null's draw, drawn even when the null is not trained
        assert controlled is not None
        data["planted"] = null_draws(cfg, pdir, tokens=data[controlled]["tokens"], planted=True)
    recipes = cfg.recipes + controls
    for r in recipes:
        if data[r.name]["tokens"] <= min_tokens:
            raise PhaseError(f"proxy.recipes.{r.name}: only {data[r.name]['tokens']} tokens of data")
    return TrainingData(data, recipes, controlled, skipped)


def null_draws(cfg: ProxyConfig, pdir: Path, *, tokens: int, planted: bool = False) -> dict[str, Any]:
    """The null control: raw's shard subsampled to ``tokens``. One draw per training seed, so the null's
    paired interval includes which documents were drawn (with one fixed draw, the web ladder's proxy_5m
    null separated from raw: RESULTS-proxy.md). Returns the first draw's meta with every draw's counts.

    ``planted``: the planted control, the same draws (the same documents per seed) taken from the planted
    shard (raw with ``cfg.planted`` of its documents word-shuffled), so planted vs null is the corruption
    alone and planted vs raw shares with raw what the controlled recipe (``tokens``) shares."""
    base_prefix = pdir / "data" / cfg.baseline / "train"
    src = pdir / "data" / f"planted@{cfg.planted:g}" / "train" if planted else base_prefix
    extra: dict[str, Any] = (
        {"draw_from": base_prefix, "corrupt": (cfg.planted, PLANTED_SALT)} if planted else {}
    )
    draws = {
        s: subsample_shard(
            src,
            planted_prefix(pdir, cfg.planted, s, cfg.null_draw)
            if planted
            else null_prefix(pdir, s, cfg.null_draw),
            tokens=tokens,
            seed=NULL_SEED + 1000 * cfg.null_draw + s,
            **extra,
        )
        for s in sorted({s for p in cfg.points() for s in p.seeds})
    }
    first = draws[min(draws)]
    keys = ("docs", "tokens", "corrupted") if planted else ("docs", "tokens")
    return {**first, "draws": {str(s): {k: d[k] for k in keys} for s, d in draws.items()}}
