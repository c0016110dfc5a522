"""Packed token shards: parquet documents -> ``<name>.bin`` (token ids) + ``<name>.idx`` (document starts).

A shard is a flat ``np.memmap`` of uint16 (vocab <= 65536) or uint32 token ids; every document is followed
by the end-of-text token (nanoGPT's packing). ``.idx`` holds int64 offsets, ``n_docs + 1`` of them, so
document ``i`` is ``tokens[idx[i]:idx[i+1]]`` (its trailing end-of-text included). ``.hid`` holds each
document's id hash (uint64 ``xxh64(id)``): the key of the coupled training streams
(:class:`curate.instrument.streams.DocStream`), the same for a document in every recipe. ``.json``: the counts
(documents, tokens, UTF-8 bytes), the dtype. Shards are written atomically, never rewritten: a rerun resumes.

:func:`shard_job` builds one recipe's shard of one parquet file: it filters rows the way the recipe says
(see :class:`ShardJob`), drops rows whose text hash is an eval document's (decontamination), and tokenizes
what is left. The work item for ``Engine.map`` is :func:`shard_jobs`: every recipe's job on one parquet
file, so that a document several recipes keep (raw, curated, a corrupting control's untouched rows...) is
tokenized once. With ``ShardJob.remote`` (a run directory in object storage) the job reads its parquet
file from the run's storage, fetches the tokenizer and eval keys into its node's cache, and uploads its
shard (``.json`` last): it runs on any node (:class:`curate.io.stage.RemoteRoot`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.core import schema
from curate.instrument.hashing import unit_hash
from curate.io.files import atomic_path, atomic_write_json
from curate.io.runfiles import read_table
from curate.io.storage import Location

if TYPE_CHECKING:
    from curate.io.stage import RemoteRoot

SHARD_FILES = (".bin", ".idx", ".hid", ".json")  # the .json marks a shard done: written (and uploaded) last


def id_hashes(ids: list[str]) -> np.ndarray:
    """xxh64 of each document id: a document's key in every recipe's stream (the same id, the same key)."""
    return np.fromiter(
        (xxhash.xxh64_intdigest(str(i).encode("utf-8")) for i in ids), dtype=np.uint64, count=len(ids)
    )


_SPACE = re.compile(r"(\s+)")


def shuffle_words(text: str, key: int, seed: int = 0) -> str:
    """A control's corruption, worse by construction: ``text``'s words (runs of non-whitespace)
    permuted over the whole document, seeded by ``(seed, key)`` (its salt, the document's id hash). Every
    whitespace run stays in place (newlines, blank lines, indentation, each line's word count): word order
    goes, layout stays. Words cross lines: a shuffle within lines leaves one-word lines untouched. The text
    always changes where its words allow (a permutation that leaves every word in place is drawn again)."""
    parts = _SPACE.split(text)  # even positions: words ('' only at the ends), odd: the whitespace between
    slots = [i for i in range(0, len(parts), 2) if parts[i]]
    words = [parts[i] for i in slots]
    rng = np.random.default_rng([int(seed), int(key)])
    order = rng.permutation(len(slots))
    while len(set(words)) > 1 and all(words[j] == w for j, w in zip(order, words, strict=True)):
        order = rng.permutation(len(slots))  # never the same text when the words allow another order
    for i, j in zip(slots, order, strict=True):
        parts[i] = words[j]
    return "".join(parts)


def shuffle_letters(text: str, key: int, seed: int = 0) -> str:
    """A stronger corruption: each word's characters (a run of non-whitespace) permuted within the word,
    seeded by ``(seed, key)``. Whitespace, word order, word lengths and the characters used stay; the
    words go (and with them most of the tokenizer's pieces). The text always changes where a word allows
    (a permutation that leaves every word as it was is drawn again)."""
    parts = _SPACE.split(text)
    slots = [i for i in range(0, len(parts), 2) if len(set(parts[i])) > 1]
    if not slots:
        return text
    rng = np.random.default_rng([int(seed), int(key)])
    while True:
        words = ["".join(rng.permutation(list(parts[i]))) for i in slots]
        if any(w != parts[i] for w, i in zip(words, slots, strict=True)):
            break
    for i, w in zip(slots, words, strict=True):
        parts[i] = w
    return "".join(parts)


# The corruptions a control may apply (``ShardJob.corrupt_mode``), by name.
CORRUPTIONS = {"words": shuffle_words, "letters": shuffle_letters}


def text_hashes(texts: list[str]) -> np.ndarray:
    """xxh64 of each text with whitespace runs collapsed and ends stripped (the decontamination key)."""
    return np.fromiter(
        (xxhash.xxh64_intdigest(" ".join(t.split()).encode("utf-8")) for t in texts),
        dtype=np.uint64,
        count=len(texts),
    )


@dataclass
class ShardJob:
    """One parquet file to tokenize for a recipe.

    ``keep_reasons_without_prefix``: for rejected/ files, rows whose reason starts with this prefix are
    dropped (quarantined rows never entered the pipeline as valid documents). ``only_stages``: for
    rejected/ files, keep only rows rejected by these stages (``None`` = all non-quarantined rows).
    ``rules``: ``curate.core.select.Rule`` mappings a kept row must pass. ``exclude_hashes``: a ``.npy`` of
    uint64 text hashes to drop (eval documents). ``exclude_sources``: input sources held out as eval sets.
    ``exclude_grams``: the eval sets' 13-gram index (:func:`curate.instrument.evalsets.build_gram_index`);
    a row sharing a gram with an eval set is dropped and counted against that set.
    ``corrupt_fraction``: a corrupting control: rows whose ``unit_hash(id, corrupt_salt)`` falls below it
    are corrupted after decontamination by ``corrupt_mode`` (:data:`CORRUPTIONS`: ``words`` shuffled over the
    document, :func:`shuffle_words`; ``letters`` shuffled within each word, :func:`shuffle_letters`);
    counted in ``corrupted``.
    ``remote``: the paths above are names in the driver's mirror of a run directory in object storage;
    the job reaches them through the run's storage (see :func:`shard_job`).
    """

    src: str
    out: str
    tokenizer: str
    rejected: bool = False
    only_stages: list[str] | None = None
    rules: list[dict[str, Any]] = field(default_factory=list)
    exclude_hashes: str | None = None
    quarantine_prefix: str = schema.QUARANTINE_PREFIX
    exclude_sources: list[str] = field(default_factory=list)
    exclude_grams: str | None = None
    corrupt_fraction: float = 0.0
    corrupt_salt: int = 0
    corrupt_mode: str = "words"
    remote: RemoteRoot | None = None


def select_rows(table: pa.Table, job: ShardJob) -> tuple[pa.Table, int, dict[str, int]]:
    """The rows of ``table`` that belong to the recipe, how many were dropped as eval duplicates
    (exact text or 13-gram overlap), and those drops per eval set (13-gram; exact-text drops count
    under ``exact``)."""
    from curate.core.select import Rule

    mask = np.ones(table.num_rows, dtype=bool)
    if job.rejected and table.num_rows:
        reasons = table.column(schema.REASON) if schema.REASON in table.column_names else None
        if reasons is not None:
            q = pc.fill_null(pc.starts_with(reasons, job.quarantine_prefix), False)
            mask &= ~np.asarray(q.to_numpy(zero_copy_only=False), dtype=bool)
        if job.only_stages is not None:
            stages = table.column(schema.STAGE).to_pylist()
            mask &= np.array([s in job.only_stages for s in stages], dtype=bool)
    for raw in job.rules:
        if job.rejected and raw["column"] not in table.column_names:
            mask[:] = False  # rejected before the column was scored: no score, so no pass
            continue
        mask &= Rule(**raw).passes(table)
    if job.exclude_sources and table.num_rows and schema.SOURCE in table.column_names:
        src = table.column(schema.SOURCE).to_pylist()
        mask &= np.array([s not in job.exclude_sources for s in src], dtype=bool)
    table = table.filter(pa.array(mask))
    dropped, by_set = 0, {}
    if job.exclude_hashes and table.num_rows:
        bad = np.load(job.exclude_hashes)
        hit = np.isin(text_hashes(table.column(schema.TEXT).to_pylist()), bad)
        dropped = int(hit.sum())
        if dropped:
            by_set["exact"] = dropped
        table = table.filter(pa.array(~hit))
    if job.exclude_grams and table.num_rows:
        from curate.instrument.grams import gram_hits

        hits = gram_hits(table.column(schema.TEXT).to_pylist(), job.exclude_grams)
        names = np.load(job.exclude_grams)["names"].tolist()
        any_hit = hits.any(axis=1)
        first = np.argmax(hits, axis=1)
        for k in np.flatnonzero(np.bincount(first[any_hit], minlength=len(names))):
            by_set[names[k]] = int((first[any_hit] == k).sum())
        dropped += int(any_hit.sum())
        table = table.filter(pa.array(~any_hit))
    return table, dropped, by_set


def write_shard(
    texts: list[str],
    out: str | Path,
    tokenizer: Any,
    ids: list[str] | None = None,
    memo: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Tokenize ``texts`` into ``out.bin/.idx/.hid/.json`` (atomic; ``.hid`` only with ``ids``);
    returns the counts. ``memo``: token ids of texts already encoded with this tokenizer (by text),
    read and extended."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"write_shard: {len(ids)} ids for {len(texts)} texts")
    encoded = _encode(texts, tokenizer, memo)
    lengths = np.array([len(a) + 1 for a in encoded], dtype=np.int64)
    idx = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=idx[1:])
    tokens = np.empty(int(idx[-1]), dtype=tokenizer.dtype)
    for i, a in enumerate(encoded):
        tokens[idx[i] : idx[i + 1] - 1] = a
        tokens[idx[i + 1] - 1] = tokenizer.eos_id
    meta = {
        "docs": len(texts),
        "tokens": int(idx[-1]),
        "bytes": int(sum(len(t.encode("utf-8")) for t in texts)),
        "dtype": np.dtype(tokenizer.dtype).name,
    }
    _commit(out, tokens, idx, meta, id_hashes(ids) if ids is not None else None)
    return meta


def _encode(texts: list[str], tokenizer: Any, memo: dict[str, np.ndarray] | None) -> list[np.ndarray]:
    """Token ids of ``texts``, only the distinct ones ``memo`` lacks encoded (the same ids: a text's
    encoding does not depend on the batch it is in)."""
    memo = {} if memo is None else memo
    new = list(dict.fromkeys(t for t in texts if t not in memo))
    if new:
        memo.update(zip(new, tokenizer.encode_batch(new), strict=True))
    return [memo[t] for t in texts]


def _commit(
    out: Path, tokens: np.ndarray, idx: np.ndarray, meta: dict[str, Any], hids: np.ndarray | None = None
) -> None:
    """Write shard ``out``: ``.bin`` (token ids), ``.idx`` (int64 document offsets), ``.hid`` (uint64 id
    hashes, when known), then ``.json``, last, since its presence marks the shard done; each atomically."""
    arrays = [(".bin", tokens), (".idx", idx)] + (
        [(".hid", hids.astype(np.uint64))] if hids is not None else []
    )
    for suffix, arr in arrays:
        with atomic_path(out.with_name(out.name + suffix)) as tmp:
            arr.tofile(tmp)
    atomic_write_json(out.with_name(out.name + ".json"), meta)


def shard_jobs(jobs: list[ShardJob]) -> list[dict[str, Any]]:
    """Engine work item: :func:`shard_job` for each of ``jobs`` (the recipes' jobs on one parquet file, in
    recipe order), sharing one tokenization memo, so a document several of them keep is encoded once."""
    memo: dict[str, np.ndarray] = {}
    return [shard_job(j, memo) for j in jobs]


def shard_job(job: ShardJob, memo: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Filter one parquet file for a recipe and write its token shard (skipped if done). ``memo``: see
    :func:`write_shard` (jobs sharing one must share the tokenizer)."""
    from curate.instrument.tokenizer import ProxyTokenizer

    if job.remote is not None:
        return _remote_shard_job(job, job.remote, memo)
    done = Path(job.out + ".json")
    if done.exists():
        return json.loads(done.read_text())
    table = read_table(job.src)  # a local path, or a URL (a remote job's parquet file in the run's storage)
    table, dropped, by_set = select_rows(table, job)
    texts, ids = table.column(schema.TEXT).to_pylist(), [str(i) for i in table.column(schema.ID).to_pylist()]
    corrupted = 0
    if job.corrupt_fraction > 0 and ids:
        hids = id_hashes(ids)
        hit = corrupted_mask(hids, job.corrupt_fraction, job.corrupt_salt)
        corrupt = CORRUPTIONS[job.corrupt_mode]
        texts = [
            corrupt(t, int(h), job.corrupt_salt) if c else t for t, h, c in zip(texts, hids, hit, strict=True)
        ]
        corrupted = int(hit.sum())
    meta = write_shard(texts, job.out, ProxyTokenizer.load(job.tokenizer), ids=ids, memo=memo)
    meta["corrupted"] = corrupted
    meta["decontaminated"] = dropped
    meta["decontaminated_by_set"] = by_set
    atomic_write_json(done, meta)
    return meta


def _remote_shard_job(
    job: ShardJob, remote: RemoteRoot, memo: dict[str, np.ndarray] | None = None
) -> dict[str, Any]:
    """:func:`shard_job` for a run directory in object storage: read the parquet file from the run's
    storage, fetch the tokenizer and eval keys into this node's cache, write the shard there and upload
    it, the ``.json`` marker last (a shard whose marker is in the run's storage is done)."""
    done = Location.of(remote.url_of(job.out + ".json"))
    if done.exists():
        return dict(done.read_json())

    def fetched(path: str | None) -> str | None:
        return str(remote.fetch(path)) if path else None

    local = dataclasses.replace(
        job,
        remote=None,
        src=remote.url_of(job.src),
        out=str(remote.cache_of(job.out)),
        tokenizer=str(fetched(job.tokenizer)),
        exclude_hashes=fetched(job.exclude_hashes),
        exclude_grams=fetched(job.exclude_grams),
    )
    Path(local.out + ".json").unlink(missing_ok=True)  # an earlier attempt here may not have uploaded it
    meta = shard_job(local, memo)
    for suffix in SHARD_FILES:
        if Path(local.out + suffix).exists():
            remote.upload(local.out + suffix, job.out + suffix)
    return meta


def fetch_shard(remote: RemoteRoot, prefix: str) -> str:
    """This node's copy of the shard ``prefix`` (a name in the driver's mirror), fetched from the run's
    storage; returns the local prefix. ``.hid`` is optional (a shard written without ids has none)."""
    for suffix in SHARD_FILES:
        remote.fetch(prefix + suffix, optional=suffix == ".hid")
    return str(remote.cache_of(prefix))


def read_hids(prefix: str | Path) -> np.ndarray:
    """The shard's document id hashes (``.hid``); a shard written without ids (a scorer's own training
    text) keys its documents by their index instead."""
    prefix = Path(prefix)
    path = prefix.with_name(prefix.name + ".hid")
    if path.exists():
        return np.fromfile(path, dtype=np.uint64)
    idx = np.fromfile(prefix.with_name(prefix.name + ".idx"), dtype=np.int64)
    return np.arange(len(idx) - 1, dtype=np.uint64)


def read_shard(prefix: str | Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """``(tokens memmap, document offsets, meta)`` of a shard written by :func:`write_shard`."""
    prefix = Path(prefix)
    meta = json.loads(prefix.with_name(prefix.name + ".json").read_text())
    tokens = (
        np.memmap(prefix.with_name(prefix.name + ".bin"), dtype=meta["dtype"], mode="r")
        if meta["tokens"]
        else np.zeros(0, dtype=meta["dtype"])
    )
    idx = np.fromfile(prefix.with_name(prefix.name + ".idx"), dtype=np.int64)
    return tokens, idx, meta


def _sum_counts(counts: list[dict[str, int]]) -> dict[str, int]:
    keys = sorted({k for c in counts for k in c})
    return {k: sum(int(c.get(k, 0)) for c in counts) for k in keys}


NULL_SALT = 0x6E756C6C  # "null": the null control's membership hash, apart from the stream order's


def corrupted_mask(hids: np.ndarray, fraction: float, salt: int) -> np.ndarray:
    """Which documents (by id hash) a corrupting control corrupts: ``unit_hash(id, salt) < fraction``, a
    function of the id alone, so a document is corrupted or not in every shard that holds it."""
    return np.asarray(unit_hash(hids, salt) < fraction, dtype=bool)


def subsample_shard(
    src: str | Path, out: str | Path, *, tokens: int, seed: int, draw_from: Any = None, corrupt: Any = None
) -> dict[str, Any]:
    """The null control: a uniform random subset of ``src``'s documents holding at least ``tokens`` tokens,
    written as shard ``out`` (skipped when done). Membership is a second hash of the document id,
    ``unit_hash(id, NULL_SALT + seed)``, taken from the smallest up: a function of (seed, id) only, so the
    null's stream is raw's stream with the other documents deleted (common random numbers).
    ``draw_from=`` a shard: the draw is made there and the drawn ids taken from ``src`` (a corrupting
    control: its shard, raw with some documents corrupted, drawn from raw's, holds the null's documents).
    ``corrupt=(fraction, salt)``: count the drawn documents that corruption hit (``corrupted``)."""
    out = Path(out)
    done = out.with_name(out.name + ".json")
    if done.exists():
        return json.loads(done.read_text())
    toks, idx, meta = read_shard(src)
    hids = read_hids(src)
    lengths = np.diff(idx)
    d_hids, d_lengths = (
        (read_hids(draw_from), np.diff(read_shard(draw_from)[1])) if draw_from else (hids, lengths)
    )
    perm = np.argsort(unit_hash(d_hids, NULL_SALT + seed), kind="stable")
    n = int(np.searchsorted(np.cumsum(d_lengths[perm]), tokens) + 1)
    drawn = d_hids[perm[: min(n, len(perm))]]
    take = np.flatnonzero(np.isin(hids, drawn))  # file order, so a subset reads like the raw shard
    parts = [np.asarray(toks[idx[i] : idx[i + 1]]) for i in take]
    new_tokens = np.concatenate(parts) if parts else np.zeros(0, dtype=meta["dtype"])
    new_idx = np.concatenate([[0], np.cumsum(lengths[take])]).astype(np.int64)
    frac_docs = len(take) / max(1, len(lengths))
    new_meta = {
        "docs": len(take),
        "tokens": len(new_tokens),
        "dtype": meta["dtype"],
        "bytes": round(meta["bytes"] * frac_docs),  # estimate: bytes are not stored per document
        "decontaminated": 0,
        "decontaminated_by_set": {},
        "subsample_of": str(Path(src).parent.name),
        "subsample_seed": seed,
        **({"drawn_from": str(Path(draw_from).parent.name)} if draw_from else {}),
        **({"corrupted": int(corrupted_mask(hids[take], *corrupt).sum())} if corrupt else {}),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    _commit(out, new_tokens.astype(meta["dtype"]), new_idx, new_meta, hids[take])
    return new_meta


def concat_shards(prefixes: list[str | Path], out: str | Path) -> dict[str, Any]:
    """Concatenate shards (in the given order) into one training shard ``out``; skipped when done."""
    out = Path(out)
    done = out.with_name(out.name + ".json")
    if done.exists():
        return json.loads(done.read_text())
    out.parent.mkdir(parents=True, exist_ok=True)  # a recipe with no rows (no rejected/) has no folder yet
    parts = [read_shard(p) for p in prefixes]
    dtype = parts[0][2]["dtype"] if parts else "uint16"
    tokens = np.concatenate([np.asarray(p[0]) for p in parts]) if parts else np.zeros(0, dtype=dtype)
    offsets, base = [np.zeros(1, dtype=np.int64)], 0
    for toks, idx, _ in parts:
        offsets.append(idx[1:] + base)
        base += len(toks)
    idx = np.concatenate(offsets)
    hids = np.concatenate([read_hids(p) for p in prefixes]) if prefixes else np.zeros(0, dtype=np.uint64)
    meta = {
        "docs": int(len(idx) - 1),
        "tokens": len(tokens),
        "dtype": dtype,
        "bytes": int(sum(p[2]["bytes"] for p in parts)),
        "decontaminated": int(sum(p[2].get("decontaminated", 0) for p in parts)),
        "decontaminated_by_set": _sum_counts([p[2].get("decontaminated_by_set") or {} for p in parts]),
        "corrupted": int(sum(p[2].get("corrupted", 0) for p in parts)),
    }
    _commit(out, tokens.astype(dtype), idx.astype(np.int64), meta, hids)
    return meta
