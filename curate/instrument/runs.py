"""One proxy training run as an engine work item: :class:`RunItem` (paths and primitives) and
:func:`run_one`, which trains it or reads back its finished result.

A run directory in object storage (``RunItem.remote``): the driver's paths in the item name files of its
local mirror, which a task on another node cannot see. The task then fetches what it reads (its training
shard, the eval sets) into its node's own cache, trains in a folder there, and keeps the run's folder in
the run's storage: each checkpoint, once written, is uploaded with the files a resume needs
(``config.json``, ``data.json``, ``metrics.jsonl``), and at the end the whole folder, ``result.json``
last (a run whose ``result.json`` is in the run's storage is finished). A run killed on one node resumes
from its last uploaded checkpoint on any node.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.instrument.shards import fetch_shard, read_hids, read_shard
from curate.instrument.train_config import TrainConfig
from curate.io.files import atomic_write_json
from curate.io.storage import Location

if TYPE_CHECKING:
    from curate.instrument.speed import RunWork
    from curate.io.stage import RemoteRoot

log = logging.getLogger(__name__)
RESUME_FILES = ("config.json", "data.json", "metrics.jsonl")  # uploaded with each checkpoint


@dataclass
class RunItem:
    """One proxy run for ``Engine.map``: its settings (``train_cfg``, the :class:`TrainConfig` itself: a
    dataclass pickles as it is), and paths and primitives. ``remote``: the paths are in the driver's mirror
    of a run directory in object storage (module docstring)."""

    recipe: str
    seed: int
    train_prefix: str
    eval_prefixes: dict[str, str]
    out_dir: str
    train_cfg: TrainConfig
    vocab_size: int
    eos_id: int
    threads: int
    choice_paths: dict[str, str] = dataclasses.field(default_factory=dict)
    point: str = ""
    remote: RemoteRoot | None = None

    # Progress (curate.core.engine_base.Work): the engine's bar counts tokens trained and its ETA prices
    # each run at this machine's measured speed (curate.instrument.speed), read on the driver only.
    def work(self) -> float:
        """Expected seconds of this run on one slot: its steps and eval passes at this machine's speed."""
        from curate.instrument.speed import machine_speed

        speed = machine_speed(self.train_cfg, vocab_size=self.vocab_size, threads=self.threads)
        return self.run_work.cpu_s(speed) / max(1, self.threads)

    @functools.cached_property
    def run_work(self) -> RunWork:
        """This run's tokens through optimizer steps and through eval passes (its eval shards' sizes)."""
        from curate.instrument.choice import ChoiceRows
        from curate.instrument.speed import run_work, text_set_tokens

        cfg = self.train_cfg
        text = 0
        for prefix in self.eval_prefixes.values():
            meta = json.loads(Path(prefix + ".json").read_text())
            text += text_set_tokens(int(meta["tokens"]), cfg.seq_len)
        gold = every = 0
        for path in self.choice_paths.values():
            rows = ChoiceRows.load("", path)
            ends = rows.mask.shape[1] - rows.mask[:, ::-1].argmax(axis=1)
            gold += int(ends[rows.is_gold].sum())
            every += int(ends.sum())
        return run_work(cfg, text_tokens=text, choice_gold_tokens=gold, choice_all_tokens=every)

    def size(self) -> tuple[float, str]:
        """Tokens this run trains on (a trunk's cool-down branches included)."""
        return float(self.run_work.train_tokens), "tokens"

    def done(self) -> float:
        """The share of the run's training done: 1 once its ``result.json`` exists, else the tokens of the
        last ``train`` record its ``metrics.jsonl`` holds (in the driver's view of the run's folder: a run
        in object storage shows nothing until it ends) over the run's tokens."""
        out = Path(self.out_dir)
        if (out / "result.json").exists():
            return 1.0
        metrics = out / "metrics.jsonl"
        if not metrics.exists():
            return 0.0
        with metrics.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            lines = f.read().decode("utf-8", "replace").splitlines()
        for line in reversed(lines):
            if '"type": "train"' in line:
                try:
                    tokens = json.loads(line)["tokens"]
                except (ValueError, KeyError):
                    continue
                return min(1.0, tokens / max(1, self.run_work.train_tokens))
        return 0.0


def run_one(item: RunItem) -> dict[str, Any]:
    """Train one (recipe, seed) run; returns its ``result.json`` (read back when already finished with
    the same configuration; a run left by another configuration is discarded and retrained)."""
    if item.remote is not None:
        return _run_remote(item, item.remote)
    cfg = item.train_cfg
    out = Path(item.out_dir)
    data_meta = json.loads(Path(item.train_prefix + ".json").read_text())
    done = _finished(out, cfg, data_meta)
    return done if done is not None else _train(item, cfg, out, data_meta)


def resuming(items: list[RunItem]) -> list[RunItem]:
    """The runs an earlier attempt left unfinished with a checkpoint (``ckpt.pt`` and no ``result.json``,
    in the run's storage when it has one): each resumes from it. Read on the driver, which says so, since a
    worker's own log does not reach the driver's terminal."""
    out = []
    for it in items:
        run = Path(it.out_dir)
        if it.remote is not None:
            left = it.remote.exists(run / "ckpt.pt") and not it.remote.exists(run / "result.json")
        else:
            left = (run / "ckpt.pt").exists() and not (run / "result.json").exists()
        if left:
            out.append(it)
    return out


def _finished(out: Path, cfg: TrainConfig, data_meta: dict[str, Any]) -> dict[str, Any] | None:
    """The run's result when ``out`` holds it for this configuration and this training data; a folder
    left by another configuration or other data is removed (it is retrained)."""
    cfg_path, data_path = out / "config.json", out / "data.json"
    # A run is reused only for the same configuration and the same training data (the shard's metadata:
    # documents, tokens, draw seed); a run without data.json predates it and is retrained.
    if cfg_path.exists() and (
        json.loads(cfg_path.read_text()) != json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
        or not data_path.exists()
        or json.loads(data_path.read_text()) != data_meta
    ):
        log.warning("%s: was trained with another configuration or other data; retraining", out)
        shutil.rmtree(out)
    done = out / "result.json"
    return json.loads(done.read_text()) if done.exists() else None


def _train(
    item: RunItem,
    cfg: TrainConfig,
    out: Path,
    data_meta: dict[str, Any],
    on_checkpoint: Callable[[], None] | None = None,
) -> dict[str, Any]:
    import torch

    from curate.instrument.choice import ChoiceRows
    from curate.instrument.evaluate import EvalSet

    torch.set_num_threads(item.threads)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "data.json", data_meta, indent=1, allow_nan=False)
    tokens, idx, _ = read_shard(item.train_prefix)
    sets = []
    for name, prefix in sorted(item.eval_prefixes.items()):
        toks, _, meta = read_shard(prefix)
        sets.append(EvalSet.from_shard(name, toks, meta["bytes"], eos_id=item.eos_id, seq_len=cfg.seq_len))
    choices = [ChoiceRows.load(name, p) for name, p in sorted(item.choice_paths.items())]
    return _run_class(on_checkpoint)(
        cfg,
        train_tokens=tokens,
        train_idx=idx,
        train_hids=read_hids(item.train_prefix),
        eval_sets=sets,
        choice_sets=choices,
        vocab_size=item.vocab_size,
        out_dir=out,
    ).train()


def _run_remote(item: RunItem, remote: RemoteRoot) -> dict[str, Any]:
    """:func:`run_one` on a node that may not see the driver's disk (module docstring)."""
    cfg = item.train_cfg
    run = Path(item.out_dir)  # the run's folder as the driver names it
    work = remote.cache_of(run)  # this node's working copy; the run's storage holds the truth
    shutil.rmtree(work, ignore_errors=True)
    for name in ("config.json", "data.json", "result.json"):
        remote.fetch(run / name, optional=True)
    data_meta = json.loads(Path(str(remote.fetch(item.train_prefix + ".json"))).read_text())
    done = _finished(work, cfg, data_meta)
    if done is not None:
        return done
    # unfinished, or left by another configuration: a stale result.json must not survive a retrain
    Location.of(remote.url_of(run / "result.json")).remove()
    if (work / "config.json").exists():  # same configuration: resume from its last checkpoint
        for name in ("metrics.jsonl", "ckpt.pt"):
            remote.fetch(run / name, optional=True)
        if (work / "ckpt.pt").exists():  # in the worker's log; the driver says it too (resuming)
            log.warning(
                "%s: an earlier attempt stopped; resuming from its stored checkpoint",
                remote.rel(run),
            )
    local = dataclasses.replace(
        item,
        remote=None,
        out_dir=str(work),
        train_prefix=fetch_shard(remote, item.train_prefix),
        eval_prefixes={k: fetch_shard(remote, v) for k, v in item.eval_prefixes.items()},
        choice_paths={k: str(remote.fetch(v)) for k, v in item.choice_paths.items()},
    )
    result = _train(local, cfg, work, data_meta, on_checkpoint=CheckpointUploader(remote, work, run))
    files = sorted(p for p in work.rglob("*") if p.is_file() and p.name != "result.json")
    for p in files:
        remote.upload(p, run / p.relative_to(work))
    remote.upload(work / "result.json", run / "result.json")  # last: the run is finished
    Location.of(remote.url_of(run / "ckpt.pt")).remove()  # the final weights are in model/
    return result


class CheckpointUploader:
    """Called right after the trainer writes ``ckpt.pt`` in ``work``: uploads the files a resume reads
    with it (:data:`RESUME_FILES`; ``metrics.jsonl`` then holds the checkpoint's steps) and then the
    checkpoint, as ``run``'s files in the run's storage. Synchronous, so a run killed after a checkpoint
    resumes from that checkpoint on any node; if the upload of the checkpoint itself is cut, the stored
    one is the previous (a PUT is all or nothing) and the resume cuts ``metrics.jsonl`` back to its step."""

    def __init__(self, remote: RemoteRoot, work: Path, run: Path) -> None:
        self.remote, self.work, self.run = remote, work, run
        self.uploads = 0

    def __call__(self) -> None:
        for name in (*RESUME_FILES, "ckpt.pt"):
            if (self.work / name).exists():
                self.remote.upload(self.work / name, self.run / name)
        self.uploads += 1


def _run_class(on_checkpoint: Callable[[], None] | None) -> Any:
    """The trainer, or the trainer calling ``on_checkpoint`` after each checkpoint it writes."""
    from curate.instrument.train import Run

    if on_checkpoint is None:
        return Run
    hook = on_checkpoint

    class UploadingRun(Run):
        def _save(self) -> None:
            super()._save()
            hook()

    return UploadingRun
