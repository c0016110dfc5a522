"""The ``null`` control: a random subsample of the baseline (raw) at the controlled recipe's token count,
one document draw per training seed. It is raw's own distribution, so it must land at 1x: a null that
separates from raw says the instrument is biased at this budget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.proxy.kinds.base import Recipe, Settings, register
from curate.proxy.kinds.raw import Raw

NULL_SEED = 0


def draw_prefix(pdir: Path, folder: str, seed: int, draw: int = 0) -> Path:
    """The shard of one per-seed document draw under ``proxy/data/<folder>/`` (``draw`` > 0: another
    family of draws, for calibration studies, beside the default one)."""
    return pdir / "data" / folder / (f"draw{draw}" if draw else "") / f"seed{seed}" / "train"


def draws(
    cfg: Settings,
    pdir: Path,
    *,
    tokens: int,
    src: Path,
    folder: str,
    extra: dict[str, Any] | None = None,
    keys: tuple[str, ...] = ("docs", "tokens"),
) -> dict[str, Any]:
    """``src``'s documents subsampled to ``tokens``, one draw per training seed of every point (so a
    control's paired interval includes which documents were drawn: with one fixed draw, the web ladder's
    proxy_5m null separated from raw). Returns the first draw's meta with every draw's counts."""
    from curate.instrument.shards import subsample_shard

    made = {
        s: subsample_shard(
            src,
            draw_prefix(pdir, folder, s, cfg.null_draw),
            tokens=tokens,
            seed=NULL_SEED + 1000 * cfg.null_draw + s,
            **(extra or {}),
        )
        for s in sorted({s for p in cfg.points() for s in p.seeds})
    }
    first = made[min(made)]
    return {**first, "draws": {str(s): {k: d[k] for k in keys} for s, d in made.items()}}


@register
@dataclass
class Null(Recipe):
    """raw's documents drawn at the controlled recipe's token count, afresh per seed."""

    KIND = "null"
    ROLE = "control"
    CURATED = False
    FROM_FILES = False
    ORDER = 0

    def requirement(self, baseline: Recipe) -> str | None:
        return None if isinstance(baseline, Raw) else f"the baseline {baseline.name!r} is not from: raw"

    def derive(
        self, cfg: Settings, pdir: Path, data: dict[str, dict[str, Any]], controlled: str | None
    ) -> dict[str, Any]:
        assert controlled is not None
        src = pdir / "data" / cfg.baseline / "train"
        return draws(cfg, pdir, tokens=data[controlled]["tokens"], src=src, folder=self.name)

    def train_prefix(self, cfg: Settings, pdir: Path, seed: int) -> Path:
        return draw_prefix(pdir, self.name, seed, cfg.null_draw)

    def run_folder(self, cfg: Settings) -> str:
        return f"{self.name}-draw{cfg.null_draw}" if cfg.null_draw else self.name

    def report_fields(self, data: dict[str, Any], baseline: str) -> dict[str, Any]:
        return {"subsample_of": baseline, "draws": data.get("draws", {})}  # one document draw per seed
