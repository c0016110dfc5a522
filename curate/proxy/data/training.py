"""Each recipe's training data (step 3 of :mod:`curate.proxy.design.measure`): the rows its kind reads from the
run's files (:mod:`curate.proxy.kinds`) through decontamination and the tokenizer into token shards under
``proxy/data/<folder>/``, then the controls each kind derives from them (per-seed document draws)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.core.errors import PhaseError
from curate.core.stage import Resources
from curate.instrument.shards import SHARD_FILES, ShardJob, concat_shards, shard_jobs
from curate.proxy.errors import EmptyRecipeError
from curate.proxy.kinds import Recipe, RunFiles, kind
from curate.proxy.kinds.kept import Kept
from curate.proxy.kinds.limited import Limited, arm_name
from curate.proxy.spec.config import ProxyConfig
from curate.runtime.context import RunContext

log = logging.getLogger(__name__)


def control_recipes(cfg: ProxyConfig) -> tuple[list[Recipe], str | None, dict[str, str]]:
    """The controls to build (each a recipe of its kind, named after it), the recipe they control (the
    plain kept/ recipe by default, else the first other one), and why any control was skipped."""
    skipped: dict[str, str] = {}
    target = cfg.controls_for
    if target is None:
        others = [r for r in cfg.recipes if r.name != cfg.baseline]
        plain = [r for r in others if isinstance(r, Kept) and r.plain]
        target = (plain or others)[0].name if others else None
    base = next(r for r in cfg.recipes if r.name == cfg.baseline)
    out = []
    for c in cfg.controls:
        control = kind(c)(c)
        why = "no recipe besides the baseline to control" if target is None else control.requirement(base)
        if why:
            if cfg.controls_explicit:
                raise PhaseError(f"proxy.controls: {c}: {why}")
            skipped[c] = why
            continue
        out.append(control)
    return out, target, skipped


def limited_arms(cfg: ProxyConfig, recipes: list[Recipe], controlled: str | None) -> list[Recipe]:
    """The data-limited arm's runs (``proxy.data_limited``, :mod:`curate.proxy.kinds.limited`): raw's pool at
    every ratio of the comparison and the repetition curve, each recipe's share of it at every ``k`` of the
    comparison, and, with the null control, the arm's null at each ``k`` (a subset of the pool at the
    controlled recipe's share); none without the section. Built in that order: each derives from the ones before it."""
    spec = cfg.data_limited
    if spec is None:
        return []
    base = next(r for r in recipes if r.name == cfg.baseline)
    family = [r for r in recipes if r.name != cfg.baseline and r.ROLE == "recipe"]
    source = {r.name: r.data_folder(cfg) for r in recipes}
    raw = base.data_folder(cfg)
    arms: list[Recipe] = [
        Limited(arm_name(base.name, k), of=base.name, k=k, source=raw, pool=raw) for k in spec.raw_ratios()
    ]
    for k in spec.k:
        arms += [
            Limited(arm_name(r.name, k), of=r.name, k=k, source=source[r.name], pool=raw) for r in family
        ]
    if controlled is not None and "null" in cfg.controls and any(r.name == controlled for r in family):
        for k in spec.k:
            arms.append(
                Limited(
                    arm_name("null", k),
                    of=base.name,
                    k=k,
                    source=raw,
                    pool=raw,
                    null_of=arm_name(controlled, k),
                )
            )
    return arms


@dataclass
class TrainingData:
    """What step 2 built: each recipe's training shard meta, the recipes to train (controls included),
    the recipe the controls control, and why any control was skipped."""

    meta: dict[str, dict[str, Any]]
    recipes: list[Recipe]
    controlled: str | None
    skipped: dict[str, str]


def shared_job_args(ctx: RunContext, pdir: Path, exclude_sources: list[str]) -> dict[str, Any]:
    """What every token-shard job of ``pdir`` shares: the tokenizer, the eval sets' document hashes and
    13-gram index (decontamination) and the held-out sources; in a bucket run they are sent to its storage
    first, since the shard tasks read them there, on whatever node they run."""
    tok, excl, grams = (str(pdir / n) for n in ("tokenizer.json", "eval_hashes.npy", "eval_grams.npz"))
    if ctx.mirror:
        ctx.mirror.send([Path(tok), Path(excl), Path(grams)])
    return {
        "tokenizer": tok,
        "exclude_hashes": excl,
        "exclude_grams": grams,
        "exclude_sources": exclude_sources,
        "remote": ctx.mirror.root() if ctx.mirror else None,
    }


def training_data(
    ctx: RunContext, cfg: ProxyConfig, pdir: Path, sources: list[str], min_tokens: int
) -> TrainingData:
    """Step 2: token shards of every recipe read from the run's files, in parallel over files (a
    selection's quantile bounds resolved over the rows it draws from first), concatenated per recipe;
    then the controls derived from them (per-seed document draws), each kind building its own."""
    controls, controlled, skipped = control_recipes(cfg)
    files = RunFiles(ctx.kept_files(), ctx.rejected_files())
    recipes = [r.resolved(files) for r in cfg.recipes]
    built = [r for r in recipes + controls if r.FROM_FILES]
    common = shared_job_args(ctx, pdir, sources)
    jobs = {r.name: r.file_jobs(cfg, files, pdir / "data" / r.data_folder(cfg), common) for r in built}
    flat = [j for r in built for j in jobs[r.name]]
    by_file: dict[str, list[ShardJob]] = {}  # one work item per parquet file: its documents tokenized once
    for j in flat:
        by_file.setdefault(j.src, []).append(j)
    ctx.engine.map(shard_jobs, list(by_file.values()), resources=Resources(num_cpus=1), desc="proxy shards")
    if ctx.mirror:  # ... and upload their shards there, which the driver concatenates here
        ctx.mirror.receive([Path(j.out + sfx) for j in flat for sfx in SHARD_FILES])
    data = {
        r.name: concat_shards([j.out for j in jobs[r.name]], pdir / "data" / r.data_folder(cfg) / "train")
        for r in built
    }
    for c in list(controls):
        why = c.skip_reason(data, min_tokens)
        if why:
            if cfg.controls_explicit:
                raise PhaseError(f"proxy.controls: {c.name}: {why}")
            skipped[c.name] = why
            controls.remove(c)
    everything = recipes + controls + limited_arms(cfg, recipes, controlled)
    for r in everything:  # recipes derived from built ones (a sample), the controls' draws, then the arms'
        derived = r.derive(cfg, pdir, data, controlled)
        if derived is not None:
            data[r.name] = derived
    for r in everything:
        if data[r.name]["tokens"] <= min_tokens:
            raise EmptyRecipeError(r.name, data[r.name]["tokens"])
    return TrainingData(data, everything, controlled, skipped)
