"""Benchmark items as proxy targets: ``{context, choices, gold}`` read as the files ship, scored in bits.

Small proxies rank data reliably only with continuous likelihood metrics (DataDecide, Magnusson et al.
2025; "Signal and Noise", Heineman et al. 2025): so the headline metric of a ``kind: choice`` eval set is
the **bpb of the gold continuation given its context**, and accuracy (the choice with the lowest
byte-length-normalised negative log-likelihood, lm-eval's ``acc_norm`` rule) is reported beside it,
never as the headline at these scales.

Record shapes accepted (the llm-foundry gauntlet files in ``../shared/corpora/eval`` use all of them):

=============================================  ==============================================
fields                                         meaning
=============================================  ==============================================
``query`` or ``context``, ``choices``, ``gold``  one context, several continuations (ARC, PIQA, ...)
``context_options``, ``continuation``, ``gold``   several contexts, one continuation (Winogrande)
``context``, ``continuation``                     one gold continuation (LAMBADA, Jeopardy)
``context``, ``answer``                           one gold continuation (TriviaQA, GSM8K)
=============================================  ==============================================

A continuation follows its context after one space (lm-eval's target delimiter) unless the context
ends in whitespace. Context and continuation are tokenized separately, so the continuation's tokens
and bytes are exactly its own. Each (item, choice) becomes one row ``EOS context continuation``, cut
from the left to ``seq_len + 1`` tokens; a mask marks the positions whose targets are continuation
tokens.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.io.files import atomic_save_npz


@dataclass
class ChoiceItem:
    """One benchmark item: row ``k`` is ``contexts[k]`` followed by ``continuations[k]``."""

    contexts: list[str]
    continuations: list[str]
    gold: int


def parse_item(rec: dict[str, Any], where: str) -> ChoiceItem:
    """One record in any of the accepted shapes (module docstring); errors name ``where``."""
    if "context_options" in rec:
        if "gold" not in rec or "continuation" not in rec:
            raise PhaseError(f"{where}: a record with context_options needs continuation and gold")
        opts = [str(x) for x in rec["context_options"]]
        return ChoiceItem(opts, [str(rec["continuation"])] * len(opts), _gold(rec, len(opts), where))
    ctx = rec.get("query", rec.get("context"))
    if not isinstance(ctx, str):
        raise PhaseError(f"{where}: no context (expected a string field query or context)")
    if "choices" in rec:
        if "gold" not in rec:
            raise PhaseError(f"{where}: a record with choices has no gold (the index of the right choice)")
        ch = [str(x) for x in rec["choices"]]
        return ChoiceItem([ctx] * len(ch), ch, _gold(rec, len(ch), where))
    for key in ("continuation", "answer"):
        if isinstance(rec.get(key), str):
            return ChoiceItem([ctx], [rec[key]], 0)
    raise PhaseError(
        f"{where}: no continuation: expected choices+gold, context_options+continuation+gold, "
        "continuation, or answer"
    )


def _gold(rec: dict[str, Any], n: int, where: str) -> int:
    g = rec["gold"]
    if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n:
        raise PhaseError(f"{where}: gold={g!r} is not an index into its {n} choices")
    return g


def read_items(path: str | Path, *, max_items: int | None = None) -> list[ChoiceItem]:
    """The first ``max_items`` items of a JSON Lines file (``.gz`` or plain), in file order."""
    path = Path(path)
    opener: Any = gzip.open if path.suffix == ".gz" else open
    items: list[ChoiceItem] = []
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if max_items is not None and len(items) >= max_items:
                    break
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise PhaseError(f"{path}:{i}: not JSON ({e.msg})") from None
                if not isinstance(rec, dict):
                    raise PhaseError(f"{path}:{i}: expected a JSON object")
                items.append(parse_item(rec, f"{path}:{i}"))
    except OSError as e:
        raise PhaseError(f"{path}: cannot read ({e})") from None
    if not items:
        raise PhaseError(f"{path}: no items")
    return items


def item_text(item: ChoiceItem) -> str:
    """Every context and continuation of an item, for decontamination."""
    return "\n".join(dict.fromkeys(item.contexts + item.continuations))


def _join(context: str, continuation: str) -> str:
    return continuation if not context or context[-1].isspace() else " " + continuation


@dataclass
class ChoiceRows:
    """Token rows of a choice set: ``windows (n, L+1)``, ``mask (n, L)`` over targets, and per row its
    item, whether it is the gold choice, and its continuation's UTF-8 bytes."""

    name: str
    windows: np.ndarray
    mask: np.ndarray
    item: np.ndarray
    is_gold: np.ndarray
    cont_bytes: np.ndarray
    truncated: int = 0

    def save(self, path: str | Path) -> None:
        atomic_save_npz(
            path,
            windows=self.windows,
            mask=self.mask,
            item=self.item,
            is_gold=self.is_gold,
            cont_bytes=self.cont_bytes,
            truncated=np.array(self.truncated),
        )

    @classmethod
    def load(cls, name: str, path: str | Path) -> ChoiceRows:
        z = np.load(path)
        return cls(
            name=name,
            windows=z["windows"],
            mask=z["mask"],
            item=z["item"],
            is_gold=z["is_gold"],
            cont_bytes=z["cont_bytes"],
            truncated=int(z["truncated"]),
        )

    def gold(self) -> ChoiceRows:
        """Only the gold rows (what intermediate evals score)."""
        g = self.is_gold
        return ChoiceRows(
            self.name, self.windows[g], self.mask[g], self.item[g], g[g], self.cont_bytes[g], self.truncated
        )

    @property
    def n_items(self) -> int:
        return len(np.unique(self.item))

    @property
    def multi_choice_items(self) -> int:
        return int((np.bincount(self.item) > 1).sum())


def build_rows(name: str, items: list[ChoiceItem], tokenizer: Any, *, seq_len: int) -> ChoiceRows:
    """Tokenize every (item, choice) into a row (module docstring). A continuation longer than
    ``seq_len`` tokens keeps its first ``seq_len`` tokens (counted in ``truncated``; its bytes are then
    those of the tokens kept, so bpb stays exact)."""
    ctxs, conts, item_of, gold_of = [], [], [], []
    for i, it in enumerate(items):
        for k, (c, x) in enumerate(zip(it.contexts, it.continuations, strict=True)):
            ctxs.append(c)
            conts.append(_join(c, x))
            item_of.append(i)
            gold_of.append(k == it.gold)
    ctx_ids = tokenizer.encode_batch(ctxs)
    cont_ids = tokenizer.encode_batch(conts)
    width = seq_len + 1
    windows = np.full((len(ctxs), width), tokenizer.eos_id, dtype=np.int64)
    mask = np.zeros((len(ctxs), seq_len), dtype=bool)
    nbytes = np.zeros(len(ctxs), dtype=np.int64)
    truncated = 0
    tb = tokenizer.token_bytes
    for r, (c_ids, x_ids) in enumerate(zip(ctx_ids, cont_ids, strict=True)):
        xa = np.asarray(x_ids, dtype=np.int64)
        if len(xa) > seq_len:
            xa, truncated = xa[:seq_len], truncated + 1
        ca = np.asarray(c_ids, dtype=np.int64)
        room = width - 1 - len(xa)  # context tokens that fit after EOS: the context is cut from the left
        ca = ca[max(0, len(ca) - room) :]
        row = np.concatenate([[tokenizer.eos_id], ca, xa])
        windows[r, : len(row)] = row
        # Target j (predicting windows[r, j+1]) is a continuation token for j in [len(row)-1-len(xa), len(row)-1).
        mask[r, len(row) - 1 - len(xa) : len(row) - 1] = True
        nbytes[r] = int(tb[xa].sum()) if len(xa) else 0
    return ChoiceRows(
        name=name,
        windows=windows,
        mask=mask,
        item=np.asarray(item_of, dtype=np.int64),
        is_gold=np.asarray(gold_of, dtype=bool),
        cont_bytes=nbytes,
        truncated=truncated,
    )


def gold_bpb(row_nll: np.ndarray, rows: ChoiceRows) -> float:
    """bpb of the gold continuations: their summed NLL (nats) over ``ln 2 ×`` their bytes."""
    g = rows.is_gold
    return float(row_nll[g].sum() / (math.log(2) * max(1, int(rows.cont_bytes[g].sum()))))


def accuracy(row_nll: np.ndarray, rows: ChoiceRows) -> float | None:
    """Share of multi-choice items whose gold row has the lowest NLL per continuation byte (ties go to
    the first choice, as ``argmin``); ``None`` when no item has more than one choice."""
    per_byte = row_nll / np.maximum(rows.cont_bytes, 1)
    hits, n = 0, 0
    order = np.argsort(rows.item, kind="stable")
    items, starts = np.unique(rows.item[order], return_index=True)
    bounds = [*list(starts), len(order)]
    for j in range(len(items)):
        sel = order[bounds[j] : bounds[j + 1]]
        if len(sel) < 2:
            continue
        n += 1
        hits += bool(rows.is_gold[sel[int(np.argmin(per_byte[sel]))]])
    return hits / n if n else None
