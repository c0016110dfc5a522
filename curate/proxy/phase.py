"""The ``proxy`` phase: train tiny LMs on each recipe and write ``goodput.json``.

Steps (each resumable: finished shards and finished runs are never redone):

1. Eval sets (``proxy.eval``): files (whole documents up to ``eval_chars``) or a held-out split of the raw
   input by id hash. Their text hashes (whitespace-normalised xxh64) are excluded from every recipe.
2. Tokenizer: ``proxy.tokenizer.path``, or a byte-level BPE trained on a prefix of the raw input;
   saved as ``proxy/tokenizer.json``.
3. Token shards per recipe and input file (``Engine.map``, one item per parquet file), concatenated into
   ``proxy/data/<recipe>/train.{bin,idx,json}``.
4. Runs: one ``Engine.map`` item per (recipe, seed), with ``Resources(num_cpus=cpus_per_run,
   num_gpus=gpu_fraction if CUDA)``, writing ``proxy/<recipe>/seed<k>/{metrics.jsonl, ckpt.pt,
   result.json, model/}``.
5. ``goodput.json`` from the runs' eval curves (:func:`curate.proxy.goodput.goodput_report`).

``goodput.json`` schema::

    {
      "baseline": "raw", "budget": T, "seeds": [0, 1, 2], "eval_sets": ["heldout", ...],
      "model": {name, depth, width, params, non_embedding, flops_per_token, ...},
      "tokenizer": {"path": "proxy/tokenizer.json", "vocab_size": V},
      "recipes": {
        "<recipe>": {
          "multiplier": {"value", "ci_low", "ci_high", "extrapolated"},   # m_r = t_base(b_r(T)) / T
          "learning_signal_per_token": (b_base(T) - b_r(T)) / T,           # bpb per token
          "learning_signal_curve": {"tokens": [...], "neg_dbpb_dlnt": [...]},
          "bpb_at_T": {"value", "ci_low", "ci_high"}, "bpb_at_T_over_4": float,
          "yield": tokens_kept / tokens_in, "goodput": {"value", "ci": [low, high]},
          "effective_tokens": tokens_in * goodput, "tokens_in": int, "tokens_kept": int,
          "docs": int, "decontaminated": int, "rules": [resolved select rules],
          "costs": {"proxy_device_s", "proxy_tokens_trained", "effective_tokens_per_device_hour",
                    "curation_cpu_s", "curation_cpu_s_by_stage": {stage: s}},
          "anomalies": int, "rollbacks": int,
          "curves": {"<eval set>": {"tokens", "bpb_mean", "bpb_ci_low", "bpb_ci_high", "per_seed",
                                    "slope_tokens", "neg_dbpb_dlnt"}}
        }
      },
      "ranking": {"metric", "order", "tiers", "pairs": [{"a", "b", "better" (null = CIs overlap), "separated"}]},
      "decision_agreement": fraction of pairs ordered alike at T/4 and T (null with one recipe),
      "baseline_power_law": {"a", "c", "alpha", "rmse"}, "bootstrap": {"n_boot", "level", "seed"}
    }

Non-finite numbers (a target beyond the power law's asymptote) are written as ``null``. Headline numbers
average the eval sets with equal weight; per-set curves are under ``curves``.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import xxhash

from curate import schema
from curate.context import PhaseError, RunContext
from curate.proxy.config import ProxyConfig, Recipe, parse
from curate.proxy.goodput import RecipeCurves, goodput_report
from curate.proxy.shards import ShardJob, concat_shards, read_shard, shard_job, text_hashes, write_shard
from curate.stage import Resources

log = logging.getLogger(__name__)


def _holdout_texts(args: tuple[str, float]) -> list[str]:
    """Texts of the rows of one raw parquet file that fall in the held-out split (id hash < fraction)."""
    path, frac = args
    cols = [schema.ID, schema.TEXT] + ([schema.REASON] if Path(path).parent.name == "rejected" else [])
    t = pq.read_table(path, columns=cols)
    ids = t.column(schema.ID).to_pylist()
    h = np.fromiter(
        (xxhash.xxh64_intdigest((i or "").encode("utf-8")) for i in ids), dtype=np.uint64, count=len(ids)
    )
    mask = (h % np.uint64(1_000_000)) < np.uint64(int(frac * 1_000_000))
    if schema.REASON in t.column_names:
        reasons = t.column(schema.REASON).to_pylist()
        mask &= np.array([not (r or "").startswith(schema.QUARANTINE_PREFIX) for r in reasons], dtype=bool)
    texts = t.column(schema.TEXT).to_pylist()
    return [texts[i] for i in np.flatnonzero(mask)]


def _take_chars(texts: list[str], max_chars: int, max_docs: int | None) -> list[str]:
    """Documents in order up to ``max_chars`` characters; the last one is cut at the limit (so one long
    book or a one-record file like wikitext-2 still gives an eval set of the configured size)."""
    out, n = [], 0
    for t in texts[: max_docs or len(texts)]:
        if n >= max_chars:
            break
        if t and t.strip():
            out.append(t[: max_chars - n])
            n += len(out[-1])
    return out


def _eval_texts(ctx: RunContext, cfg: ProxyConfig) -> dict[str, list[str]]:
    from curate.io.readers import read_table

    raw_files = [str(p) for p in ctx.kept_files() + ctx.rejected_files()]
    out = {}
    for spec in cfg.eval:
        if spec.path is not None:
            path = Path(spec.path)
            if not path.is_absolute() and ctx.pipeline_path and not path.exists():
                path = Path(ctx.pipeline_path).parent / path
            if not path.exists():
                raise PhaseError(f"proxy.eval {spec.name}: {spec.path} does not exist")
            t = read_table(str(path), fmt=spec.format, limit=spec.max_docs)
            texts = t.column(schema.TEXT).to_pylist()
        else:
            frac = float(spec.holdout or 0.0)
            parts = ctx.engine.map(_holdout_texts, [(f, frac) for f in raw_files], desc="holdout")
            texts = [x for p in parts for x in p]
        out[spec.name] = _take_chars(texts, cfg.eval_chars, spec.max_docs)
        if not out[spec.name]:
            raise PhaseError(f"proxy.eval {spec.name}: no documents")
    return out


def _tokenizer(ctx: RunContext, cfg: ProxyConfig, exclude: set[int], pdir: Path) -> Any:
    from curate.proxy.tokenizer import ProxyTokenizer, train_bpe

    dest = pdir / "tokenizer.json"
    if dest.exists():
        return ProxyTokenizer.load(dest)
    if cfg.tokenizer_path:
        tok = ProxyTokenizer.load(cfg.tokenizer_path)
    else:
        sample, n = [], 0
        for f in ctx.kept_files() + ctx.rejected_files():
            texts = pq.read_table(f, columns=[schema.TEXT]).column(schema.TEXT).to_pylist()
            for t, h in zip(texts, text_hashes(texts), strict=True):
                if h not in exclude and n < cfg.sample_chars:
                    sample.append(t)
                    n += len(t)
            if n >= cfg.sample_chars:
                break
        tok = train_bpe(sample, vocab_size=cfg.vocab_size)
    tok.save(dest)
    return tok


def _recipe_jobs(ctx: RunContext, r: Recipe, pdir: Path, tok_path: str, excl: str) -> list[ShardJob]:
    jobs = []
    for i, f in enumerate(ctx.kept_files()):
        jobs.append(
            ShardJob(
                src=str(f),
                out=str(pdir / "data" / r.name / f"kept-{i:05d}"),
                tokenizer=tok_path,
                rules=r.rules,
                exclude_hashes=excl,
            )
        )
    if r.source == "raw" or r.without_stages:
        only = None if r.source == "raw" else r.without_stages
        for i, f in enumerate(ctx.rejected_files()):
            jobs.append(
                ShardJob(
                    src=str(f),
                    out=str(pdir / "data" / r.name / f"rejected-{i:05d}"),
                    tokenizer=tok_path,
                    rejected=True,
                    only_stages=only,
                    exclude_hashes=excl,
                )
            )
    return jobs


def _resolve_quantiles(ctx: RunContext, rule: dict[str, Any]) -> dict[str, Any]:
    """``min_quantile`` / ``max_quantile`` (fractions) -> absolute ``min`` / ``max`` over kept/'s scores."""
    if "min_quantile" not in rule and "max_quantile" not in rule:
        return rule
    from curate.scorers.perplexity import percentile_band

    lo_q, hi_q = float(rule.get("min_quantile", 0.0)), float(rule.get("max_quantile", 1.0))
    lo, hi = percentile_band(list(ctx.kept_files()), rule["column"], lo_q, hi_q)
    out = {k: v for k, v in rule.items() if k not in ("min_quantile", "max_quantile")}
    if "min_quantile" in rule:
        out["min"] = lo
    if "max_quantile" in rule:
        out["max"] = hi
    return out


@dataclass
class RunItem:
    """One proxy run for ``Engine.map``: everything it needs is a path or a primitive."""

    recipe: str
    seed: int
    train_prefix: str
    eval_prefixes: dict[str, str]
    out_dir: str
    train_cfg: dict[str, Any]
    vocab_size: int
    eos_id: int
    threads: int


def run_one(item: RunItem) -> dict[str, Any]:
    """Train one (recipe, seed) run; returns its ``result.json`` (read back when already finished)."""
    import torch

    from curate.proxy.evaluate import EvalSet
    from curate.proxy.train import Run, TrainConfig

    done = Path(item.out_dir) / "result.json"
    if done.exists():
        return json.loads(done.read_text())
    torch.set_num_threads(item.threads)
    cfg = TrainConfig(**item.train_cfg)
    tokens, _, _ = read_shard(item.train_prefix)
    sets = []
    for name, prefix in sorted(item.eval_prefixes.items()):
        toks, _, meta = read_shard(prefix)
        sets.append(EvalSet.from_shard(name, toks, meta["bytes"], eos_id=item.eos_id, seq_len=cfg.seq_len))
    return Run(
        cfg, train_tokens=tokens, eval_sets=sets, vocab_size=item.vocab_size, out_dir=item.out_dir
    ).train()


def _curves(out_dir: Path) -> tuple[list[int], dict[str, list[float]]]:
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in recs if r["type"] == "eval"]
    return [r["tokens"] for r in evals], {k: [r["bpb"][k] for r in evals] for k in evals[0]["bpb"]}


def _write_json(obj: Any, path: Path) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=1, allow_nan=False))
    os.replace(tmp, path)


def run_phase(ctx: RunContext) -> dict[str, Any]:
    """Run the ``proxy:`` section of a finished pipeline run; returns a summary for the manifest."""
    import torch

    cuda = torch.cuda.is_available()
    cfg = parse(ctx.section)
    pdir = ctx.path("proxy")
    pdir.mkdir(parents=True, exist_ok=True)
    if not ctx.kept_files() and not ctx.rejected_files():
        raise PhaseError(f"proxy: {ctx.run_dir} has no kept/ or rejected/ parquet files")
    # 1. eval sets and their hashes (decontamination keys)
    evals = _eval_texts(ctx, cfg)
    exclude = np.unique(np.concatenate([text_hashes(v) for v in evals.values()]))
    np.save(pdir / "eval_hashes.npy", exclude)
    tok = _tokenizer(ctx, cfg, set(exclude.tolist()), pdir)
    tok_path = str(pdir / "tokenizer.json")
    eval_prefixes = {}
    for name, texts in evals.items():
        prefix = pdir / "eval" / name
        if not prefix.with_name(name + ".json").exists():
            write_shard(texts, prefix, tok)
        eval_prefixes[name] = str(prefix)
    # 2. token shards per recipe, in parallel over files (percentile bands resolved over kept/ first)
    for r in cfg.recipes:
        r.rules = [_resolve_quantiles(ctx, rule) for rule in r.rules]
    jobs = {r.name: _recipe_jobs(ctx, r, pdir, tok_path, str(pdir / "eval_hashes.npy")) for r in cfg.recipes}
    flat = [j for r in cfg.recipes for j in jobs[r.name]]
    ctx.engine.map(shard_job, flat, resources=Resources(num_cpus=1), desc="proxy shards")
    data = {
        r.name: concat_shards([j.out for j in jobs[r.name]], pdir / "data" / r.name / "train")
        for r in cfg.recipes
    }
    # 3. runs
    items = []
    for r in cfg.recipes:
        if data[r.name]["tokens"] <= cfg.train_config(0).seq_len + 1:
            raise PhaseError(f"proxy.recipes.{r.name}: only {data[r.name]['tokens']} tokens of data")
        for seed in cfg.seeds:
            items.append(
                RunItem(
                    recipe=r.name,
                    seed=seed,
                    train_prefix=str(pdir / "data" / r.name / "train"),
                    eval_prefixes=eval_prefixes,
                    out_dir=str(pdir / r.name / f"seed{seed}"),
                    train_cfg={**cfg.train, "model": cfg.model, "tokens": cfg.budget, "seed": seed},
                    vocab_size=tok.vocab_size,
                    eos_id=tok.eos_id,
                    threads=max(1, int(cfg.cpus_per_run)),
                )
            )
    res = Resources(num_cpus=cfg.cpus_per_run, num_gpus=cfg.gpu_fraction if cuda else 0.0)
    results = ctx.engine.map(run_one, items, resources=res, desc="proxy runs")
    # 4. goodput
    report = _report(ctx, cfg, items, results, data)
    report["tokenizer"] = {"path": "proxy/tokenizer.json", "vocab_size": tok.vocab_size}
    _write_json(report, ctx.path("goodput.json"))
    return {
        "goodput": "goodput.json",
        "recipes": {
            r: {"multiplier": v["multiplier"]["value"], "goodput": v["goodput"]["value"]}
            for r, v in report["recipes"].items()
        },
        "ranking": report["ranking"]["order"],
        "runs": len(items),
        "device_s": round(sum(x["device_s"] for x in results), 3),
    }


def _report(
    ctx: RunContext,
    cfg: ProxyConfig,
    items: list[RunItem],
    results: list[dict[str, Any]],
    data: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    tokens: list[int] | None = None
    recipes: dict[str, RecipeCurves] = {}
    extra: dict[str, dict[str, Any]] = {}
    for r in cfg.recipes:
        mine = [(it, res) for it, res in zip(items, results, strict=True) if it.recipe == r.name]
        per_seed = []
        for it, _ in mine:
            t, c = _curves(Path(it.out_dir))
            if tokens is None:
                tokens = t
            elif t != tokens:
                raise PhaseError(f"proxy: {it.out_dir} evaluated at {t}, other runs at {tokens}")
            per_seed.append(c)
        bpb = {k: np.array([c[k] for c in per_seed]) for k in per_seed[0]}
        recipes[r.name] = RecipeCurves(
            bpb=bpb,
            tokens_kept=data[r.name]["tokens"],
            device_s=sum(res["device_s"] for _, res in mine),
            tokens_trained=sum(res["tokens"] for _, res in mine),
        )
        extra[r.name] = {
            "rules": r.rules,
            "docs": data[r.name]["docs"],
            "decontaminated": data[r.name]["decontaminated"],
            "anomalies": sum(res["anomalies"] for _, res in mine),
            "rollbacks": sum(res["rollbacks"] for _, res in mine),
        }
    assert tokens is not None
    rep = goodput_report(recipes, baseline=cfg.baseline, tokens=tokens, budget=tokens[-1], n_boot=cfg.n_boot)
    stages = ctx.manifest.get("stages") or []
    by_stage = {
        str(s.get("name") or s.get("label") or i): float(s.get("cpu_s", 0.0)) for i, s in enumerate(stages)
    }
    for name, v in rep["recipes"].items():
        v.update(extra[name])
        # The raw baseline needed no curation; every other recipe paid for the whole pipeline.
        cur = (
            {}
            if name == cfg.baseline and next(r for r in cfg.recipes if r.name == name).source == "raw"
            else by_stage
        )
        v["costs"].update({"curation_cpu_s": round(sum(cur.values()), 3), "curation_cpu_s_by_stage": cur})
    model = results[0]["model"]
    return {
        "baseline": cfg.baseline,
        "budget": tokens[-1],
        "seeds": cfg.seeds,
        "eval_sets": sorted(next(iter(recipes.values())).bpb),
        "model": {"name": cfg.model, **model},
        **rep,
    }
