"""The data-limited arm (``proxy.data_limited``): what a recipe is worth when data, not compute, is the
limit. A team with ``D`` raw tokens and compute for ``T = k D`` training tokens trains raw repeated ``k``
times, or a recipe's share of those same documents repeated ``k / yield`` times; the arm trains both.

For each compute-to-data ratio ``k`` and each training seed, raw's *pool* is a draw of its documents
holding ``T / k`` tokens (the smallest ``unit_hash(id, NULL_SALT + POOL_SEED + seed)`` first: a function of
the seed and the id alone). Three kinds of run read it, every one at the main point's budget ``T``:

* ``raw~k<k>``: the pool itself, repeated about ``k`` times;
* ``<recipe>~k<k>``: the recipe's own rows of the pool's documents (by id), repeated about ``k / yield``
  times;
* ``null~k<k>``: a random subset of the pool at the controlled recipe's arm's tokens (another draw per
  seed): raw's own distribution at the recipe's pool size and epochs, the arm's control.

Every arm trains on the phase's seeds with the phase's initialisations, and its stream orders documents by
``(seed, epoch, id)`` (:class:`curate.instrument.streams.DocStream`), so the arms of one seed read their
common documents in one order (common random numbers). Arms train at the main point only; their runs are
under ``proxy/limited/<arm>/seed<k>/``. The analysis is :mod:`curate.proxy.assembly.limited`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.proxy.kinds.base import Recipe, Settings, register

POOL_SEED = 50_000  # the pool's draw: NULL_SALT + POOL_SEED + seed (apart from every null draw's seed)
NULL_IN_POOL_SEED = 60_000  # the arm's null: its subset of the pool, NULL_SALT + NULL_IN_POOL_SEED + seed


def arm_name(of: str, k: float) -> str:
    """``raw~k4``: recipe ``of`` at compute-to-data ratio ``k``."""
    return f"{of}~k{k:g}"


@register
@dataclass
class Limited(Recipe):
    """Recipe ``of`` (its shard in folder ``source`` under ``proxy/data/``) restricted to the documents of
    raw's per-seed pool of ``T / k`` tokens (drawn from raw's shard, folder ``pool``); with ``null_of``, a
    random subset of raw's arm at ``k`` (``of`` is then raw) at the tokens of arm ``null_of`` at the same
    seed: the arm's null."""

    of: str = "raw"
    k: float = 1.0
    source: str = "raw"
    pool: str = "raw"
    null_of: str | None = None

    KIND = "limited"
    ROLE = "arm"
    CURATED = False
    FROM_FILES = False
    MAIN_ONLY = True

    def requires(self) -> list[str]:
        return [self.of] if self.null_of is None else [self.null_of]

    def derive(
        self, cfg: Settings, pdir: Path, data: dict[str, dict[str, Any]], controlled: str | None
    ) -> dict[str, Any]:
        from curate.instrument.shards import subsample_shard

        main = cfg.points()[0]
        pool_tokens = math.ceil(main.budget / self.k)
        raw = pdir / "data" / self.pool / "train"
        made: dict[int, dict[str, Any]] = {}
        for s in sorted(main.seeds):
            out = self.train_prefix(cfg, pdir, s)
            if self.null_of is not None:  # a subset of raw's arm at this k, at the recipe's arm's tokens
                want = int(data[self.null_of]["draws"][str(s)]["tokens"])
                src = pdir / "data" / arm_name(self.of, self.k) / f"seed{s}" / "train"  # raw's arm at k
                made[s] = subsample_shard(src, out, tokens=want, seed=NULL_IN_POOL_SEED + s)
            elif self.source == self.pool:
                made[s] = subsample_shard(raw, out, tokens=pool_tokens, seed=POOL_SEED + s)
            else:
                src = pdir / "data" / self.source / "train"
                made[s] = subsample_shard(src, out, tokens=pool_tokens, seed=POOL_SEED + s, draw_from=raw)
        first = made[min(made)]
        return {
            **first,
            "k": self.k,
            "pool_tokens_asked": pool_tokens,
            "draws": {
                str(s): {
                    "docs": d["docs"],
                    "tokens": d["tokens"],
                    "epochs_at_T": round(main.budget / max(1, d["tokens"]), 4),
                }
                for s, d in made.items()
            },
        }

    def data_folder(self, cfg: Settings) -> str:
        return self.name

    def train_prefix(self, cfg: Settings, pdir: Path, seed: int) -> Path:
        return pdir / "data" / self.name / f"seed{seed}" / "train"

    def run_folder(self, cfg: Settings) -> str:
        return f"limited/{self.name}"

    def record(self) -> dict[str, Any]:
        return {
            **super().record(),
            "of": self.of,
            "k": self.k,
            **({"null_of": self.null_of} if self.null_of else {}),
        }
