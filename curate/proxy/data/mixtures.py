"""The mixture search's training data: each source's kept rows as a token shard (through the same
decontamination as every recipe), and a mixture's shard drawn from them at its weights.

A mixture's shard is a scaled copy of the dataset it stands for: a run of ``horizon`` tokens at weights
``w`` reads ``w_s x horizon`` tokens of source ``s``, so ``w_s x horizon / N_s`` passes over it. The proxy
shard of ``size`` tokens keeps those epochs: source ``s`` contributes a pool of its first
``N_s x size / horizon`` tokens (documents ordered by ``unit_hash(id, MIX_SALT)``, a function of the id
alone) read ``w_s x size / pool`` times (whole passes, then a prefix of the pool). Every mixture draws
each source's documents in that one order, and the training stream orders documents by id at each seed
(:class:`curate.instrument.streams.DocStream`), so two mixtures differ by their weights, not by which
documents they happened to get (common random numbers). A repeated document's ``r``-th copy gets the id
hash ``mix64(hid ^ mix64(REPEAT_SALT + r))``, so its copies land apart in the stream.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.core.stage import Resources
from curate.instrument.hashing import mix64, unit_hash
from curate.instrument.shards import SHARD_FILES, ShardJob, concat_shards, read_hids, read_shard, shard_jobs
from curate.io import runfiles
from curate.io.files import atomic_path, atomic_write_json
from curate.proxy.data.training import shared_job_args
from curate.proxy.kinds import RunFiles
from curate.proxy.kinds.kept import Kept
from curate.proxy.spec.config import ProxyConfig
from curate.runtime.context import RunContext

MIX_SALT = 0x6D6978  # "mix": each source's document order
REPEAT_SALT = 0x726570  # "rep": the id hash of a document's repeated copies


def source_values(ctx: RunContext, by: str, held_out: list[str]) -> list[str]:
    """The values of column ``by`` over kept/ (sorted), held-out sources left out."""
    seen: set[str] = set()
    for f in ctx.kept_files():
        if by not in runfiles.read_schema(f).names:
            raise PhaseError(f"proxy.mix.by: kept/ has no column {by!r}")
        seen |= {str(v) for v in runfiles.read_table(f, columns=[by]).column(by).to_pylist() if v is not None}
    return sorted(seen - set(held_out))


def source_shards(
    ctx: RunContext, pdir: Path, mdir: Path, by: str, sources: list[str], held_out: list[str]
) -> dict[str, dict[str, Any]]:
    """Each source's kept rows tokenized into ``<mdir>/data/src=<s>/train`` (eval documents and held-out
    sources dropped, as for every recipe); returns ``{source: {prefix, docs, tokens, ...}}``."""
    recipes = [Kept(f"src={s}", [{"column": by, "equals": s}]) for s in sources]
    common, files = shared_job_args(ctx, pdir, held_out), RunFiles(ctx.kept_files(), ctx.rejected_files())
    cfg = ProxyConfig.narrow(ctx.section)
    jobs = {r.name: r.file_jobs(cfg, files, mdir / "data" / r.name, common) for r in recipes}
    flat = [j for js in jobs.values() for j in js]
    by_file: dict[str, list[ShardJob]] = {}
    for j in flat:
        by_file.setdefault(j.src, []).append(j)
    todo = [js for js in by_file.values() if not all(Path(j.out + ".json").exists() for j in js)]
    if todo:
        ctx.engine.map(shard_jobs, todo, resources=Resources(num_cpus=1), desc="mix source shards")
    if ctx.mirror:
        ctx.mirror.receive([Path(j.out + sfx) for j in flat for sfx in SHARD_FILES])
    out = {}
    for s, r in zip(sources, recipes, strict=True):
        prefix = mdir / "data" / r.name / "train"
        out[s] = {"prefix": str(prefix), **concat_shards([j.out for j in jobs[r.name]], prefix)}
    return out


def _write(out: Path, tokens: np.ndarray, idx: np.ndarray, hids: np.ndarray, meta: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    for suffix, arr in ((".bin", tokens), (".idx", idx), (".hid", hids.astype(np.uint64))):
        with atomic_path(out.with_name(out.name + suffix)) as tmp:
            arr.tofile(tmp)
    atomic_write_json(out.with_name(out.name + ".json"), meta)


def take_tokens(lengths: np.ndarray, want: int) -> int:
    """How many leading documents of ``lengths`` come closest to ``want`` tokens (at least one)."""
    cum = np.cumsum(lengths)
    k = int(np.searchsorted(cum, want))
    if k >= len(cum):
        return len(cum)
    below = int(cum[k - 1]) if k else 0
    return max(1, k + 1 if cum[k] - want < want - below else k)


def source_draw(
    prefix: str, weight: float, size: int, horizon: float, salt: int = MIX_SALT
) -> tuple[list[np.ndarray], np.ndarray, dict[str, Any]]:
    """One source's part of a mixture shard: its documents (as index arrays into the source shard, one
    per pass), the id hashes of the copies, and its counts."""
    _, idx, _meta = read_shard(prefix)
    hids, lengths = read_hids(prefix), np.diff(idx)
    n_tok = int(lengths.sum())
    order = np.argsort(unit_hash(hids, salt), kind="stable")
    pool = order[: take_tokens(lengths[order], min(n_tok, math.ceil(n_tok * size / horizon)))]
    pool_tokens = int(lengths[pool].sum())
    want = round(weight * size)
    passes, rest = divmod(want, pool_tokens)
    parts = [pool] * passes
    if rest:
        parts.append(pool[: take_tokens(lengths[pool], rest)])
    copies = [
        hids[p] if r == 0 else mix64(hids[p] ^ mix64(np.array([REPEAT_SALT + r], dtype=np.uint64)))
        for r, p in enumerate(parts)
    ]
    got = int(sum(lengths[p].sum() for p in parts))
    info = {
        "weight": round(float(weight), 6),
        "tokens": got,
        "unique_tokens": pool_tokens,
        "source_tokens": n_tok,
        "epochs_in_shard": round(got / max(1, pool_tokens), 4),
        "epochs_at_horizon": round(weight * horizon / max(1, n_tok), 4),
    }
    return parts, np.concatenate(copies) if copies else np.zeros(0, np.uint64), info


def build_mixture(
    out: Path,
    shards: dict[str, dict[str, Any]],
    weights: dict[str, float],
    *,
    size: int,
    horizon: float,
    salt: int = MIX_SALT,
) -> dict[str, Any]:
    """The training shard of a mixture (module docstring) at ``out``; rebuilt unless its meta matches."""
    toks_parts, len_parts, hid_parts, per_source = [], [], [], {}
    for s in sorted(weights):
        if weights[s] * size < 1:
            continue
        parts, hids, info = source_draw(shards[s]["prefix"], weights[s], size, horizon, salt)
        toks, idx, meta = read_shard(shards[s]["prefix"])
        lengths = np.diff(idx)
        for p in parts:
            starts, lens = idx[p], lengths[p]
            within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
            toks_parts.append(np.asarray(toks[np.repeat(starts, lens) + within]))
            len_parts.append(lens)
        hid_parts.append(hids)
        per_source[s] = info
        dtype = meta["dtype"]
    lengths = np.concatenate(len_parts)
    meta = {
        "docs": len(lengths),
        "tokens": int(lengths.sum()),
        "dtype": dtype,
        "bytes": 0,
        "decontaminated": 0,
        "decontaminated_by_set": {},
        "mixture": per_source,
        "size": int(size),
        "horizon": int(horizon),
        "salt": int(salt),
    }
    done = out.with_name(out.name + ".json")
    if done.exists() and runfiles_json(done) == meta:
        return meta
    idx = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    _write(out, np.concatenate(toks_parts).astype(dtype), idx, np.concatenate(hid_parts), meta)
    return meta


def runfiles_json(path: Path) -> Any:
    return json.loads(path.read_text())
