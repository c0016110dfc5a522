"""The controls' block of ``goodput.json`` (``controls``): the null (a random subsample of raw: must
contain 1), the planted (raw with a share of documents word-shuffled: must be called worse) and kept vs
rejected, each read through the paired statistic (:mod:`curate.proxy.analysis`); and the ladder's warnings
where the null separates from raw, or the planted control is not called worse, at another point."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from curate.proxy import analysis


def controls_block(
    base: analysis.Baseline,
    heads: dict[str, np.ndarray],
    baseline: str,
    controlled: str | None,
    skipped: dict[str, str],
    epochs: dict[str, float],
    planted: float = 0.0,
) -> dict[str, Any]:
    """``controls``: each control's paired interval against the baseline (kept vs rejected: the
    controlled recipe against the rejected rows), its multiplier and the sentence the report shows."""
    out: dict[str, Any] = {"for": controlled, "skipped": skipped}
    if "null" in heads:
        iv = analysis.paired(heads["null"], heads[baseline])
        mult = analysis.multiplier_block(base, iv)
        ok = not iv.excludes(0.0)
        msg = (
            "the null control (a random subsample of raw at the controlled recipe's token count) is "
            "indistinguishable from raw, as it must be: the instrument shows no bias at this budget"
        )
        if not ok:
            msg = (
                f"the null control differs from raw ({analysis.fmt_multiplier(mult)}x, CI "
                f"{analysis.fmt_multiplier(mult, 'ci_low')}–{analysis.fmt_multiplier(mult, 'ci_high')}x) "
                "though it is the same distribution: the instrument is biased at this budget. Likely causes: "
                f"repetition (null is seen {epochs.get('null', math.nan):.2f} epochs within T, raw "
                f"{epochs.get(baseline, math.nan):.2f}), the tokenizer (when trained on raw), or a small eval set. "
                "Read every multiplier of this run relative to the null's, or raise the budget/seeds."
            )
        out["null"] = {
            "diff_bpb": iv.as_dict(),
            "multiplier": mult,
            "contains_1": ok,
            "epochs_at_T": epochs.get("null"),
            "message": msg,
        }
    if "planted" in heads:
        iv = analysis.paired(heads["planted"], heads[baseline])
        mult = analysis.multiplier_block(base, iv)
        seen = analysis.call(iv) == "worse"
        out["planted"] = {
            "fraction": planted,
            "diff_bpb": iv.as_dict(),
            "multiplier": mult,
            "called_worse": seen,
            "message": (
                f"the planted control ({planted:.0%} of raw's documents word-shuffled, worse by construction) is "
                f"called worse than raw ({analysis.fmt_multiplier(mult)}x): the instrument sees a known effect of "
                "this size"
                if seen
                else f"the planted control ({planted:.0%} of raw's documents word-shuffled, worse by construction) "
                f"is NOT called worse than raw ({analysis.fmt_multiplier(mult)}x, CI "
                f"{analysis.fmt_multiplier(mult, 'ci_low')}–{analysis.fmt_multiplier(mult, 'ci_high')}x): this run "
                "could not see a known effect, so a recipe it does not call may still matter; raise the budget or "
                "the seeds"
            ),
        }
    if "rejected" in heads and controlled in heads:
        iv = analysis.paired(heads[controlled], heads["rejected"])
        ratio = analysis.relative_multiplier(base, float(heads["rejected"][:, -1].mean()), iv)
        ratio["method"] = (
            "t_base(R + d) / t_base(R) over the paired interval of d = kept - rejected (R: rejected's bpb)"
        )
        c = analysis.call(iv)
        out["rejected"] = {
            "diff_bpb_kept_minus_rejected": iv.as_dict(),
            "call": c,
            "m_kept_over_m_rejected": ratio,
            "epochs_at_T": epochs.get("rejected"),
            "message": {
                "better": f"the kept data ({controlled}) teaches more per token than the rejected rows: the filters carry learning signal for these targets",
                "worse": f"the rejected rows teach more per token than the kept data ({controlled}): the filters remove signal these targets need",
                "not_called": "kept and rejected rows are not separated at this budget: no evidence either way that the filters carry signal",
            }[c],
        }
    return out


def ladder_null_warning(points: list[dict[str, Any]]) -> tuple[list[str], str] | None:
    """The ladder points (besides the main one, whose null is in ``controls``) where the null control
    separates from raw, and the warning that says so; ``None`` when it separates nowhere. The null is
    checked at every point: a biased instrument at the reference point makes decision accuracy as doubtful
    as a biased main point makes the verdict."""
    biased = [q for q in points if q["recipes"].get("null", {}).get("call") not in (None, "not_called")]
    if not biased:
        return None
    return [q["name"] for q in biased], (
        "the null control (a random subsample of raw) separates from raw at "
        + ", ".join(
            f"{q['name']} ({analysis.fmt_multiplier(q['recipes']['null']['multiplier'])}x)" for q in biased
        )
        + ": the seed-to-seed interval there misses variance a random subsample shows (which documents were "
        "drawn, the tokenizer), so rankings at that point, and decision accuracy against it, are doubtful"
    )


def ladder_planted_warning(points: list[dict[str, Any]], fraction: float) -> tuple[list[str], str] | None:
    """The ladder points (besides the main one, whose planted control is in ``controls``) where the planted
    control is not called worse than raw, and the warning that says so; ``None`` when it is called at every
    point that trains it. The positive control is checked at every point, as the null is: a point blind to
    a known effect cannot tell a recipe that does not pay from one it cannot see, and decision accuracy
    measured against a blind reference point is as doubtful as its own rankings."""
    blind = [
        q for q in points if "planted" in q["recipes"] and q["recipes"]["planted"].get("call") != "worse"
    ]
    if not blind:
        return None
    return [q["name"] for q in blind], (
        f"the planted control ({fraction:.0%} of raw's documents word-shuffled, worse by construction) is not "
        "called worse at "
        + ", ".join(
            f"{q['name']} ({analysis.fmt_multiplier(q['recipes']['planted'].get('multiplier') or {})}x)"
            for q in blind
        )
        + ": that point could not see a known effect, so a recipe it does not call may still matter there, "
        "and rankings at that point (and decision accuracy against it) are doubtful; give it more tokens per "
        "parameter or more seeds"
    )
