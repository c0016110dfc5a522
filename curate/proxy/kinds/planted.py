"""The ``planted`` control: the null's documents (the same per-seed draw of raw at the controlled recipe's
token count) with a share of them word-shuffled, layout kept (``proxy.planted``, default 40%). Worse by
construction, and sharing with raw what the controlled recipe shares, so its call shows whether the run
can see a known effect of that size.

Its own ``proxy:`` keys (:class:`PlantedSettings`)::

  proxy:
    planted: 0.4        # the share of the null's documents corrupted (0 < share < 1)
    planted_corruption: words   # words: shuffled over the document (word order goes, layout stays);
                        # letters: shuffled within each word (the words go): a larger effect where word
                        # order alone is too small for the run's spread
    planted_noise: {sd: 0.013, dof: 40, effect: 0.08, source: ...}   # planted - null's spread (and mean:
                        # the dose) on fresh seeds: the control is then called by the z test the sequential
                        # calls use, on it pooled, and its power at the run's seeds is stated from the dose
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scipy import stats as sps

from curate.core.params import bounds
from curate.proxy import stats
from curate.proxy.kinds.base import FIRM_POWER, Evidence, Recipe, RunFiles, Settings, register
from curate.proxy.kinds.null import Null, draw_prefix, draws
from curate.proxy.kinds.raw import Raw
from curate.proxy.statistics import analysis, gate
from curate.proxy.statistics.gate import NoiseSpec
from curate.proxy.statistics.sequential import fixed_seeds

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob

PLANTED_SALT = 0x706C616E74  # "plant": which documents the planted control corrupts
PLANTED_DEFAULT = 0.4
BUILT = {"words": "word-shuffled", "letters": "letter-shuffled within words"}  # each corruption, in words


@dataclass(frozen=True, kw_only=True)
class PlantedSettings:
    """The planted control's ``proxy:`` keys."""

    planted: float = field(default=PLANTED_DEFAULT, metadata=bounds(0, 1, lo_open=True, hi_open=True))
    planted_corruption: Literal["words", "letters"] = "words"  # curate.instrument.shards.CORRUPTIONS
    planted_noise: NoiseSpec | None = None  # its calibrated per-seed spread against the null, and dose

    def built(self) -> str:
        """What the corruption does, in words."""
        return BUILT[self.planted_corruption]


@register
@dataclass
class Planted(Recipe):
    """raw with ``proxy.planted`` of its documents corrupted (``proxy.planted_corruption``), drawn as the
    null is."""

    KIND = "planted"
    NOT_FOR_MIXTURES = "not built for mixtures"
    ROLE = "control"
    ORDER = 2
    GATE = 0
    SETTINGS = PlantedSettings

    def requirement(self, baseline: Recipe) -> str | None:
        return None if isinstance(baseline, Raw) else f"the baseline {baseline.name!r} is not from: raw"

    def data_folder(self, cfg: Settings) -> str:
        """Named by its fraction (and a corruption but the default), so another ``proxy.planted`` never reuses
        shards corrupted at another rate or in another way."""
        own = self.own(cfg)
        how = "" if own.planted_corruption == "words" else f"{own.planted_corruption}-"
        return f"{self.name}@{how}{own.planted:g}"

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        """raw's rows with ``proxy.planted`` of the documents corrupted (after decontamination)."""
        from curate.instrument.shards import ShardJob

        own = self.own(cfg)
        common = {
            **common,
            "corrupt_fraction": own.planted,
            "corrupt_salt": PLANTED_SALT,
            "corrupt_mode": own.planted_corruption,
        }
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
            extra={"draw_from": base, "corrupt": (self.own(cfg).planted, PLANTED_SALT)},
            keys=("docs", "tokens", "corrupted"),
        )

    def train_prefix(self, cfg: Settings, pdir: Path, seed: int) -> Path:
        return draw_prefix(pdir, self.data_folder(cfg), seed, cfg.null_draw)

    def run_folder(self, cfg: Settings) -> str:
        own = self.own(cfg)
        default = (own.planted, own.planted_corruption) == (PLANTED_DEFAULT, "words")
        name = self.name if default else self.data_folder(cfg)
        return f"{name}-draw{cfg.null_draw}" if cfg.null_draw else name

    def report_fields(self, data: dict[str, Any], baseline: str) -> dict[str, Any]:
        return {"draws": data.get("draws", {})}  # drawn as the null is: the same documents at each seed

    def _built(self, own: PlantedSettings, controlled: str | None) -> str:
        return (
            f"the planted control (the null's subsample of raw at {controlled}'s token count, {own.planted:.0%} "
            f"of its documents {own.built()}: worse by construction)"
        )

    def check(self, ev: Evidence) -> dict[str, Any]:
        """Must be called worse than the null (the same documents, uncorrupted; the baseline when no null
        was trained), by the paired interval every call reads: a known effect the run has to see."""
        ref = Null.KIND if Null.KIND in ev.heads else ev.baseline
        iv = analysis.paired(ev.heads[self.name], ev.heads[ref])
        mult = analysis.multiplier_block(ev.base, iv)
        seen = analysis.call(iv) == "worse"
        test: dict[str, Any] = {"method": stats.METHOD}
        written = self.own(ev.settings).planted_noise
        prior = written.noise() if written is not None else None
        if prior is not None:  # the calibrated spread, pooled with the run's: the z test the calls use
            d = ev.heads[self.name][:, -1] - ev.heads[ref][:, -1]
            noise = gate.pooled(d, prior)
            z = gate.z_stat(d, noise.sd)
            seen = z >= float(sps.norm.ppf(0.975))
            test = {
                "z": z,
                "noise": noise.as_dict(),
                "method": "two-sided z test at 5% on planted - null's per-seed spread pooled with the calibrated one",
            }
            if prior.effect is not None:  # the dose measured on fresh seeds: power by design, stated
                test["effect"] = prior.effect
                test["power"] = gate.power_z(prior.effect, noise.sd, len(d))
        own, controlled = self.own(ev.settings), ev.controlled
        fraction, built = own.planted, self._built(own, controlled)
        shares = {
            "shares_with_baseline": (ev.shares.get(self.name) or {}).get("mean"),
            "recipe_shares_with_baseline": (ev.shares.get(controlled or "") or {}).get("mean"),
        }
        against = "the null" if ref != ev.baseline else "raw"
        power = (
            f" (its power at {len(d)} seeds, for the {test['effect']:+.4f} bpb measured on fresh seeds: "
            f"{test['power']:.2f})"
            if "power" in test
            else ""
        )
        return {
            "fraction": fraction,
            "corruption": own.planted_corruption,
            "matched": {"of": controlled, **shares},
            "against": ref,
            "diff_bpb": iv.as_dict(),
            "multiplier": mult,
            "called_worse": seen,
            "test": test,
            "message": (
                f"{built} is called worse than {against} ({analysis.fmt_multiplier(mult)}x): the instrument "
                f"sees a known effect of this size in data that shares with raw what {controlled} shares{power}"
                if seen
                else f"{built} is NOT called worse than {against} ({analysis.fmt_multiplier(mult)}x, CI "
                f"{analysis.fmt_multiplier(mult, 'ci_low')}–{analysis.fmt_multiplier(mult, 'ci_high')}x){power}: "
                + (
                    "a miss a working instrument makes at this power, so the run is inconclusive; add seeds"
                    if self.underpowered({"called_worse": seen, "test": test})
                    else "this run could not see a known effect, so it cannot support a decision; raise the budget "
                    "or the seeds"
                )
            ),
        }

    def failure(self, block: dict[str, Any]) -> str | None:
        if block["called_worse"]:
            return None
        against = "the null" if block.get("against") == Null.KIND else "raw"
        test = block.get("test") or {}
        power = (
            f" (its power at {block['diff_bpb']['n']} seeds, for the {test['effect']:+.4f} bpb measured on fresh "
            f"seeds: {test['power']:.2f})"
            if test.get("power") is not None
            else ""
        )
        what = (
            f"the planted control ({block['fraction']:.0%} of the null's documents "
            f"{BUILT[block.get('corruption', 'words')]}) is not called "
            f"worse than {against}: {analysis.fmt_diff(block['diff_bpb'])}{power}"
        )
        if not self.underpowered(block):
            return f"{what}; this run cannot see a known effect"
        p = float(test["power"])
        firm = seeds_for_power(float(test["effect"]), float((test.get("noise") or {}).get("sd") or 0.0))
        more = f"; about {firm} seeds give it {FIRM_POWER:.0%} power" if firm else ""
        return (
            f"{what}; a working instrument misses it about {1 - p:.0%} of the time at this power, so the run is "
            f"inconclusive, not shown blind{more}"
        )

    def underpowered(self, block: dict[str, Any]) -> bool:
        """A miss at a stated power (from the calibrated dose and spread) below :data:`FIRM_POWER`."""
        power = (block.get("test") or {}).get("power")
        return not block["called_worse"] and power is not None and float(power) < FIRM_POWER

    def warning(self, block: dict[str, Any]) -> str | None:
        return None if block["called_worse"] else str(block["message"])

    def ladder_failure(
        self, points: list[dict[str, Any]], cfg: Settings
    ) -> tuple[str, list[str], str] | None:
        """Checked at every point, as the null is: a point blind to a known effect cannot tell a recipe that
        does not pay from one it cannot see, and decision accuracy measured against a blind reference point
        is as doubtful as its own rankings."""
        blind = [
            q for q in points if self.name in q["recipes"] and q["recipes"][self.name].get("call") != "worse"
        ]
        if not blind:
            return None
        return (
            "planted_not_called_at",
            [q["name"] for q in blind],
            f"the planted control ({self.own(cfg).planted:.0%} of the null's documents {self.own(cfg).built()}, "
            "worse by construction) "
            "is not called worse at "
            + ", ".join(
                f"{q['name']} ({analysis.fmt_multiplier(q['recipes'][self.name].get('multiplier') or {})}x)"
                for q in blind
            )
            + ": that point could not see a known effect, so a recipe it does not call may still matter there, "
            "and rankings at that point (and decision accuracy against it) are doubtful; give it more tokens per "
            "parameter or more seeds",
        )


def seeds_for_power(effect: float, sd: float) -> int | None:
    """The seeds at which the planted control's z test calls a dose ``effect`` on spread ``sd`` with
    :data:`FIRM_POWER` (:func:`curate.proxy.statistics.sequential.fixed_seeds`, the same z test); None
    without a spread or a dose, or past a thousand seeds."""
    if sd <= 0 or not effect:
        return None
    try:
        return fixed_seeds(alpha=0.05, power=FIRM_POWER, effect=abs(effect) / sd)
    except ValueError:
        return None
