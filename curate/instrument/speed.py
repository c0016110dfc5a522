"""How fast this machine trains and evaluates a proxy model, and what one run costs at that speed.

:func:`machine_speed` times a few optimizer steps, an eval pass and a run's fixed work (model, optimizer,
a checkpoint, the final ``save_pretrained``) of one model at one run's settings through the trainer's own
code (:class:`curate.instrument.train.Run`), once per machine and setting: the result is cached in
``<CURATE_CACHE>/speed.json`` (default ``~/.cache/curate``), keyed by the CPU, the torch version, the model,
vocabulary, sequence length, batch, threads and precision. Rates are per CPU-second of the measuring
process (threads included), so load from other processes moves them less than it moves wall time.

:func:`run_work` counts what one run does: its optimizer steps (a baseline trunk's cool-down branches
included) and the tokens of every eval pass (text sets whole, choice rows to their last token);
:meth:`RunWork.cpu_s` prices that at a :class:`Speed`. The pre-run estimate (``curate plan``, ``curate
run``) and the proxy phase's progress bar use the same arithmetic.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from curate.instrument.train_config import TrainConfig
from curate.io.files import atomic_write_json
from curate.io.stage import node_cache

log = logging.getLogger(__name__)
CACHE_NAME = "speed.json"
MIN_TIMED_CPU_S = 1.5  # each rate is timed over at least this much CPU (and at least 3 batches)
MAX_STEPS = 60


@dataclass(frozen=True)
class Speed:
    """Measured rates of one model at one run's settings on one machine (CPU-seconds of one process)."""

    train_tokens_per_cpu_s: float  # optimizer steps: forward, backward, clip, AdamW
    eval_tokens_per_cpu_s: float  # bpb passes: forward only
    run_fixed_cpu_s: float  # per run: model and optimizer built, a checkpoint written, save_pretrained
    worker_start_cpu_s: float  # per worker process, once: importing the trainer, first calls' set-up
    source: str  # where the rates come from ("measured here on <date> ...")


@dataclass(frozen=True)
class RunWork:
    """What one proxy run does: tokens through optimizer steps and tokens through eval passes."""

    train_tokens: int
    eval_tokens: int

    def cpu_s(self, speed: Speed) -> float:
        """CPU-seconds of the run at ``speed``."""
        return (
            self.train_tokens / speed.train_tokens_per_cpu_s
            + self.eval_tokens / speed.eval_tokens_per_cpu_s
            + speed.run_fixed_cpu_s
        )


def run_work(
    cfg: TrainConfig, *, text_tokens: int, choice_gold_tokens: int, choice_all_tokens: int
) -> RunWork:
    """The work of a run of ``cfg`` (:class:`curate.instrument.train.Run`): its steps, plus each branch's
    cool-down (a branch of ``n`` steps re-runs its last ``n - decay_start(n)`` steps), and its eval passes.

    Per pass, ``text_tokens`` are the text and held-out sets' tokens and ``choice_gold_tokens`` the gold
    rows' tokens of the choice sets; the last pass of the eval budget scores every choice row
    (``choice_all_tokens``) instead of the gold ones. A run evaluates at each of its ``eval_steps()``; a
    trunk with branches also at each branch but the eval budget's (its points are among those) and at
    its own end."""
    branches = cfg.branch_steps()
    extra_steps = sum(n - start for start, n in branches.items())
    train_tokens = (cfg.steps + extra_steps) * cfg.tokens_per_step
    passes = len(cfg.eval_steps())
    if branches:
        main = cfg.steps_for(cfg.eval_budget) if cfg.eval_budget else None
        passes += sum(1 for n in branches.values() if n != main) + 1
    text = passes * text_tokens
    choice = (passes - 1) * choice_gold_tokens + choice_all_tokens
    return RunWork(train_tokens=int(train_tokens), eval_tokens=int(text + choice))


def text_set_tokens(tokens: int, seq_len: int) -> int:
    """Tokens an eval pass reads for a text set of ``tokens`` tokens: whole windows of ``seq_len``
    (:meth:`curate.instrument.evaluate.EvalSet.from_shard`: EOS first, the last window padded)."""
    return max(1, -(-tokens // seq_len)) * seq_len


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def speed_key(cfg: TrainConfig, *, vocab_size: int, threads: int) -> str:
    """The cache key of a measurement: machine, torch, and the settings that move the rates."""
    import torch

    return "|".join(
        str(x)
        for x in (
            cpu_model(),
            os.cpu_count(),
            torch.__version__,
            cfg.model,
            vocab_size,
            cfg.seq_len,
            cfg.batch_size * cfg.grad_accum,
            cfg.eval_batch_size,
            threads,
            cfg.autocast,
            cfg.compile,
        )
    )


def cache_path() -> Path:
    return node_cache() / CACHE_NAME


def machine_speed(cfg: TrainConfig, *, vocab_size: int, threads: int = 1, refresh: bool = False) -> Speed:
    """This machine's :class:`Speed` for runs of ``cfg`` (its model, sequence, batch, precision) with
    ``vocab_size`` tokens and ``threads`` torch threads: from the cache, else measured (a few seconds)
    and cached. ``refresh`` measures again."""
    key = speed_key(cfg, vocab_size=vocab_size, threads=threads)
    path = cache_path()
    cached: dict[str, Any] = {}
    if path.exists():
        try:
            cached = json.loads(path.read_text())
        except (OSError, ValueError):
            cached = {}
    if key in cached and not refresh:
        rec = cached[key]
        return Speed(**{k: rec[k] for k in Speed.__dataclass_fields__})
    speed = measure_speed(cfg, vocab_size=vocab_size, threads=threads)
    cached[key] = asdict(speed) | {"load": round(os.getloadavg()[0], 2)}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, cached, indent=1)
    return speed


def _timed(fn: Any, min_cpu_s: float, min_calls: int = 3, max_calls: int = MAX_STEPS) -> tuple[int, float]:
    """Call ``fn()`` until at least ``min_calls`` calls and ``min_cpu_s`` CPU-seconds; (calls, CPU-s)."""
    calls, c0 = 0, time.process_time()
    while calls < max_calls:
        fn()
        calls += 1
        if calls >= min_calls and time.process_time() - c0 >= min_cpu_s:
            break
    return calls, time.process_time() - c0


def _import_cpu_s() -> float:
    """CPU-seconds a fresh process spends importing the trainer (what a worker pays before its first run)."""
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import curate.instrument.train"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure_speed(cfg: TrainConfig, *, vocab_size: int, threads: int = 1) -> Speed:
    """Time the trainer's own step, eval pass and fixed per-run work for ``cfg`` here, with ``threads``
    torch threads, on random tokens (the rates do not depend on the values)."""
    import torch

    from curate.instrument.evaluate import EvalSet, bpb
    from curate.instrument.train import Run
    from curate.io.integrity import write_folder_manifest

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    cfg = TrainConfig(**(asdict(cfg) | {"tokens": max(cfg.tokens, 64 * cfg.tokens_per_step), "branches": []}))
    cfg = TrainConfig(**(asdict(cfg) | {"eval_budget": None, "faults": {}}))
    tokens = rng.integers(1, vocab_size, size=cfg.tokens_per_step * 8, dtype=np.int64)
    try:
        with tempfile.TemporaryDirectory(prefix="curate-speed-") as tmp:

            def fixed_work() -> Run:
                r = Run(
                    cfg, train_tokens=tokens, eval_sets=[], vocab_size=vocab_size, out_dir=tmp, device="cpu"
                )
                r._fresh()
                r._save()
                r.model.save_pretrained(Path(tmp) / "model", safe_serialization=True)
                write_folder_manifest(Path(tmp) / "model")
                return r

            c0 = time.process_time()
            fixed_work()  # the first time: lazy imports and first calls' set-up
            cold = time.process_time() - c0
            c0 = time.process_time()
            run = fixed_work()
            fixed = time.process_time() - c0
            step = [0]

            def one_step() -> None:
                run._step(step[0], cfg.lr)
                run.opt.step()
                run.opt.zero_grad(set_to_none=True)
                step[0] += 1

            _timed(one_step, 0.0, min_calls=2, max_calls=2)  # warm-up: first calls allocate
            n, train_cpu = _timed(one_step, MIN_TIMED_CPU_S)
            train_rate = n * cfg.tokens_per_step / train_cpu
            windows = cfg.eval_batch_size * 4
            es = EvalSet(
                "speed",
                rng.integers(1, vocab_size, size=(windows, cfg.seq_len + 1), dtype=np.int64),
                n_bytes=windows * cfg.seq_len * 4,
                eos_id=0,
            )
            bpb(run.model, es, batch_size=cfg.eval_batch_size, autocast=run.autocast)  # warm-up
            k, eval_cpu = _timed(
                lambda: bpb(run.model, es, batch_size=cfg.eval_batch_size, autocast=run.autocast),
                MIN_TIMED_CPU_S / 2,
            )
            eval_rate = k * windows * cfg.seq_len / eval_cpu
    finally:
        torch.set_num_threads(before)
    start = _import_cpu_s() + max(0.0, cold - fixed)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    source = (
        f"measured here {when}: {n} steps of {cfg.model} (vocab {vocab_size:,}, {cfg.batch_size}x{cfg.seq_len}, "
        f"{threads} thread{'s' if threads != 1 else ''}, {'bf16' if run.autocast else 'fp32'}), load "
        f"{os.getloadavg()[0]:.1f}"
    )
    return Speed(
        train_tokens_per_cpu_s=round(train_rate, 1),
        eval_tokens_per_cpu_s=round(eval_rate, 1),
        run_fixed_cpu_s=round(fixed, 3),
        worker_start_cpu_s=round(start, 3),
        source=source,
    )
