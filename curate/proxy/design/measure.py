"""One measurement: train tiny LMs on each recipe (and the controls) and write ``goodput.json``.

Steps (each resumable: finished shards and finished runs are never redone):

1. Eval sets (``proxy.eval`` / ``proxy.eval_suite``, :mod:`curate.instrument.evalsets`): ``text`` documents,
   ``choice`` benchmark items, ``heldout`` id-hash splits of the raw input. Every recipe drops documents
   equal to an eval document (xxh64 of normalised text) or sharing a word 13-gram with an eval set.
2. Tokenizer: ``proxy.tokenizer.path``, or a byte-level BPE trained on raw rows drawn by
   ``xxh64(seed:id)``: independent of file layout and of the stage list; fingerprinted (sha256).
3. Token shards per recipe and input file (``Engine.map``), concatenated into
   ``proxy/data/<recipe>/train.{bin,idx,json}``; the ``null`` control is a seeded document subsample of
   raw's shard at the controlled recipe's token count, drawn afresh for every seed
   (``proxy/data/null/seed<k>/train``); a corrupting control is the same draw taken from raw with a
   share of documents word-shuffled (``proxy/data/<name>@<fraction>/seed<k>/train``); the ``rejected``
   control is every row a non-quarantine stage rejected.
4. Runs: one ``Engine.map`` item per (ladder point, recipe, seed); the main point writes
   ``proxy/<recipe>/seed<k>/``, other ladder points ``proxy/ladder/<model>@<budget>/<recipe>/seed<k>/``.
   A finished run is reused only if its ``config.json`` equals the run asked for.
5. ``goodput.json`` (:mod:`curate.proxy.assembly.assemble`; schema in ``docs/goodput.md``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.core.errors import PhaseError
from curate.core.stage import Resources
from curate.goodput.schema import Goodput
from curate.goodput.schema import write as write_goodput
from curate.instrument.runs import RunItem, resuming, run_one
from curate.instrument.shards import (
    SHARD_FILES,
    read_hids,
    read_shard,
)
from curate.io import runfiles
from curate.io.stage import Mirror
from curate.io.storage import Location
from curate.proxy.assembly.assemble import Analysis
from curate.proxy.data.inputs import instrument
from curate.proxy.data.training import TrainingData, training_data
from curate.proxy.kinds import Recipe
from curate.proxy.spec.config import ProxyConfig
from curate.runtime.context import RunContext

if TYPE_CHECKING:
    from curate.instrument.tokenizer import ProxyTokenizer
    from curate.io.stage import RemoteRoot

log = logging.getLogger(__name__)


def run_items(
    cfg: ProxyConfig,
    pdir: Path,
    recipes: list[Recipe],
    tok: ProxyTokenizer,
    evals: tuple[dict[str, str], dict[str, str]],
    runs_dir: str | None,
    remote: RemoteRoot | None = None,
) -> list[RunItem]:
    """Step 3: one run per (ladder point, recipe, seed); the main point's runs go to ``proxy/`` (or
    ``proxy/<runs_dir>``), the others to ``proxy/ladder/<point>/``."""
    eval_prefixes, choice_paths = evals
    items = []
    for k, point in enumerate(cfg.points()):
        main_dir = pdir / runs_dir if runs_dir else pdir
        base_dir = main_dir if k == 0 else pdir / "ladder" / point.name
        for r in recipes:
            if k > 0 and r.MAIN_ONLY:
                continue
            for seed in point.seeds:
                items.append(
                    RunItem(
                        recipe=r.name,
                        seed=seed,
                        train_prefix=str(r.train_prefix(cfg, pdir, seed)),
                        eval_prefixes=eval_prefixes,
                        choice_paths=choice_paths,
                        out_dir=str(base_dir / r.run_folder(cfg) / f"seed{seed}"),
                        train_cfg=cfg.train_config(seed, point, baseline=r.name == cfg.baseline),
                        vocab_size=tok.vocab_size,
                        eos_id=tok.eos_id,
                        threads=max(1, int(cfg.cpus_per_run)),
                        point=point.name,
                        remote=remote,
                    )
                )
    return items


def resume_notice(items: list[RunItem]) -> str | None:
    """What the driver says of the runs that resume from a checkpoint an earlier attempt left (a worker's
    own log does not reach the terminal); None when none does."""
    left = resuming(items)
    if not left:
        return None
    names = ", ".join(f"{it.recipe}/seed{it.seed}" for it in left[:6]) + (", ..." if len(left) > 6 else "")
    return f"proxy: {len(left)} run(s) resume from the checkpoint an earlier attempt left: {names}"


def send_run_inputs(ctx: RunContext, items: list[RunItem]) -> None:
    """A run directory in object storage: upload what the training tasks read (training and eval shards,
    choice rows), so a task on any node fetches them from the run's storage, not the driver's disk."""
    assert ctx.mirror is not None
    prefixes = sorted(
        {it.train_prefix for it in items} | {p for it in items for p in it.eval_prefixes.values()}
    )
    files = [Path(p + sfx) for p in prefixes for sfx in SHARD_FILES if Path(p + sfx).exists()]
    files += sorted({Path(p) for it in items for p in it.choice_paths.values()})
    ctx.mirror.send(files)


def receive_runs(ctx: RunContext, items: list[RunItem]) -> None:
    """The files of each finished run that the driver reads (curves, results) into its mirror; the
    weights (model/) stay in the run's storage."""
    assert ctx.mirror is not None
    names = ("config.json", "data.json", "metrics.jsonl", "result.json")
    ctx.mirror.receive([Path(it.out_dir) / n for it in items for n in names])


def stream_sharing(items: list[RunItem], baseline: str, point: str) -> dict[str, dict[str, Any]]:
    """Per recipe, the share of its stream's first ``T`` tokens (at each seed of ``point``) that come from
    documents the baseline's stream also reads within its first ``T`` tokens: how much of the two runs'
    data is common (common random numbers; 1.0 for the baseline itself)."""
    from curate.instrument.streams import DocStream

    def docs(it: RunItem) -> dict[int, int]:
        toks, idx, _ = read_shard(it.train_prefix)
        cfg = it.train_cfg
        stream = DocStream(
            toks, idx, read_hids(it.train_prefix), seq_len=cfg.seq_len, seed=it.seed, chunk=cfg.doc_chunk
        )
        budget = cfg.eval_budget or cfg.tokens
        return stream.doc_tokens(budget)

    mine = [it for it in items if it.point == point]
    base = {it.seed: set(docs(it)) for it in mine if it.recipe == baseline}
    out: dict[str, dict[str, Any]] = {}
    for it in mine:
        d = docs(it) if it.recipe != baseline else None
        share = (
            1.0 if d is None else sum(n for h, n in d.items() if h in base[it.seed]) / max(1, sum(d.values()))
        )
        out.setdefault(it.recipe, {"per_seed": []})["per_seed"].append(round(share, 4))
    for v in out.values():
        v["mean"] = round(float(np.mean(v["per_seed"])), 4)
    return out


@dataclass
class Finished:
    """Everything the analysis of one measurement reads, once its runs are trained: the runs (``items``)
    and their ``result.json`` records (``results``; each run's eval curve is its ``metrics.jsonl``), the
    training data (meta, recipes, the recipe the controls control, skipped controls), the eval sets with
    their 13-gram counts, the tokenizer's record, each recipe's stream shared with the baseline, the
    scorer overlaps and the held-out sources."""

    items: list[RunItem]
    results: list[dict[str, Any]]
    data: TrainingData
    evals: list[Any]
    grams_per_set: dict[str, int]
    tokenizer: dict[str, Any]
    shares: dict[str, dict[str, Any]]
    overlaps: list[Any]
    held_out: list[str]


def report_from_runs(ctx: RunContext, cfg: ProxyConfig, f: Finished) -> dict[str, Any]:
    """``goodput.json`` (as a dict) from a measurement's finished runs (step 5)."""
    return analyse(ctx, cfg, f).report


def analyse(
    ctx: RunContext,
    cfg: ProxyConfig,
    f: Finished,
    *,
    calls: Callable[[dict[str, np.ndarray], list[str]], dict[str, Any]] | None = None,
) -> Analysis:
    """Step 5: the analysis of a measurement's finished runs, ``goodput.json`` with what designers use
    (``calls``: how the decision's pairs are called, :func:`curate.proxy.assembly.assemble.assemble`)."""
    from curate.proxy.assembly.assemble import assemble

    out = assemble(
        ctx,
        cfg,
        items=f.items,
        results=f.results,
        data=f.data.meta,
        evals=f.evals,
        recipes=f.data.recipes,
        controlled=f.data.controlled,
        controls_skipped=f.data.skipped,
        grams_per_set=f.grams_per_set,
        shares=f.shares,
        calls=calls,
    )
    report = out.report
    report["tokenizer"] = f.tokenizer
    for r, share in f.shares.items():
        if r in report["recipes"]:  # the data-limited arm's runs are reported apart (data_limited)
            report["recipes"][r]["stream_shared_with_baseline"] = share
    report["scorer_overlaps"] = f.overlaps  # non-headline sets only (headline overlaps are refused above)
    report["held_out_sources"] = f.held_out  # eval sources and a target: source, in no recipe
    return out


@dataclass
class Experiment:
    """One measurement to make on a finished run: the proxy settings (``cfg``: recipes, points, seeds,
    controls), where its ``goodput.json`` goes (``report``, relative to the run) and its main point's runs
    (``runs_dir`` under ``proxy/``; default ``proxy/`` itself). A designer that builds its own training
    data (the mixture search) hands it over as ``data``, with each run's shard in ``shards`` (by recipe
    and seed); otherwise each recipe's kind builds it (:func:`curate.proxy.data.training_data`)."""

    cfg: ProxyConfig
    report: str = "goodput.json"
    runs_dir: str | None = None
    data: TrainingData | None = None
    shards: dict[tuple[str, int], str] = field(default_factory=dict)
    calls: Callable[[dict[str, np.ndarray], list[str]], dict[str, Any]] | None = None


@dataclass
class Measured:
    """A measurement made: its analysis (``goodput.json`` as ``report``, the heads and the baseline's
    curve) and its finished runs."""

    analysis: Analysis
    finished: Finished

    @property
    def report(self) -> dict[str, Any]:
        return self.analysis.report

    def summary(self, report_name: str) -> dict[str, Any]:
        """The record the run's manifest keeps of it."""
        report = self.report
        return {
            "goodput": report_name,
            "recipes": {
                r: {"multiplier": v["multiplier"]["value"], "goodput": v["goodput"]["value"]}
                for r, v in report["recipes"].items()
            },
            "ranking": report["ranking"]["order"],
            "verdict": report["verdict"]["sentence"],
            "runs": len(self.finished.items),
            "device_s": round(sum(x["device_s"] for x in self.finished.results), 3),
        }


def measure(ctx: RunContext, exp: Experiment) -> Measured:
    """Make the measurement ``exp`` on a finished pipeline run: the instrument, the training data, the
    runs (finished ones reused), then the analysis, written to ``exp.report``. The proxy phase, the
    ablation, the search and the mixture search all measure through here."""
    cuda = ctx.engine.cluster_gpus() > 0  # the cluster's GPUs, not this driver's: workers pick their device
    url = runfiles.remote_of(ctx.run_dir)
    if ctx.mirror is None and url:  # `curate proxy s3://...`: the verb's mirror; tasks use the bucket too
        ctx = dataclasses.replace(ctx, mirror=Mirror(Location.of(url)))
    cfg = exp.cfg
    ctx = dataclasses.replace(ctx, section=cfg)
    pdir = ctx.path("proxy")
    pdir.mkdir(parents=True, exist_ok=True)
    if not ctx.kept_files() and not ctx.rejected_files():
        raise PhaseError(f"proxy: {ctx.run_dir} has no kept/ or rejected/ parquet files")
    inst = instrument(ctx, cfg, pdir)
    train_excl, seq_len = inst.held_out, cfg.train_config(0).seq_len
    data = exp.data or training_data(ctx, cfg, pdir, train_excl, min_tokens=seq_len + 1)
    remote = ctx.mirror.root() if ctx.mirror else None
    items = run_items(cfg, pdir, data.recipes, inst.tok, inst.eval_paths, exp.runs_dir, remote)
    if exp.shards:
        items = [dataclasses.replace(it, train_prefix=exp.shards[(it.recipe, it.seed)]) for it in items]
    if ctx.mirror:
        send_run_inputs(ctx, items)
    notice = resume_notice(items)
    if notice:
        log.warning(notice)
    res = Resources(num_cpus=cfg.cpus_per_run, num_gpus=cfg.gpu_fraction if cuda else 0.0)
    desc = "proxy runs" if exp.runs_dir is None else f"proxy runs ({exp.runs_dir})"
    results = ctx.engine.map(run_one, items, resources=res, desc=desc)
    if ctx.mirror:
        receive_runs(ctx, items)
    finished = Finished(
        items=items,
        results=results,
        data=data,
        evals=inst.evals,
        grams_per_set=inst.grams_per_set,
        tokenizer=inst.tok_info,
        shares=stream_sharing(items, cfg.baseline, cfg.main_point.name),
        overlaps=inst.overlaps,
        held_out=train_excl,
    )
    out = analyse(ctx, cfg, finished, calls=exp.calls)
    ctx.path(exp.report).parent.mkdir(parents=True, exist_ok=True)
    path = ctx.path(exp.report)
    write_goodput(Goodput.from_json(out.report, source=str(path)), path)  # checked against the schema
    return Measured(out, finished)
