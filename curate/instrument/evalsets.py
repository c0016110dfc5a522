"""The proxy phase's eval sets, by kind, and the 13-gram index that keeps them out of every recipe.

* ``text``: reference documents from a file (in order, up to ``eval_chars``), or the rows of one input
  ``source`` (which are then excluded from every recipe: held out *by source*);
* ``choice``: benchmark items (:mod:`curate.instrument.choice`);
* ``heldout``: an id-hash split of the raw input. It measures fit to the raw distribution, which every
  filter moves away from by design, so it is labelled as such and is never in the default headline.

Decontamination: every recipe drops (a) documents whose whitespace-normalised text equals an eval
document's (the xxh64 key, as before) and (b) documents that share a word 13-gram with any eval set
(GPT-3's rule, the ``decontaminate_v1`` machinery: lower-cased ``\\w+`` words; an eval field shorter
than 13 words but of at least 8 is matched whole). Drops are counted per recipe and per eval set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.core.errors import PhaseError
from curate.instrument.choice import ChoiceItem, item_text, read_items
from curate.instrument.suites import resolve
from curate.io.files import atomic_save_npz

NGRAM = 13
MIN_WORDS = 8
FIT_LABEL = "fit to the raw distribution (a held-out split of the input), not a quality target"


@dataclass
class EvalSpec:
    """One eval set. ``kind``: ``text`` (reference documents from ``path``, or the rows of input source
    ``source``, which are then held out of every recipe), ``choice`` (benchmark items from ``path``,
    :mod:`curate.instrument.choice`) or ``heldout`` (an id-hash split of the raw input: fit to the raw
    distribution, never a quality target)."""

    name: str
    kind: str = "text"
    holdout: float | None = None
    path: str | None = None
    source: str | None = None
    max_docs: int | None = None
    max_items: int | None = None
    format: str = "jsonl"


@dataclass
class EvalData:
    """One eval set's content: ``texts`` (text, heldout) or ``items`` (choice)."""

    spec: EvalSpec
    texts: list[str] = field(default_factory=list)
    items: list[ChoiceItem] = field(default_factory=list)
    file: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def decontam_texts(self) -> list[str]:
        return self.texts if self.spec.kind != "choice" else [item_text(i) for i in self.items]

    def describe(self, headline: bool) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.spec.kind, "headline": headline}
        if self.file:
            d["path"] = self.spec.path
        if self.spec.source:
            d["source"] = self.spec.source
        if self.spec.kind == "choice":
            d["items"] = len(self.items)
            d["multi_choice_items"] = sum(len(i.continuations) > 1 for i in self.items)
            d["metric"] = "bpb of the gold continuation given its context (accuracy reported beside it)"
        else:
            d["docs"] = len(self.texts)
            d["chars"] = sum(len(t) for t in self.texts)
            d["metric"] = "bpb"
        if self.spec.kind == "heldout":
            d["note"] = FIT_LABEL
        return d


def take_chars(texts: list[str], max_chars: int, max_docs: int | None) -> list[str]:
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


def eval_file(spec: EvalSpec, pipeline_path: str | None) -> Path:
    assert spec.path is not None
    from curate.io.storage import StorageError, is_remote, local_copy

    if is_remote(spec.path):
        try:
            return Path(local_copy(spec.path))
        except StorageError as e:
            raise PhaseError(f"proxy.eval {spec.name}: {e}") from None
    path = resolve(spec.path, pipeline_path)
    if not path.exists():
        from curate.io.paths import candidates

        tried = [str(c) for c in candidates(spec.path, pipeline_path)]
        where = "" if tried == [spec.path] else f" (looked for {', '.join(tried)})"
        raise PhaseError(f"proxy.eval {spec.name}: {spec.path} does not exist{where}")
    return path


def check_files(specs: list[EvalSpec], pipeline_path: str | None) -> None:
    """Fail before any work on a missing eval file or a choice file whose items do not parse (a record
    without gold, no context, ...): the error names the file and line."""
    for spec in specs:
        if spec.path is None:
            continue
        path = eval_file(spec, pipeline_path)
        if spec.kind == "choice":
            read_items(path, max_items=spec.max_items)


def holdout_mask(ids: list[str | None], frac: float) -> np.ndarray:
    import xxhash

    h = np.fromiter(
        (xxhash.xxh64_intdigest((i or "").encode("utf-8")) for i in ids), dtype=np.uint64, count=len(ids)
    )
    return (h % np.uint64(1_000_000)) < np.uint64(int(frac * 1_000_000))


def raw_rows(path: str, columns: list[str]) -> pa.Table:
    """The rows of one kept/ or rejected/ file (a local path or a URL) that belong to the raw input
    (quarantined rows never do)."""
    import pyarrow.compute as pc

    from curate.io.runfiles import read_table

    is_rej = Path(path).parent.name == "rejected"
    t = read_table(path, columns=list(dict.fromkeys(columns + ([schema.REASON] if is_rej else []))))
    if is_rej and t.num_rows:
        q = pc.fill_null(pc.starts_with(t.column(schema.REASON), schema.QUARANTINE_PREFIX), False)
        t = t.filter(pc.invert(q))
    return t


def _holdout_texts(args: tuple[str, float]) -> list[str]:
    """Texts of the raw rows of one parquet file that fall in the held-out split (id hash < fraction)."""
    path, frac = args
    t = raw_rows(path, [schema.ID, schema.TEXT])
    mask = holdout_mask(t.column(schema.ID).to_pylist(), frac)
    texts = t.column(schema.TEXT).to_pylist()
    return [texts[i] for i in np.flatnonzero(mask)]


def _source_texts(args: tuple[str, str]) -> list[str]:
    path, source = args
    t = raw_rows(path, [schema.TEXT, schema.SOURCE])
    src = t.column(schema.SOURCE).to_pylist()
    texts = t.column(schema.TEXT).to_pylist()
    return [x for x, s in zip(texts, src, strict=True) if s == source]


def load(ctx: Any, specs: list[EvalSpec], eval_chars: int) -> list[EvalData]:
    """Every eval set's content (``ctx`` is the phase's :class:`curate.runtime.context.RunContext`). The tasks
    read kept/ and rejected/ where the run directory is (a bucket: by URL, not the driver's mirror)."""
    from curate.io import runfiles

    raw_files = [runfiles.where(p) for p in ctx.kept_files() + ctx.rejected_files()]
    out = []
    for spec in specs:
        if spec.path is not None:
            out.append(load_file_set(spec, eval_chars, ctx.pipeline_path))
            continue
        if spec.source is not None:
            parts = ctx.engine.map(
                _source_texts, [(f, spec.source) for f in raw_files], desc=f"eval {spec.name}"
            )
            texts, file = [x for p in parts for x in p], None
        else:
            parts = ctx.engine.map(
                _holdout_texts, [(f, float(spec.holdout or 0)) for f in raw_files], desc="holdout"
            )
            texts, file = [x for p in parts for x in p], None
        data = EvalData(spec, texts=take_chars(texts, eval_chars, spec.max_docs), file=file)
        if not data.texts:
            where = f"input source {spec.source!r}" if spec.source else "the held-out split"
            raise PhaseError(f"proxy.eval {spec.name}: no documents from {where}")
        out.append(data)
    return out


def load_file_set(spec: EvalSpec, eval_chars: int, pipeline_path: str | None) -> EvalData:
    """An eval set read from its file (``text`` or ``choice``): exactly the content the proxy runs use."""
    from curate.io.readers import read_table

    path = eval_file(spec, pipeline_path)
    if spec.kind == "choice":
        return EvalData(spec, items=read_items(path, max_items=spec.max_items), file=str(path))
    t = read_table(str(path), fmt=spec.format, limit=spec.max_docs)
    data = EvalData(
        spec, texts=take_chars(t.column(schema.TEXT).to_pylist(), eval_chars, spec.max_docs), file=str(path)
    )
    if not data.texts:
        raise PhaseError(f"proxy.eval {spec.name}: no documents from {spec.path}")
    return data


def build_gram_index(sets: list[EvalData], out: Path) -> dict[str, int]:
    """Sorted distinct 13-gram hashes of every eval set with the (first) set each belongs to, saved as
    ``out`` (``.npz``: ``grams``, ``owner``, ``lengths``, ``names``); returns grams per set."""
    from curate.dedup import _common as c

    texts, owner = [], []
    for k, s in enumerate(sets):
        for t in s.decontam_texts():
            # Fields (lines of a choice item's text) are matched separately: short ones match whole.
            for f in t.split("\n") if s.spec.kind == "choice" else [t]:
                texts.append(f)
                owner.append(k)
    tokens, off = c.word_hashes(pa.array(texts, pa.string()))
    g, o, lengths = c.gram_index(
        tokens, off, np.asarray(owner, dtype=np.int64), ngram=NGRAM, min_words=MIN_WORDS
    )
    atomic_save_npz(
        out, grams=g, owner=o, lengths=np.array(sorted(lengths)), names=np.array([s.name for s in sets])
    )
    return {s.name: int((o == k).sum()) for k, s in enumerate(sets)}


def scorer_overlaps(
    config: dict[str, Any],
    rules: dict[str, list[dict[str, Any]]],
    sets: list[EvalData],
    pipeline_path: str | None,
) -> list[dict[str, str]]:
    """Recipes that select with a model scorer trained on an eval set's file (``rules``: each recipe's
    select rules, by name).

    A recipe's rule ``<stage>.<field>`` names a stage; if that stage loads a model (``params.model``)
    whose ``<model>.manifest.json`` (written by ``curate train-classifier``) lists an eval set's file
    among its training files (same resolved path or same sha256), the selection has seen the target.
    """
    import hashlib
    import json

    stages = {}
    for s in config.get("stages") or []:
        if not isinstance(s, dict):
            continue
        name = next((s[k] for k in ("score", "filter", "transform", "dedup") if k in s), None)
        model = (s.get("params") or {}).get("model")
        if name and model:
            stages[str(s.get("label") or name)] = str(model)
    eval_files = {}
    for e in sets:
        if e.file:
            p = Path(e.file).resolve()
            eval_files[e.name] = (p, hashlib.sha256(p.read_bytes()).hexdigest())
    out = []
    for recipe, recipe_rules in rules.items():
        for rule in recipe_rules:
            stage = str(rule.get("column", "")).split(".")[0]
            if stage not in stages:
                continue
            model_path = resolve(stages[stage], pipeline_path)
            manifest = model_path.with_name(model_path.name.split(".")[0] + ".manifest.json")
            if not manifest.exists():
                continue
            files = [
                f for src in json.loads(manifest.read_text()).get("sources", []) for f in src.get("files", [])
            ]
            for name, (path, sha) in eval_files.items():
                for f in files:
                    if (
                        f.get("sha256") == sha
                        or resolve(str(f.get("path", "")), pipeline_path).resolve() == path
                    ):
                        out.append(
                            {
                                "recipe": recipe,
                                "stage": stage,
                                "model": stages[stage],
                                "eval_set": name,
                                "file": str(f.get("path")),
                            }
                        )
    return [dict(t) for t in {tuple(sorted(d.items())) for d in out}]
