"""``perplexity_diff_v1``: Moore-Lewis cross-entropy difference toward a target (Moore & Lewis 2010).

Two tiny proxy LMs are trained by ``curate`` itself (:class:`curate.instrument.train.Run`, the proxy phase's
trainer) with one byte-level BPE (:func:`curate.instrument.tokenizer.train_bpe`, trained on both samples):
one on the pipeline's target sample, one on the raw-input sample, same size, budget and seed. A
document's score is

    diff = bpb_target - bpb_raw

its bits per byte under the target model minus under the raw model (each computed exactly as
``perplexity_v1`` does). Lower = more target-like than raw; Moore-Lewis keeps the lowest differences
(e.g. a proxy recipe rule ``{column: perplexity_diff_v1.diff, max_quantile: 0.2}``). Columns ``diff``,
``bpb_target``, ``bpb_raw``.

The fitted folder (``params.model``) holds ``tokenizer.json``, ``target/model`` and ``raw/model``; the
run caches it under ``RUN_DIR/target/<label>-<fingerprint>`` (fingerprint of the samples' sha256, the
model configuration and the seed), so a rerun does not retrain. The default is tiny
(``proxy_tiny``, 512-token vocabulary, 20k tokens per model: seconds on one CPU core).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Resources, Scorer
from curate.scorers.perplexity import Perplexity, PerplexityParams
from curate.targeting.fitted import TargetFitted, TargetSample

ROLES = ("target", "raw")


@dataclass
class PerplexityDiffParams:
    """``model``: a fitted folder (see the module docstring); empty: fitted from the ``target:`` sample.
    Fitting: ``size`` (a proxy ladder name), ``tokens`` (training tokens per model), ``vocab_size``,
    ``seq_len``, ``batch_size``, ``lr``. Scoring: ``max_tokens`` per document, ``threads``.
    ``max_diff``: the ``filter:`` reference threshold (keep ``diff <= max_diff``)."""

    model: str = ""
    size: str = "proxy_tiny"
    tokens: int = field(default=20_000, metadata=bounds(1, None))
    vocab_size: int = field(default=512, metadata=bounds(260, None))
    seq_len: int = field(default=64, metadata=bounds(8, None))
    batch_size: int = field(default=8, metadata=bounds(1, None))
    lr: float = field(default=3e-3, metadata=bounds(0, 1, lo_open=True))
    max_tokens: int = field(default=512, metadata=bounds(1, None))
    threads: int = field(default=1, metadata=bounds(1, None))
    max_diff: float | None = None


@STAGES.add("perplexity_diff_v1")
class PerplexityDiff(TargetFitted, Scorer):
    """``diff = bpb_target - bpb_raw`` (Moore-Lewis); see the module docstring."""

    Params = PerplexityDiffParams
    resources = Resources(num_cpus=1)
    _unpicklable = ("_models",)

    def validate(self) -> None:
        from curate.instrument.model_config import LADDER

        if self.params.size not in LADDER:
            raise ValueError(f"size: {self.params.size!r}; valid sizes: {', '.join(LADDER)}")
        self.train_config(0).steps  # noqa: B018  (a budget under 4 steps fails here, at load time)

    def output_fields(self) -> list[str]:
        return ["diff", "bpb_target", "bpb_raw"]

    def train_config(self, seed: int) -> Any:
        from curate.instrument.train_config import TrainConfig

        p = self.params
        return TrainConfig(
            model=p.size,
            seq_len=p.seq_len,
            tokens=p.tokens,
            batch_size=p.batch_size,
            lr=p.lr,
            seed=seed,
            n_evals=2,
            threads=p.threads,
        )

    def fit_key(self) -> dict[str, Any]:
        import dataclasses

        return {"train": dataclasses.asdict(self.train_config(0)), "vocab_size": self.params.vocab_size}

    def fit(self, sample: TargetSample, out_dir: Path) -> str:
        import torch

        from curate.instrument.shards import read_shard, write_shard
        from curate.instrument.tokenizer import train_bpe
        from curate.instrument.train import Run

        tok = train_bpe(sample.target_texts + sample.raw_texts, vocab_size=self.params.vocab_size)
        tok.save(out_dir / "tokenizer.json")
        torch.set_num_threads(self.params.threads)
        for role, texts in zip(ROLES, (sample.target_texts, sample.raw_texts), strict=True):
            write_shard(texts, out_dir / "data" / role, tok)
            tokens, _, _ = read_shard(out_dir / "data" / role)
            Run(
                self.train_config(sample.seed),
                train_tokens=tokens,
                eval_sets=[],
                vocab_size=tok.vocab_size,
                out_dir=out_dir / role,
                device="cpu",
            ).train()
        return str(out_dir)

    def _scorers(self) -> list[Perplexity]:
        p = self.params
        return [
            Perplexity(
                PerplexityParams(
                    model=str(Path(p.model) / role / "model"),
                    tokenizer=str(Path(p.model) / "tokenizer.json"),
                    max_tokens=p.max_tokens,
                    seq_len=p.seq_len,
                    threads=p.threads,
                ),
                label=f"{self.label}.{role}",
            )
            for role in ROLES
        ]

    def setup(self) -> None:
        if not self.params.model:
            raise ValueError(f"{self.label}: no model; set params.model or add a target: section")
        self._models = self._scorers()
        for m in self._models:
            m.ensure_setup()

    def score(self, table: pa.Table) -> dict[str, Any]:
        self.ensure_setup()
        target, raw = (m.score(table)["bpb"] for m in self._models)
        return {"diff": pc.subtract(target, raw), "bpb_target": target, "bpb_raw": raw}

    def reference_rules(self) -> list[Rule]:
        if self.params.max_diff is None:
            return []
        return [
            Rule(
                column=schema.column_name(self.label, "diff"),
                max=self.params.max_diff,
                reason="not_target_like",
            )
        ]
