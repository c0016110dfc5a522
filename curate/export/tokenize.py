"""Tokenizing kept documents for the token exports, exactly as datatrove's tokenizer steps do.

datatrove's ``PipelineStepWithTokenizer`` replaces the tokenizer's post-processor with
``TemplateProcessing(single="$A <EOS>")``: every document becomes its token ids followed by one EOS id,
and whatever the tokenizer's own post-processor would add (a BOS, for instance) is dropped. We do the
same so that our Megatron shards are byte-identical to datatrove's.

Tokenization runs as independent work items (one per kept file or per chunk of its row groups) through
``Engine.map``; each item writes its token ids and per-document lengths as ``.npy`` files and returns
their names, so only small results travel between processes.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curate.core import schema
from curate.export.tokenizer_spec import TokenizerSpec
from curate.io import runfiles
from curate.io.files import atomic_save_npy


def load_eos_tokenizer(spec: TokenizerSpec):  # -> tokenizers.Tokenizer
    """The tokenizer with datatrove's post-processor: ``$A <EOS>`` (one EOS after every document)."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    tok = Tokenizer.from_file(spec.path)
    tok.post_processor = TemplateProcessing(
        single="$A <EOS>", special_tokens=[("<EOS>", spec.eos_id)], pair=None
    )
    return tok


@dataclass(frozen=True)
class TokenizeTask:
    """One work item: rows ``row_groups`` of the kept file ``path``, written under ``out_prefix``."""

    path: str
    row_groups: tuple[int, ...]
    out_prefix: str
    tokenizer: TokenizerSpec
    batch_size: int = 1024


@dataclass(frozen=True)
class TokenizedPart:
    """What a task wrote: ``<prefix>.tokens.npy`` (all ids) and ``<prefix>.lengths.npy`` (per document)."""

    tokens_path: str
    lengths_path: str
    docs: int
    tokens: int


def plan_tasks(
    files: list[Path], out_dir: Path, spec: TokenizerSpec, *, max_rows: int = 50_000
) -> list[TokenizeTask]:
    """Split the kept files into tasks of at most ~``max_rows`` rows (whole row groups), in file order."""
    tasks: list[TokenizeTask] = []
    for path in files:
        meta = runfiles.parquet_file(path).metadata
        src = runfiles.where(path)  # a task on another node reads a bucket run's part from the bucket
        group: list[int] = []
        rows = 0
        for rg in range(meta.num_row_groups):
            n = meta.row_group(rg).num_rows
            if group and rows + n > max_rows:
                tasks.append(TokenizeTask(src, tuple(group), str(out_dir / f"part-{len(tasks):05d}"), spec))
                group, rows = [], 0
            group.append(rg)
            rows += n
        if group or meta.num_row_groups == 0:
            tasks.append(TokenizeTask(src, tuple(group), str(out_dir / f"part-{len(tasks):05d}"), spec))
    return tasks


def read_texts(path: str, row_groups: tuple[int, ...]) -> list[str]:
    """The ``text`` column of the given row groups (nulls as empty strings)."""
    if not row_groups:
        return []
    table = runfiles.parquet_file(path).read_row_groups(list(row_groups), columns=[schema.TEXT])
    return table.column(schema.TEXT).fill_null("").to_pylist()


def tokenize_task(task: TokenizeTask) -> TokenizedPart:
    """Tokenize one task's texts (EOS appended) and write its ids and lengths; runs on a worker."""
    tok = load_eos_tokenizer(task.tokenizer)
    texts = read_texts(task.path, task.row_groups)
    dtype = task.tokenizer.token_dtype
    lengths = np.empty(len(texts), dtype=np.int64)
    chunks: list[np.ndarray] = []
    for start in range(0, len(texts), task.batch_size):
        ids = [e.ids for e in tok.encode_batch_fast(texts[start : start + task.batch_size])]
        n = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        lengths[start : start + len(ids)] = n
        chunks.append(np.fromiter(itertools.chain.from_iterable(ids), dtype=dtype, count=int(n.sum())))
    tokens = np.concatenate(chunks) if chunks else np.empty(0, dtype=dtype)
    tokens_path, lengths_path = f"{task.out_prefix}.tokens.npy", f"{task.out_prefix}.lengths.npy"
    atomic_save_npy(tokens_path, tokens)
    atomic_save_npy(lengths_path, lengths)
    return TokenizedPart(tokens_path, lengths_path, docs=len(texts), tokens=int(tokens.size))


def tokenize_detached(args: tuple[TokenizeTask, str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tokenize_task` for a node that may not see the driver's disk (a run directory in a bucket):
    the tokenizer travels as its JSON text, the task's kept file is read from the bucket (``task.path`` is
    a URL), and the ids and lengths come back through the engine instead of files."""
    task, tokenizer_json = args
    with tempfile.TemporaryDirectory(prefix="curate-tok-") as d:
        tok = Path(d) / "tokenizer.json"
        tok.write_text(tokenizer_json, encoding="utf-8")
        spec = dataclasses.replace(task.tokenizer, path=str(tok))
        part = tokenize_task(dataclasses.replace(task, out_prefix=str(Path(d) / "part"), tokenizer=spec))
        return np.load(part.tokens_path), np.load(part.lengths_path)


def tokenize_parts(engine: Any, tasks: list[TokenizeTask], *, detached: bool) -> list[TokenizedPart]:
    """Run ``tasks`` on ``engine``. ``detached`` (a run directory in a bucket): through
    :func:`tokenize_detached`, the driver then writing each task's files where the task would have."""
    if not detached:
        return list(engine.map(tokenize_task, tasks, desc="export: tokenize"))
    blob = Path(tasks[0].tokenizer.path).read_text(encoding="utf-8") if tasks else ""
    arrays = engine.map(tokenize_detached, [(t, blob) for t in tasks], desc="export: tokenize")
    parts = []
    for t, (tokens, lengths) in zip(tasks, arrays, strict=True):
        paths = (f"{t.out_prefix}.tokens.npy", f"{t.out_prefix}.lengths.npy")
        atomic_save_npy(paths[0], tokens)
        atomic_save_npy(paths[1], lengths)
        parts.append(TokenizedPart(*paths, docs=len(lengths), tokens=int(tokens.size)))
    return parts
