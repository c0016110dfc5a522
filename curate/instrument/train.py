"""The proxy trainer: a torch loop you can read top to bottom (nanoGPT-like).

AdamW (no decay on norms), warmup-stable-decay (WSD, the default: warmup, constant, then a linear cool-down
to zero over the last ``decay_frac`` of the steps; or cosine) learning rate, gradient accumulation, clipping, bf16 autocast where it pays (on GPU, and on CPUs with native bf16 matmuls:
AVX512-BF16 or AMX), eval in bits per byte at log-spaced token counts, metrics appended to
``metrics.jsonl``. The tied output head and the cross-entropy are fused and chunked over tokens
(:mod:`curate.instrument.fused_ce`, :mod:`curate.instrument.step`): at proxy sizes the head is most of the compute, and the full logits are
never materialised.

Determinism: the model is initialised from ``torch.manual_seed(seed)`` and the data order is a function
of ``(seed, document id)`` only (:class:`curate.instrument.streams.DocStream`: every recipe's stream is raw's
with its dropped documents deleted), so a run is reproducible bit for bit on CPU with the same thread count.

**Branches (finished models at several budgets from one run).** Under WSD with a fixed warmup, a run of
budget ``b`` is, step for step, the constant-LR trunk of any longer run until its own cool-down starts at
``0.8·b``. So one trunk of the longest budget, with ``branches`` (shorter budgets), yields every one of
them *finished*: at each branch's cool-down start the weights and optimizer are copied, the cool-down to
zero is run on the same stream positions a standalone run would read, the finished model is evaluated
(a ``branch`` record in ``metrics.jsonl``), and the trunk continues from the copy. The baseline's
tokens-to-bpb curve is read from these finished points (never from mid-run checkpoints).
``eval_budget`` makes a trunk log the eval curve of a standalone run of that budget (its points before the
cool-down from the trunk, the rest from that budget's branch), so it lines up with the other recipes'.

Checkpoints (``ckpt.pt``, every ``ckpt_every`` steps, atomic) hold only tensors and primitive containers
(model, optimizer, torch RNG, step, anomaly statistics, elapsed seconds), so ``torch.load(...,
weights_only=True)`` reads them. A killed run restarts from its checkpoint: ``metrics.jsonl`` is cut back
to the checkpoint's step and the rest is recomputed, identically.

Anomalies: a step whose loss or gradient norm is not finite, or spikes above ``spike_loss`` × (running
mean loss) or ``spike_grad`` × (running mean grad norm), is skipped (no optimizer step; its batch is
consumed). ``max_bad_in_a_row`` consecutive anomalies roll the model and optimizer back to the last
checkpoint while the data position moves on past the bad batches (PaLM's remedy). Each is logged as an
``anomaly`` / ``rollback`` record and counted in ``result.json``.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import signal
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import xxhash

from curate.instrument.choice import ChoiceRows, accuracy, gold_bpb
from curate.instrument.decoder import build_model
from curate.instrument.device import gpu_assigned_without_cuda, use_autocast
from curate.instrument.evaluate import EvalSet, bpb, row_nll
from curate.instrument.model_config import ModelConfig
from curate.instrument.step import build_optimizer, lm_loss
from curate.instrument.streams import DocStream
from curate.instrument.train_config import TrainConfig
from curate.io.files import atomic_path, atomic_write_json, atomic_write_text
from curate.io.integrity import write_folder_manifest

log = logging.getLogger(__name__)

BROKEN = (
    "",
    "shuffle_tokens",
    "unpaired",
)  # TrainConfig.broken: the instrument as it is, or broken on purpose


class Run:
    """One training run writing into ``out_dir``: ``metrics.jsonl``, ``ckpt.pt``, ``result.json``,
    ``model/`` (the final weights, ``save_pretrained``, with the sha256 manifest ``curate-manifest.json``)
    and ``config.json``."""

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        train_tokens: np.ndarray,
        eval_sets: list[EvalSet],
        vocab_size: int,
        out_dir: str | Path,
        device: str | None = None,
        choice_sets: list[ChoiceRows] | None = None,
        train_idx: np.ndarray | None = None,
        train_hids: np.ndarray | None = None,
    ) -> None:
        self.cfg, self.eval_sets, self.out = cfg, eval_sets, Path(out_dir)
        # Benchmark items (kind: choice): gold-continuation bpb at every eval point (gold rows only),
        # accuracy over all choices at T only (the finished model; an un-cooled checkpoint's is no verdict).
        self.choice_sets = choice_sets or []
        self._gold_sets = [c.gold() for c in self.choice_sets]
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.mcfg = ModelConfig.named(cfg.model, vocab_size=vocab_size, seq_len=cfg.seq_len)
        # Without document offsets the tokens are one document (a scorer's own small training text).
        idx = train_idx if train_idx is not None else np.array([0, len(train_tokens)], dtype=np.int64)
        hids = train_hids if train_hids is not None else np.arange(len(idx) - 1, dtype=np.uint64)
        if cfg.broken not in BROKEN:
            raise ValueError(f"train.broken: {cfg.broken!r}; valid: {', '.join(map(repr, BROKEN))}")
        self.seed = cfg.seed
        if cfg.broken == "unpaired":  # each recipe's own initialisation and order: no common noise
            self.seed = cfg.seed + int(
                xxhash.xxh64_intdigest(np.ascontiguousarray(hids).tobytes()) % 1_000_003
            )
        self.order = DocStream(
            train_tokens,
            idx,
            hids,
            seq_len=cfg.seq_len,
            seed=self.seed,
            chunk=cfg.doc_chunk if train_idx is not None else 0,
        )
        self.autocast = use_autocast(cfg, self.device)

    # -- state -------------------------------------------------------------------------------------
    def _fresh(self) -> None:
        torch.manual_seed(self.seed)
        self.model = build_model(self.mcfg).to(self.device)
        self.model.train()
        self.opt = build_optimizer(self.model, self.cfg)
        self.step, self.elapsed = 0, 0.0
        self.stats = {
            "ema_loss": 0.0,
            "ema_grad": 0.0,
            "good_steps": 0,
            "bad_in_a_row": 0,
            "anomalies": 0,
            "rollbacks": 0,
        }

    def _state(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "model": self.model.state_dict(),
            "optim": self.opt.state_dict(),
            "rng": torch.get_rng_state(),
            "stats": dict(self.stats),
            "elapsed": self.elapsed,
        }

    def _save(self) -> None:
        with atomic_path(self.out / "ckpt.pt") as tmp:
            torch.save(self._state(), tmp)

    def _load(self, *, keep_position: bool = False) -> None:
        state = torch.load(self.out / "ckpt.pt", map_location=self.device, weights_only=True)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optim"])
        torch.set_rng_state(state["rng"])
        if not keep_position:
            self.step, self.elapsed, self.stats = state["step"], state["elapsed"], dict(state["stats"])
        else:  # roll back the weights only: counters and the data position move on
            for k in ("ema_loss", "ema_grad", "good_steps"):
                self.stats[k] = state["stats"][k]

    def _log(self, rec: dict[str, Any]) -> None:
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")

    def _truncate_metrics(self, step: int) -> None:
        path = self.out / "metrics.jsonl"
        if path.exists():
            keep = [ln for ln in path.read_text().splitlines() if json.loads(ln)["step"] <= step]
            atomic_write_text(path, "".join(ln + "\n" for ln in keep))

    # -- the loop ----------------------------------------------------------------------------------
    def evaluate(self, *, with_accuracy: bool = False) -> tuple[dict[str, float], dict[str, float | None]]:
        """bpb per eval set (choice sets: of their gold continuations) and, when ``with_accuracy``,
        each choice set's accuracy."""
        bs = self.cfg.eval_batch_size
        out = {es.name: bpb(self.model, es, batch_size=bs, autocast=self.autocast) for es in self.eval_sets}
        acc: dict[str, float | None] = {}
        for full, gold in zip(self.choice_sets, self._gold_sets, strict=True):
            rows = full if with_accuracy else gold
            nll = row_nll(self.model, rows.windows, rows.mask, batch_size=bs, autocast=self.autocast)
            out[full.name] = gold_bpb(nll, rows)
            if with_accuracy:
                acc[full.name] = accuracy(nll, rows)
        return out, acc

    def train(self) -> dict[str, Any]:
        cfg = self.cfg
        if (self.out / "result.json").exists():
            return json.loads((self.out / "result.json").read_text())
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.out / "config.json", asdict(cfg), indent=1, default=str)
        self._fresh()
        if (self.out / "ckpt.pt").exists():
            self._load()
            self._truncate_metrics(self.step)
            log.info("%s: resumed at step %d", self.out, self.step)
        else:
            self._truncate_metrics(-1)
            self._save()  # step 0: the rollback target before the first interval checkpoint
        branches = cfg.branch_steps()
        eval_steps = set(cfg.eval_steps())
        if cfg.eval_budget and cfg.eval_budget != cfg.tokens:
            # a trunk logs the eval budget's curve before its cool-down; that budget's branch logs the rest
            eval_steps = {s for s in eval_steps if s < cfg.decay_start(cfg.steps_for(cfg.eval_budget))}
        t0 = time.perf_counter() - self.elapsed
        while self.step < cfg.steps:
            step = self.step
            loss_sum, gnorm = self._step(step, cfg.lr_at(step))
            self.step = step + 1
            if self._anomalous(loss_sum, gnorm):
                self.opt.zero_grad(set_to_none=True)
                self._on_anomaly(step, loss_sum, gnorm)
            else:
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)
                self._update_stats(loss_sum, gnorm)
                if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                    self._log_train(self.step, loss_sum, gnorm, cfg.lr_at(step))
            if self.step in branches:
                self._branch(branches[self.step])
            if self.step in eval_steps:
                self._log_eval(self.step, self.step, with_accuracy=self.step in self._accuracy_steps())
            self.elapsed = time.perf_counter() - t0
            if self.step % cfg.ckpt_every == 0 and self.step < cfg.steps:
                self._save()
            if cfg.faults.get(step) == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        if branches:  # the trunk's own end is the longest finished budget
            self._log_branch(self.step, self.step, self._last_scores())
        return self._finish()

    def _accuracy_steps(self) -> set[int]:
        """Where accuracy over every choice is scored: the finished run's last step only. It costs about
        twice a gold-bpb eval, and nothing reads it from an un-cooled checkpoint."""
        return {self.cfg.steps_for(self.cfg.eval_budget) if self.cfg.eval_budget else self.cfg.steps}

    def _step(self, step: int, lr: float) -> tuple[float, float]:
        """Forward and backward over one step's micro-batches at ``lr``; returns (loss, clipped grad norm).
        The optimizer step is the caller's (it may skip an anomalous step)."""
        cfg = self.cfg
        per_step = cfg.batch_size * cfg.grad_accum
        head_dtype = torch.bfloat16 if self.autocast else torch.float32
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss_sum = 0.0
        for micro in range(cfg.grad_accum):
            batch = self.order.batch(step * per_step + micro * cfg.batch_size, cfg.batch_size)
            if cfg.broken == "shuffle_tokens":  # every sequence's tokens in a random order (seeded by step)
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step * 31 + micro)
                batch = torch.stack([row[torch.randperm(row.numel(), generator=gen)] for row in batch])
            batch = batch.to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                loss = (
                    lm_loss(self.model, batch, head_dtype=head_dtype, chunk=cfg.ce_chunk, compile=cfg.compile)
                    / cfg.grad_accum
                )
            loss = self._inject(step, loss)
            loss.backward()
            loss_sum += float(loss.detach())
        return loss_sum, float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip))

    def _branch(self, steps: int) -> None:
        """Cool a copy of the trunk down to a finished run of ``steps`` steps, evaluate it, and restore the
        trunk (weights, optimizer, anomaly statistics) as it was. Anomalous cool-down steps are skipped and
        counted (``branch_anomalies``); a branch never rolls back."""
        cfg, at = self.cfg, self.step
        saved = (
            {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            copy.deepcopy(self.opt.state_dict()),
            dict(self.stats),
        )
        main = cfg.eval_budget and steps == cfg.steps_for(cfg.eval_budget)
        evals = {s for s in cfg.eval_steps() if s > at} if main else set()
        skipped = 0
        for step in range(at, steps):
            loss_sum, gnorm = self._step(step, cfg.lr_at(step, steps))
            if self._anomalous(loss_sum, gnorm):
                skipped += 1
            else:
                self.opt.step()
                self._update_stats(loss_sum, gnorm)
            self.opt.zero_grad(set_to_none=True)
            if step + 1 in evals and step + 1 < steps:
                self._log_eval(at, step + 1, with_accuracy=step + 1 in self._accuracy_steps())
        scores = self._log_eval(at, steps, with_accuracy=bool(main)) if main else self.evaluate()[0]
        self._log_branch(at, steps, scores, skipped)
        self.model.load_state_dict(saved[0])
        self.opt.load_state_dict(saved[1])
        self.stats = saved[2]

    def _last_scores(self) -> dict[str, float]:
        evals = [json.loads(ln) for ln in (self.out / "metrics.jsonl").read_text().splitlines()]
        last = [r for r in evals if r["type"] == "eval" and r.get("at_step", r["step"]) == self.step]
        return last[-1]["bpb"] if last else self.evaluate()[0]

    def _log_train(self, step: int, loss: float, gnorm: float, lr: float) -> None:
        tokens = step * self.cfg.tokens_per_step
        self._log(
            {"type": "train", "step": step, "tokens": tokens, "loss": loss, "grad_norm": gnorm, "lr": lr}
        )

    def _log_eval(self, trunk_step: int, at_step: int, *, with_accuracy: bool) -> dict[str, float]:
        """Evaluate now and log an ``eval`` record for the model at ``at_step``. ``step`` is the trunk's
        step when it was logged (what a resume truncates by); ``at_step`` the step the model is at."""
        scores, acc = self.evaluate(with_accuracy=with_accuracy)
        per_step = self.cfg.batch_size * self.cfg.grad_accum
        rec: dict[str, Any] = {
            "type": "eval",
            "step": trunk_step,
            "at_step": at_step,
            "tokens": at_step * self.cfg.tokens_per_step,
            "epochs": self.order.epochs_at(at_step * per_step),
            "bpb": scores,
        }
        if acc:
            rec["acc"] = acc
        self._log(rec)
        return scores

    def _log_branch(self, trunk_step: int, steps: int, scores: dict[str, float], skipped: int = 0) -> None:
        tokens = steps * self.cfg.tokens_per_step
        rec = {"type": "branch", "step": trunk_step, "steps": steps, "tokens": tokens, "bpb": scores}
        self._log(rec | {"anomalies": skipped})

    def _inject(self, step: int, loss: torch.Tensor) -> torch.Tensor:
        fault = self.cfg.faults.get(step)
        if fault == "nan":
            return loss * float("nan")
        if fault == "spike":
            return loss * 100.0
        return loss

    def _anomalous(self, loss: float, gnorm: float) -> bool:
        if not (math.isfinite(loss) and math.isfinite(gnorm)):
            return True
        s = self.stats
        if s["good_steps"] < self.cfg.spike_warmup:
            return False
        return loss > self.cfg.spike_loss * s["ema_loss"] or gnorm > self.cfg.spike_grad * s["ema_grad"]

    def _update_stats(self, loss: float, gnorm: float) -> None:
        s = self.stats
        beta = 0.9 if s["good_steps"] >= 10 else s["good_steps"] / (s["good_steps"] + 1)
        s["ema_loss"] = beta * s["ema_loss"] + (1 - beta) * loss
        s["ema_grad"] = beta * s["ema_grad"] + (1 - beta) * gnorm
        s["good_steps"] += 1
        s["bad_in_a_row"] = 0

    def _on_anomaly(self, step: int, loss: float, gnorm: float) -> None:
        s = self.stats
        s["anomalies"] += 1
        s["bad_in_a_row"] += 1
        log.warning(
            "%s: anomaly at step %d (loss %s, grad norm %s): batch skipped", self.out, step, loss, gnorm
        )
        self._log(
            {
                "type": "anomaly",
                "step": self.step,
                "loss": loss if math.isfinite(loss) else str(loss),
                "grad_norm": gnorm if math.isfinite(gnorm) else str(gnorm),
                "action": "skip",
            }
        )
        if s["bad_in_a_row"] >= self.cfg.max_bad_in_a_row:
            s["rollbacks"] += 1
            s["bad_in_a_row"] = 0
            to = int(torch.load(self.out / "ckpt.pt", weights_only=True)["step"])
            self._load(keep_position=True)
            self._log({"type": "rollback", "step": self.step, "to_step": to})

    def _finish(self) -> dict[str, Any]:
        cfg = self.cfg
        self.model.save_pretrained(self.out / "model", safe_serialization=True)
        write_folder_manifest(self.out / "model")  # perplexity_v1 / synthesize_v1 verify it before loading
        evals = [json.loads(ln) for ln in (self.out / "metrics.jsonl").read_text().splitlines()]
        branches = [r for r in evals if r["type"] == "branch"]
        evals = [r for r in evals if r["type"] == "eval"]
        tokens = cfg.steps * cfg.tokens_per_step
        result = {
            "tokens": tokens,
            "steps": cfg.steps,
            "device_s": self.elapsed,
            "device": self.device.type,
            "gpu_assigned_without_cuda": gpu_assigned_without_cuda(),
            "tokens_per_s": tokens / self.elapsed if self.elapsed else None,
            "final_bpb": evals[-1]["bpb"] if evals else {},
            "final_acc": evals[-1].get("acc", {}) if evals else {},
            "anomalies": self.stats["anomalies"],
            "rollbacks": self.stats["rollbacks"],
            "branch_anomalies": int(sum(r.get("anomalies", 0) for r in branches)),
            "branches": {str(r["tokens"]): r["bpb"] for r in sorted(branches, key=lambda r: r["tokens"])},
            "autocast": self.autocast,
            "threads": torch.get_num_threads(),
            "model": self.mcfg.describe(),
            "epochs": self.order.epochs_at(cfg.steps * cfg.batch_size * cfg.grad_accum),
        }
        atomic_write_json(self.out / "result.json", result, indent=1)
        (self.out / "ckpt.pt").unlink(missing_ok=True)  # the final weights live in model/
        return result
