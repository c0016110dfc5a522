"""What every run of a ``proxy/`` folder shares, built once (steps 1-2 of :mod:`curate.proxy.design.measure`):
the eval sets with their decontamination keys and token shards, the tokenizer (a pinned file or a BPE
trained on raw rows drawn by ``xxh64(seed:id)``), and ``spec.json``, which refuses to mix runs built with
other eval sets, tokenizer or sequence length."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.core import schema
from curate.core.errors import PhaseError
from curate.instrument import evalsets
from curate.instrument.shards import (
    text_hashes,
    write_shard,
)
from curate.io.files import atomic_save_npy, atomic_write_json, repo_path, sha256_file
from curate.proxy.spec.config import ProxyConfig
from curate.runtime.context import RunContext

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def tokenizer_sample(
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


def tokenizer_for(
    ctx: RunContext, cfg: ProxyConfig, exclude: set[int], sources: list[str], pdir: Path
) -> tuple[Any, dict[str, Any]]:
    from curate.instrument.tokenizer import ProxyTokenizer, train_bpe

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
        sample, docs = tokenizer_sample(ctx, cfg, exclude, sources)
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
    write_json(info, info_path)
    return tok, info


def write_json(obj: Any, path: Path) -> None:
    atomic_write_json(path, obj, indent=1, allow_nan=False)


def check_spec(pdir: Path, cfg: ProxyConfig) -> None:
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
    write_json(spec, path)


def eval_sets(
    ctx: RunContext, cfg: ProxyConfig, pdir: Path
) -> tuple[list[evalsets.EvalData], np.ndarray, dict[str, int], list[dict[str, Any]]]:
    """Step 1: the eval sets, their exact-text hashes and 13-gram index (the decontamination keys), and
    the scorer overlaps; a recipe selecting with a model trained on a headline eval set is refused."""
    from curate.targeting.disjoint import recheck

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
    rules = {r.name: r.rules() for r in cfg.recipes}
    overlaps = evalsets.scorer_overlaps(ctx.config, rules, evals, ctx.pipeline_path)
    bad = [o for o in overlaps if o["eval_set"] in cfg.headline]
    if bad:
        o = bad[0]
        raise PhaseError(
            f"proxy.recipes.{o['recipe']}: selects with {o['stage']} ({o['model']}), which was trained on "
            f"{o['file']}, the file of headline eval set {o['eval_set']!r}: eval sets and selection must stay "
            "disjoint; drop the set from proxy.headline or the recipe"
        )
    return evals, exclude, grams_per_set, overlaps


def eval_shards(
    evals: list[Any], tok: Any, pdir: Path, seq_len: int
) -> tuple[dict[str, str], dict[str, str]]:
    """The eval sets tokenized once for every run: token shards of text sets, scoring rows of choice
    sets; returns ``(eval_prefixes, choice_paths)`` by set name."""
    from curate.instrument.choice import build_rows

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


@dataclasses.dataclass
class Instrument:
    """What every measurement on a run shares: its eval sets, the token keys they exclude, the tokenizer,
    the eval shards, and the sources no training data may come from (the eval sets' and a ``target:``'s)."""

    evals: list[evalsets.EvalData]
    exclude: np.ndarray
    grams_per_set: dict[str, int]
    overlaps: list[dict[str, Any]]
    tok: Any
    tok_info: dict[str, Any]
    eval_paths: tuple[dict[str, str], dict[str, str]]
    held_out: list[str]


def instrument(ctx: RunContext, cfg: ProxyConfig, pdir: Path) -> Instrument:
    """The eval sets (checked, decontamination keys), the run's proxy tokenizer (``proxy/spec.json`` must
    match) and the eval shards, built once in ``pdir``; for the proxy phase and ``curate mix`` alike."""
    evalsets.check_files(cfg.eval, ctx.pipeline_path)
    check_spec(pdir, cfg)
    evals, exclude, grams_per_set, overlaps = eval_sets(ctx, cfg, pdir)
    sources = sorted({e.spec.source for e in evals if e.spec.source})
    tok, tok_info = tokenizer_for(ctx, cfg, set(exclude.tolist()), sources, pdir)
    eval_paths = eval_shards(evals, tok, pdir, cfg.train_config(0).seq_len)
    # a target sample drawn from an input source never trains anything (targets and training disjoint)
    target = (ctx.config.get("target") or {}).get("source")
    held_out = sorted({*sources, *([str(target)] if target else [])})
    return Instrument(evals, exclude, grams_per_set, overlaps, tok, tok_info, eval_paths, held_out)
