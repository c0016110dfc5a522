"""``perplexity_v1``: bits per byte of each document under a small proxy LM (Ankner et al. 2024).

The model is a folder written by the proxy trainer (``proxy/<recipe>/seed<k>/model``: ``config.json`` +
``model.safetensors``) and the run's ``tokenizer.json`` (found next to the model or up to three folders
above it, or given). A document's score is ``sum NLL (nats) / (ln 2 · bytes)`` over its first
``max_tokens`` tokens (the bytes those tokens cover), predicted from an end-of-text context, in windows
of ``seq_len`` tokens. Column: ``perplexity_v1.bpb``.

Selection ("perplexity-based data pruning"): Ankner et al. keep a percentile band of the reference
model's perplexity (e.g. the middle or the top 50%). A percentile needs the whole corpus, so the
reference rule takes *absolute* bounds ``min_bpb`` / ``max_bpb``; to select a band by percentile, score
first, then compute the bounds over the stored scores with :func:`percentile_band` (or use a proxy recipe
``select`` on the stored column: re-thresholding never re-runs the model) and select with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.rules import Rule
from curate.core.stage import Resources, Scorer


@dataclass
class PerplexityParams:
    """model: a proxy model folder. tokenizer: its tokenizer.json (default: searched next to/above the
    model). max_tokens: tokens scored per document. seq_len: window length (<= the model's context).
    batch_size: windows per forward pass. min_bpb / max_bpb: the reference band (absolute bounds; see
    the module docstring for percentiles). threads: torch threads per worker. verify: check the model
    folder against its ``curate-manifest.json`` (sha256 of every file, written by the proxy trainer)
    before loading; ``false`` loads an unchecked folder -- a security trade-off: a swapped or tampered
    weight file would then be deserialized as is."""

    model: str = ""
    tokenizer: str | None = None
    max_tokens: int = 512
    seq_len: int = 128
    batch_size: int = 32
    min_bpb: float | None = None
    max_bpb: float | None = None
    threads: int = 1
    verify: bool = True


def _find_tokenizer(model_dir: Path) -> Path:
    for p in [model_dir, *list(model_dir.parents)[:3]]:
        if (p / "tokenizer.json").exists():
            return p / "tokenizer.json"
    raise FileNotFoundError(
        f"perplexity_v1: no tokenizer.json in {model_dir} or the three folders above; set params.tokenizer"
    )


@STAGES.add("perplexity_v1")
class Perplexity(Scorer):
    """Scores ``bpb``: the document's bits per byte under the proxy model (lower = more predictable)."""

    Params = PerplexityParams
    resources = Resources(num_cpus=1)
    _unpicklable = ("_model", "_tok")

    def setup(self) -> None:
        import torch
        from transformers import LlamaForCausalLM

        from curate.instrument.tokenizer import ProxyTokenizer
        from curate.io.integrity import verify_folder

        if not self.params.model:
            raise ValueError("perplexity_v1: params.model (a proxy model folder) is required")
        model_dir = Path(self.params.model)
        if self.params.verify:
            verify_folder(model_dir)
        torch.set_num_threads(self.params.threads)
        self._model = LlamaForCausalLM.from_pretrained(model_dir).eval()
        self._tok = ProxyTokenizer.load(self.params.tokenizer or _find_tokenizer(model_dir))

    def output_fields(self) -> list[str]:
        return ["bpb"]

    def score(self, table: pa.Table) -> dict[str, Any]:
        import torch

        from curate.instrument.fused_ce import linear_nll

        self.ensure_setup()
        p, tok = self.params, self._tok
        texts = table.column(schema.TEXT).to_pylist()
        ids = tok.encode_batch([t or "" for t in texts])
        windows, owner = [], []
        nll = np.zeros(len(texts))
        nbytes = np.array([int(tok.token_bytes[a[: p.max_tokens]].sum()) for a in ids], dtype=np.float64)
        for d, a in enumerate(ids):
            a = np.concatenate([[tok.eos_id], a[: p.max_tokens].astype(np.int64)])
            for s in range(0, max(len(a) - 1, 0), p.seq_len):
                w = a[s : s + p.seq_len + 1]
                windows.append(np.pad(w, (0, p.seq_len + 1 - len(w)), constant_values=-100))
                owner.append(d)
        owner_arr = np.array(owner, dtype=np.int64)
        with torch.no_grad():
            for i in range(0, len(windows), p.batch_size):
                wt = torch.from_numpy(np.stack(windows[i : i + p.batch_size]))
                x, y = wt[:, :-1].clamp(min=0), wt[:, 1:]
                h = self._model.model(input_ids=x).last_hidden_state
                # chunked head + log-softmax: the full logits of a batch are never materialised
                tok_nll = linear_nll(
                    h.reshape(-1, h.size(-1)), self._model.lm_head.weight, y.reshape(-1).clamp(min=0)
                )
                loss = (tok_nll * (y.reshape(-1) >= 0)).reshape(y.shape).sum(dim=1).double().numpy()
                np.add.at(nll, owner_arr[i : i + p.batch_size], loss)
        with np.errstate(invalid="ignore", divide="ignore"):
            bpb = np.where(nbytes > 0, nll / (math.log(2) * nbytes), np.nan)
        return {"bpb": pa.array(bpb, pa.float64(), from_pandas=True)}

    def reference_rules(self) -> list[Rule]:
        if self.params.min_bpb is None and self.params.max_bpb is None:
            return []
        return [
            Rule(
                column=schema.column_name(self.label, "bpb"),
                min=self.params.min_bpb,
                max=self.params.max_bpb,
                reason="bpb_outside_band",
            )
        ]


def percentile_band(paths: list[str | Path], column: str, lo: float, hi: float) -> tuple[float, float]:
    """Absolute ``(min, max)`` bounds of the ``[lo, hi]`` percentile band (fractions in [0, 1]) of a
    stored score column over parquet ``paths`` (e.g. a run's kept/ files); NaN scores are ignored."""
    import pyarrow.parquet as pq

    values = np.concatenate(
        [pq.read_table(p, columns=[column]).column(column).to_numpy(zero_copy_only=False) for p in paths]
    ).astype(np.float64)
    values = values[~np.isnan(values)]
    if not len(values):
        raise ValueError(f"no {column} scores in {len(paths)} files")
    a, b = np.quantile(values, [lo, hi])
    return float(a), float(b)
