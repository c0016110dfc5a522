"""The ``proxy`` phase: train tiny LMs on each recipe (and the controls) and write ``goodput.json``.

Steps (each resumable: finished shards and finished runs are never redone):

1. Eval sets (``proxy.eval`` / ``proxy.eval_suite``, :mod:`curate.proxy.evalsets`): ``text`` documents,
   ``choice`` benchmark items, ``heldout`` id-hash splits of the raw input. Every recipe drops documents
   equal to an eval document (xxh64 of normalised text) or sharing a word 13-gram with an eval set.
2. Tokenizer: ``proxy.tokenizer.path``, or a byte-level BPE trained on raw rows drawn by
   ``xxh64(seed:id)``: independent of file layout and of the stage list; fingerprinted (sha256).
3. Token shards per recipe and input file (``Engine.map``), concatenated into
   ``proxy/data/<recipe>/train.{bin,idx,json}``; the ``null`` control is a seeded document subsample of
   raw's shard at the controlled recipe's token count, drawn afresh for every seed
   (``proxy/data/null/seed<k>/train``); the ``rejected`` control is every row a
   non-quarantine stage rejected.
4. Runs: one ``Engine.map`` item per (ladder point, recipe, seed); the main point writes
   ``proxy/<recipe>/seed<k>/``, other ladder points ``proxy/ladder/<model>@<budget>/<recipe>/seed<k>/``.
   A finished run is reused only if its ``config.json`` equals the run asked for.
5. ``goodput.json`` (:mod:`curate.proxy.assemble`; schema in ``docs/goodput.md``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate import schema
from curate.context import PhaseError, RunContext
from curate.io import runfiles
from curate.io.files import atomic_save_npy, atomic_write_json, repo_path, sha256_file
from curate.io.stage import Mirror
from curate.io.storage import Location
from curate.proxy import evalsets
from curate.proxy.config import ProxyConfig, Recipe, parse
from curate.proxy.runs import RunItem, run_one
from curate.proxy.shards import (
    SHARD_FILES,
    ShardJob,
    concat_shards,
    read_hids,
    read_shard,
    shard_job,
    subsample_shard,
    text_hashes,
    write_shard,
)
from curate.stage import Resources

if TYPE_CHECKING:
    from curate.io.stage import RemoteRoot
    from curate.proxy.tokenizer import ProxyTokenizer

log = logging.getLogger(__name__)
NULL_SEED = 0
PLANTED_SALT = 0x706C616E74  # "plant": which documents the planted control corrupts
PLANTED_DEFAULT = 0.2


def _tokenizer_sample(
    ctx: RunContext, cfg: ProxyConfig, exclude: set[int], sources: list[str]
) -> tuple[list[str], int]:
    """Raw rows ordered by ``xxh64(seed:id)``, the first ``sample_chars`` characters' worth: the same
    sample whatever the file layout or the stage list (only the raw input's ids and texts matter)."""
    import xxhash

    best: list[tuple[int, str]] = []
    for f in ctx.kept_files() + ctx.rejected_files():
        t = evalsets.raw_rows(str(f), [schema.ID, schema.TEXT, schema.SOURCE])
        ids, texts = t.column(schema.ID).to_pylist(), t.column(schema.TEXT).to_pylist()
        src = t.column(schema.SOURCE).to_pylist() if schema.SOURCE in t.column_names else [None] * len(ids)
        hs = text_hashes(texts)
        for i, x, s, h in zip(ids, texts, src, hs, strict=True):
            if s in sources or int(h) in exclude or not x:
                continue
            best.append((xxhash.xxh64_intdigest(f"{cfg.tokenizer_seed}:{i}".encode()), x))
        # Keep memory bounded: only the rows that can still be in the sample survive each file.
        best.sort(key=lambda kv: kv[0])
        n, cut = 0, len(best)
        for j, (_, x) in enumerate(best):
            n += len(x)
            if n >= cfg.sample_chars:
                cut = j + 1
                break
        best = best[:cut]
    return [x for _, x in best], len(best)


def _tokenizer(
    ctx: RunContext, cfg: ProxyConfig, exclude: set[int], sources: list[str], pdir: Path
) -> tuple[Any, dict[str, Any]]:
    from curate.proxy.tokenizer import ProxyTokenizer, train_bpe

    dest = pdir / "tokenizer.json"
    info_path = pdir / "tokenizer.info.json"
    if dest.exists() and info_path.exists():
        return ProxyTokenizer.load(dest), json.loads(info_path.read_text())
    if cfg.tokenizer_path:
        src = repo_path(cfg.tokenizer_path)
        if cfg.tokenizer_sha256 and sha256_file(src) != cfg.tokenizer_sha256:
            raise PhaseError(
                f"proxy.tokenizer: {cfg.tokenizer_path} has sha256 {sha256_file(src)}, not the pinned "
                f"{cfg.tokenizer_sha256}: the file changed, so runs measured with it are not comparable"
            )
        tok = ProxyTokenizer.load(src)
        info: dict[str, Any] = {"source": "file", "given_path": cfg.tokenizer_path}
    else:
        sample, docs = _tokenizer_sample(ctx, cfg, exclude, sources)
        if not sample:
            raise PhaseError("proxy.tokenizer: no raw text to train the tokenizer on")
        tok = train_bpe(sample, vocab_size=cfg.vocab_size)
        info = {
            "source": "trained",
            "method": "byte-level BPE on raw rows ordered by xxh64(seed:id) (eval documents and held-out "
            "sources excluded), first sample_chars characters: independent of file layout and stages",
            "seed": cfg.tokenizer_seed,
            "sample_docs": docs,
            "sample_chars": sum(len(x) for x in sample),
            "vocab_size_requested": cfg.vocab_size,
        }
    tok.save(dest)
    info.update(
        {"path": "proxy/tokenizer.json", "vocab_size": tok.vocab_size, "sha256": sha256_file(str(dest))}
    )
    _write_json(info, info_path)
    return tok, info


def data_name(r: Recipe, planted: float) -> str:
    """The folder of a recipe's token shards under ``proxy/data/``: the planted control's names its
    fraction, so another ``proxy.planted`` never reuses shards corrupted at a different rate."""
    return f"planted@{planted:g}" if r.source == "planted" else r.name


def _recipe_jobs(
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


def _write_json(obj: Any, path: Path) -> None:
    atomic_write_json(path, obj, indent=1, allow_nan=False)


def _check_spec(pdir: Path, cfg: ProxyConfig) -> None:
    """What every run of this proxy/ folder shares (eval sets, tokenizer, sequence length) must not change
    under finished work: a different spec is refused, naming what differs."""
    spec = {
        "eval": [dataclasses.asdict(e) for e in cfg.eval],
        "eval_chars": cfg.eval_chars,
        "tokenizer": {
            "path": cfg.tokenizer_path,
            "vocab_size": cfg.vocab_size,
            "sample_chars": cfg.sample_chars,
            "seed": cfg.tokenizer_seed,
        }
        | ({"sha256": cfg.tokenizer_sha256} if cfg.tokenizer_sha256 else {}),
        "seq_len": cfg.train_config(0).seq_len,
    }
    path = pdir / "spec.json"
    if path.exists():
        old = json.loads(path.read_text())
        diff = sorted(k for k in spec if old.get(k) != json.loads(json.dumps(spec[k])))
        if diff:
            raise PhaseError(
                f"proxy: {pdir} was built with other {', '.join(diff)}; remove {pdir} (or use another "
                "--output) to measure with the new settings"
            )
    elif (pdir / "tokenizer.json").exists():
        # A proxy/ folder from before spec.json existed: its shards' provenance is unknown.
        raise PhaseError(f"proxy: {pdir} predates this version's eval/tokenizer spec; remove it to rerun")
    _write_json(spec, path)


def _controls(cfg: ProxyConfig) -> tuple[list[Recipe], str | None, dict[str, str]]:
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


def _null_prefix(pdir: Path, seed: int, draw: int = 0) -> Path:
    """The null control's shard for training seed ``seed``: its own document draw (``draw`` > 0: another
    family of draws, for calibration studies, beside the default one)."""
    return pdir / "data" / "null" / (f"draw{draw}" if draw else "") / f"seed{seed}" / "train"


def _eval_sets(
    ctx: RunContext, cfg: ProxyConfig, pdir: Path
) -> tuple[list[evalsets.EvalData], np.ndarray, dict[str, int], list[dict[str, Any]]]:
    """Step 1: the eval sets, their exact-text hashes and 13-gram index (the decontamination keys), and
    the scorer overlaps; a recipe selecting with a model trained on a headline eval set is refused."""
    from curate.target.disjoint import recheck

    evals = evalsets.load(ctx, cfg.eval, cfg.eval_chars)
    for e in evals:
        log.info(
            "eval set %s (%s%s): %s",
            e.name,
            e.spec.kind,
            ", headline" if e.name in cfg.headline else "",
            e.file or e.spec.source or "held-out split",
        )
    exclude = np.unique(np.concatenate([text_hashes(e.decontam_texts()) for e in evals]))
    atomic_save_npy(pdir / "eval_hashes.npy", exclude)
    grams_per_set = evalsets.build_gram_index(evals, pdir / "eval_grams.npz")
    recheck(ctx.run_dir, evals, str(pdir / "eval_grams.npz"))  # a target sample must stay disjoint
    overlaps = evalsets.scorer_overlaps(ctx.config, cfg.recipes, evals, ctx.pipeline_path)
    bad = [o for o in overlaps if o["eval_set"] in cfg.headline]
    if bad:
        o = bad[0]
        raise PhaseError(
            f"proxy.recipes.{o['recipe']}: selects with {o['stage']} ({o['model']}), which was trained on "
            f"{o['file']}, the file of headline eval set {o['eval_set']!r}: eval sets and selection must stay "
            "disjoint; drop the set from proxy.headline or the recipe"
        )
    return evals, exclude, grams_per_set, overlaps


def _eval_shards(
    evals: list[Any], tok: Any, pdir: Path, seq_len: int
) -> tuple[dict[str, str], dict[str, str]]:
    """The eval sets tokenized once for every run: token shards of text sets, scoring rows of choice
    sets; returns ``(eval_prefixes, choice_paths)`` by set name."""
    from curate.proxy.choice import build_rows

    eval_prefixes, choice_paths = {}, {}
    for e in evals:
        prefix = pdir / "eval" / e.name
        if e.spec.kind == "choice":
            path = pdir / "eval" / f"{e.name}.choice.npz"
            if not path.exists():
                prefix.parent.mkdir(parents=True, exist_ok=True)
                build_rows(e.name, e.items, tok, seq_len=seq_len).save(path)
            choice_paths[e.name] = str(path)
        else:
            if not prefix.with_name(e.name + ".json").exists():
                write_shard(e.texts, prefix, tok)
            eval_prefixes[e.name] = str(prefix)
    return eval_prefixes, choice_paths


@dataclass
class _Data:
    """What step 2 built: each recipe's training shard meta, the recipes to train (controls included),
    the recipe the controls control, and why any control was skipped."""

    meta: dict[str, dict[str, Any]]
    recipes: list[Recipe]
    controlled: str | None
    skipped: dict[str, str]


def _training_data(
    ctx: RunContext, cfg: ProxyConfig, pdir: Path, sources: list[str], min_tokens: int
) -> _Data:
    """Step 2: token shards per recipe, in parallel over files (percentile bands resolved per recipe
    first), concatenated per recipe; then the controls (rejected rows, null draws of raw)."""
    controls, controlled, skipped = _controls(cfg)
    for r in cfg.recipes:
        r.rules = [resolve_quantiles(ctx, rule, r) for rule in r.rules]
    built = [r for r in cfg.recipes + controls if r.source != "null"]
    excl, grams = str(pdir / "eval_hashes.npy"), str(pdir / "eval_grams.npz")
    tok_path = str(pdir / "tokenizer.json")
    jobs = {r.name: _recipe_jobs(ctx, r, pdir, tok_path, excl, grams, sources, cfg.planted) for r in built}
    flat = [j for r in built for j in jobs[r.name]]
    if ctx.mirror:  # the shard tasks fetch these from the run's storage, on whatever node they run
        ctx.mirror.send([Path(tok_path), Path(excl), Path(grams)])
    ctx.engine.map(shard_job, flat, resources=Resources(num_cpus=1), desc="proxy shards")
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
        data["null"] = _null_draws(cfg, pdir, tokens=data[controlled]["tokens"])
    recipes = cfg.recipes + controls
    for r in recipes:
        if data[r.name]["tokens"] <= min_tokens:
            raise PhaseError(f"proxy.recipes.{r.name}: only {data[r.name]['tokens']} tokens of data")
    return _Data(data, recipes, controlled, skipped)


def _null_draws(cfg: ProxyConfig, pdir: Path, *, tokens: int) -> dict[str, Any]:
    """The null control: raw's shard subsampled to ``tokens``. One draw per training seed, so the null's
    paired interval includes which documents were drawn (with one fixed draw, the web ladder's proxy_5m
    null separated from raw: RESULTS-proxy.md). Returns the first draw's meta with every draw's counts."""
    base_prefix = pdir / "data" / cfg.baseline / "train"
    draws = {
        s: subsample_shard(
            base_prefix,
            _null_prefix(pdir, s, cfg.null_draw),
            tokens=tokens,
            seed=NULL_SEED + 1000 * cfg.null_draw + s,
        )
        for s in sorted({s for p in cfg.points() for s in p.seeds})
    }
    first = draws[min(draws)]
    return {**first, "draws": {str(s): {k: d[k] for k in ("docs", "tokens")} for s, d in draws.items()}}


def _run_folder(r: Recipe, cfg: ProxyConfig) -> str:
    """A recipe's run folder: its name, except for a non-default null draw or planted rate (calibration
    studies), which train beside the default ones instead of over them."""
    if r.source == "null" and cfg.null_draw:
        return f"null-draw{cfg.null_draw}"
    if r.source == "planted" and cfg.planted != PLANTED_DEFAULT:
        return data_name(r, cfg.planted)
    return r.name


def _run_items(
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
            for seed in point.seeds:
                items.append(
                    RunItem(
                        recipe=r.name,
                        seed=seed,
                        train_prefix=str(
                            _null_prefix(pdir, seed, cfg.null_draw)
                            if r.source == "null"
                            else pdir / "data" / data_name(r, cfg.planted) / "train"
                        ),
                        eval_prefixes=eval_prefixes,
                        choice_paths=choice_paths,
                        out_dir=str(base_dir / _run_folder(r, cfg) / f"seed{seed}"),
                        train_cfg=dataclasses.asdict(
                            cfg.train_config(seed, point, baseline=r.name == cfg.baseline)
                        ),
                        vocab_size=tok.vocab_size,
                        eos_id=tok.eos_id,
                        threads=max(1, int(cfg.cpus_per_run)),
                        point=point.name,
                        remote=remote,
                    )
                )
    return items


def _send_run_inputs(ctx: RunContext, items: list[RunItem]) -> None:
    """A run directory in object storage: upload what the training tasks read (training and eval shards,
    choice rows), so a task on any node fetches them from the run's storage, not the driver's disk."""
    assert ctx.mirror is not None
    prefixes = sorted(
        {it.train_prefix for it in items} | {p for it in items for p in it.eval_prefixes.values()}
    )
    files = [Path(p + sfx) for p in prefixes for sfx in SHARD_FILES if Path(p + sfx).exists()]
    files += sorted({Path(p) for it in items for p in it.choice_paths.values()})
    ctx.mirror.send(files)


def _receive_runs(ctx: RunContext, items: list[RunItem]) -> None:
    """The files of each finished run that the driver reads (curves, results) into its mirror; the
    weights (model/) stay in the run's storage."""
    assert ctx.mirror is not None
    names = ("config.json", "data.json", "metrics.jsonl", "result.json")
    ctx.mirror.receive([Path(it.out_dir) / n for it in items for n in names])


def stream_sharing(items: list[RunItem], baseline: str, point: str) -> dict[str, dict[str, Any]]:
    """Per recipe, the share of its stream's first ``T`` tokens (at each seed of ``point``) that come from
    documents the baseline's stream also reads within its first ``T`` tokens: how much of the two runs'
    data is common (common random numbers; 1.0 for the baseline itself)."""
    from curate.proxy.evaluate import DocStream

    def docs(it: RunItem) -> dict[int, int]:
        toks, idx, _ = read_shard(it.train_prefix)
        cfg = it.train_cfg
        budget = int(cfg.get("eval_budget") or cfg["tokens"])
        stream = DocStream(toks, idx, read_hids(it.train_prefix), seq_len=cfg["seq_len"], seed=it.seed)
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


def _follow_ups(ctx: RunContext, cfg: ProxyConfig) -> dict[str, Any]:
    """The leave-one-stage-out ablation and the recipe search, when asked for: what they add to the summary."""
    extra: dict[str, Any] = {}
    if cfg.ablate:
        from curate.proxy.ablate import run_ablation

        ab = run_ablation(ctx)
        extra["ablation"] = {s: e["call"] for s, e in ab["stages"].items()}
    if "search" in ctx.section:
        from curate.proxy.search import parse_search, run_search

        found = run_search(ctx, parse_search(ctx.section["search"], cfg.budget, cfg.seeds))
        extra["search"] = {"winner": found["winner"], "search": "search.json"}
    return extra


def run_phase(
    ctx: RunContext, *, report_name: str = "goodput.json", runs_dir: str | None = None
) -> dict[str, Any]:
    """Run the ``proxy:`` section of a finished pipeline run; returns a summary for the manifest.
    ``report_name``: where the report goes (``curate ablate`` writes ``ablation/goodput.json``);
    ``runs_dir``: a folder under ``proxy/`` for the main point's runs instead of ``proxy/`` itself (the
    search's rungs train other budgets and seeds than the run's own)."""
    from curate.proxy.assemble import assemble

    cuda = ctx.engine.cluster_gpus() > 0  # the cluster's GPUs, not this driver's: workers pick their device
    url = runfiles.remote_of(ctx.run_dir)
    if ctx.mirror is None and url:  # `curate proxy s3://...`: the verb's mirror; tasks use the bucket too
        ctx = dataclasses.replace(ctx, mirror=Mirror(Location.of(url)))
    cfg = parse(ctx.section)
    pdir = ctx.path("proxy")
    pdir.mkdir(parents=True, exist_ok=True)
    if not ctx.kept_files() and not ctx.rejected_files():
        raise PhaseError(f"proxy: {ctx.run_dir} has no kept/ or rejected/ parquet files")
    evalsets.check_files(cfg.eval, ctx.pipeline_path)
    _check_spec(pdir, cfg)
    evals, exclude, grams_per_set, overlaps = _eval_sets(ctx, cfg, pdir)
    sources = sorted({e.spec.source for e in evals if e.spec.source})
    tok, tok_info = _tokenizer(ctx, cfg, set(exclude.tolist()), sources, pdir)
    seq_len = cfg.train_config(0).seq_len
    eval_paths = _eval_shards(evals, tok, pdir, seq_len)
    # a target sample drawn from an input source never trains a recipe (targets and training disjoint)
    target_source = (ctx.config.get("target") or {}).get("source")
    train_excl = sorted({*sources, *([str(target_source)] if target_source else [])})
    data = _training_data(ctx, cfg, pdir, train_excl, min_tokens=seq_len + 1)
    remote = ctx.mirror.root() if ctx.mirror else None
    items = _run_items(cfg, pdir, data.recipes, tok, eval_paths, runs_dir, remote)
    if ctx.mirror:
        _send_run_inputs(ctx, items)
    res = Resources(num_cpus=cfg.cpus_per_run, num_gpus=cfg.gpu_fraction if cuda else 0.0)
    results = ctx.engine.map(run_one, items, resources=res, desc="proxy runs")
    if ctx.mirror:
        _receive_runs(ctx, items)
    # 4. goodput
    report = assemble(
        ctx,
        cfg,
        items=items,
        results=results,
        data=data.meta,
        evals=evals,
        recipes=data.recipes,
        controlled=data.controlled,
        controls_skipped=data.skipped,
        grams_per_set=grams_per_set,
    )
    report["tokenizer"] = tok_info
    for r, share in stream_sharing(items, cfg.baseline, cfg.main_point.name).items():
        report["recipes"][r]["stream_shared_with_baseline"] = share
    report["scorer_overlaps"] = overlaps  # non-headline sets only (headline overlaps are refused above)
    report["held_out_sources"] = train_excl  # eval sources and a target: source, in no recipe
    ctx.path(report_name).parent.mkdir(parents=True, exist_ok=True)
    _write_json(report, ctx.path(report_name))
    return _follow_ups(ctx, cfg) | {
        "goodput": report_name,
        "recipes": {
            r: {"multiplier": v["multiplier"]["value"], "goodput": v["goodput"]["value"]}
            for r, v in report["recipes"].items()
        },
        "ranking": report["ranking"]["order"],
        "verdict": report["verdict"]["sentence"],
        "runs": len(items),
        "device_s": round(sum(x["device_s"] for x in results), 3),
    }
