"""The ``null`` control: a random subsample of the baseline (raw) at the controlled recipe's token count,
one document draw per training seed. It is raw's own distribution, so it must land at 1x: a null that
separates from raw says the instrument is biased at this budget."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.proxy.kinds.base import Evidence, Recipe, Settings, register
from curate.proxy.kinds.raw import Raw
from curate.proxy.statistics import analysis, gate

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
    GATE = 1

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

    def check(self, ev: Evidence) -> dict[str, Any]:
        """Must be shown equivalent to raw: the 90% interval of null - raw (two one-sided tests at 5%), on
        the pair's spread pooled with the calibrated noise (``proxy.noise``; else with the run's other
        pairs), inside +-``proxy.null_margin`` (default: the margin an unbiased null passes 97.5% of the
        time at these seeds). A null that separates from raw says the instrument is biased; one that is
        merely not shown inside the margin says this run cannot rule a bias of that size out."""
        diffs = ev.heads[self.name][:, -1] - ev.heads[ev.baseline][:, -1]
        iv = analysis.paired(ev.heads[self.name], ev.heads[ev.baseline])
        mult = analysis.multiplier_block(ev.base, iv)
        prior = ev.settings.noise or _run_noise(ev, exclude=self.name)
        n = len(diffs)
        margin = ev.settings.null_margin or (
            gate.supported_margin(prior.sd, n, prior.dof + n - 1) if prior and n > 0 else math.inf
        )
        eq = gate.tost(diffs, margin, prior=prior)
        separates = iv.excludes(0.0)
        lo, side_lo = ev.base.multiplier(-margin)
        hi, side_hi = ev.base.multiplier(margin)
        mark = {None: None, "above": ">", "below": "<"}
        equivalence = {
            **eq.as_dict(),
            "margin_multiplier": {
                "better": lo,
                "worse": hi,
                "bounds": {"better": mark[side_lo], "worse": mark[side_hi]},
            },
            "margin_source": "proxy.null_margin"
            if ev.settings.null_margin
            else "what the noise supports at 97.5%",
        }
        if eq.equivalent:
            msg = (
                f"the null control (a random subsample of raw at the controlled recipe's token count) is within "
                f"+-{margin:.4f} bpb of raw (90% CI {eq.ci_low:+.4f} to {eq.ci_high:+.4f}), as it must be: this "
                f"run rules out an instrument bias of that size"
            )
        elif separates:
            msg = (
                f"the null control differs from raw ({analysis.fmt_multiplier(mult)}x, CI "
                f"{analysis.fmt_multiplier(mult, 'ci_low')}–{analysis.fmt_multiplier(mult, 'ci_high')}x) "
                "though it is the same distribution: the instrument is biased at this budget. Likely causes: "
                f"repetition (null is seen {ev.epochs.get(self.name, math.nan):.2f} epochs within T, raw "
                f"{ev.epochs.get(ev.baseline, math.nan):.2f}), the tokenizer (when trained on raw), or a small "
                "eval set. This run cannot support a decision; raise the budget or the seeds."
            )
        else:
            msg = (
                f"the null control is not shown within +-{margin:.4f} bpb of raw (90% CI {eq.ci_low:+.4f} to "
                f"{eq.ci_high:+.4f}): this run cannot rule out an instrument bias of that size, so it cannot "
                "support a decision; add seeds"
            )
        return {
            "diff_bpb": iv.as_dict(),
            "multiplier": mult,
            "contains_1": not separates,
            "equivalence": equivalence,
            "passed": eq.equivalent,
            "epochs_at_T": ev.epochs.get(self.name),
            "message": msg,
        }

    def failure(self, block: dict[str, Any]) -> str | None:
        if block.get("passed", block["contains_1"]):
            return None
        eq = block.get("equivalence")
        if not block["contains_1"] or eq is None:
            return (
                f"the null control separates from raw: {analysis.fmt_diff(block['diff_bpb'])}, though it is raw's "
                "own distribution; the instrument is biased at this budget"
            )
        return (
            f"the null control is not shown within +-{eq['margin']:.4f} bpb of raw (90% CI {eq['ci_low']:+.4f} to "
            f"{eq['ci_high']:+.4f}): this run cannot rule out an instrument bias of that size"
        )

    def ladder_failure(
        self, points: list[dict[str, Any]], cfg: Settings
    ) -> tuple[str, list[str], str] | None:
        """The null is checked at every point: a biased instrument at the reference point makes decision
        accuracy as doubtful as a biased main point makes the verdict."""
        biased = [
            q for q in points if q["recipes"].get(self.name, {}).get("call") not in (None, "not_called")
        ]
        if not biased:
            return None
        return (
            "null_separated_at",
            [q["name"] for q in biased],
            "the null control (a random subsample of raw) separates from raw at "
            + ", ".join(
                f"{q['name']} ({analysis.fmt_multiplier(q['recipes'][self.name]['multiplier'])}x)"
                for q in biased
            )
            + ": the seed-to-seed interval there misses variance a random subsample shows (which documents were "
            "drawn, the tokenizer), so rankings at that point, and decision accuracy against it, are doubtful",
        )


def _run_noise(ev: Evidence, *, exclude: str) -> gate.Noise | None:
    """The per-seed spread of the run's pairs with the baseline (every recipe and control but
    ``exclude``), pooled by degrees of freedom: the noise a null is judged on when no calibrated noise is
    given. None with one seed."""
    ss = dof = 0.0
    for r, h in ev.heads.items():
        if r in (ev.baseline, exclude):
            continue
        d = h[:, -1] - ev.heads[ev.baseline][:, -1]
        if len(d) > 1:
            ss += float(((d - d.mean()) ** 2).sum())
            dof += len(d) - 1
    if not dof:
        return None
    return gate.Noise(math.sqrt(ss / dof), int(dof), "the run's other pairs with the baseline, pooled")
