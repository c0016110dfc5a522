"""The ``planted`` control: the null's documents (the same per-seed draw of raw at the controlled recipe's
token count) with a share of them word-shuffled, layout kept (``proxy.planted``, default 40%). Worse by
construction, and sharing with raw what the controlled recipe shares, so its call shows whether the run
can see a known effect of that size."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.proxy.kinds.base import Recipe, RunFiles, Settings, register
from curate.proxy.kinds.null import draw_prefix, draws
from curate.proxy.kinds.raw import Raw

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob

PLANTED_SALT = 0x706C616E74  # "plant": which documents the planted control corrupts
PLANTED_DEFAULT = 0.4


@register
@dataclass
class Planted(Recipe):
    """raw with ``proxy.planted`` of its documents word-shuffled, drawn as the null is."""

    KIND = "planted"
    ROLE = "control"
    ORDER = 2

    def requirement(self, baseline: Recipe) -> str | None:
        return None if isinstance(baseline, Raw) else f"the baseline {baseline.name!r} is not from: raw"

    def data_folder(self, cfg: Settings) -> str:
        """Named by its fraction, so another ``proxy.planted`` never reuses shards corrupted at another rate."""
        return f"{self.name}@{cfg.planted:g}"

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        """raw's rows with ``proxy.planted`` of the documents word-shuffled (after decontamination)."""
        from curate.instrument.shards import ShardJob

        common = {**common, "corrupt_fraction": cfg.planted, "corrupt_salt": PLANTED_SALT}
        jobs = [
            ShardJob(src=str(f), out=str(out / f"kept-{i:05d}"), **common) for i, f in enumerate(files.kept)
        ]
        jobs += [
            ShardJob(src=str(f), out=str(out / f"rejected-{i:05d}"), rejected=True, **common)
            for i, f in enumerate(files.rejected)
        ]
        return jobs

    def derive(
        self, cfg: Settings, pdir: Path, data: dict[str, dict[str, Any]], controlled: str | None
    ) -> dict[str, Any]:
        """The null's draws (the same documents per seed) taken from the corrupted shard: planted vs null
        is the corruption alone, and planted vs raw shares with raw what the controlled recipe shares."""
        assert controlled is not None
        base = pdir / "data" / cfg.baseline / "train"
        return draws(
            cfg,
            pdir,
            tokens=data[controlled]["tokens"],
            src=pdir / "data" / self.data_folder(cfg) / "train",
            folder=self.data_folder(cfg),
            extra={"draw_from": base, "corrupt": (cfg.planted, PLANTED_SALT)},
            keys=("docs", "tokens", "corrupted"),
        )

    def train_prefix(self, cfg: Settings, pdir: Path, seed: int) -> Path:
        return draw_prefix(pdir, self.data_folder(cfg), seed, cfg.null_draw)

    def run_folder(self, cfg: Settings) -> str:
        name = self.data_folder(cfg) if cfg.planted != PLANTED_DEFAULT else self.name
        return f"{name}-draw{cfg.null_draw}" if cfg.null_draw else name
