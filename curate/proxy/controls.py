"""The controls' block of ``goodput.json`` (``controls``): the null (a random subsample of raw at the
controlled recipe's token count: must contain 1), the planted (the null's subsample with a share of its
documents word-shuffled: must be called worse) and kept vs rejected, each read through the paired statistic
(:mod:`curate.proxy.analysis`); the ``decision`` they support; and the ladder's warnings where the null
separates from raw, or the planted control is not called worse, at another point."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from curate.proxy import analysis


def _ci(iv: Any) -> str:
    """``+0.0123 bpb (CI +0.0050 to +0.0196)``: a paired difference and its interval, for a reason."""
    if iv.ci_low is None or iv.ci_high is None:
        return f"{iv.value:+.4f} bpb (no CI: one seed)"
    return f"{iv.value:+.4f} bpb (CI {iv.ci_low:+.4f} to {iv.ci_high:+.4f})"


def planted_built(planted: float, controlled: str | None) -> str:
    """How the planted control was built, as its messages say it."""
    return (
        f"the planted control (the null's subsample of raw at {controlled}'s token count, {planted:.0%} of "
        "its documents word-shuffled: worse by construction)"
    )


def decision(out: dict[str, Any], null_iv: Any = None, planted_iv: Any = None) -> dict[str, Any]:
    """``controls["decision"]``: whether the controls let this run support a decision. Not supported when
    the planted control was trained and is not called worse than raw (the run cannot see a known effect)
    or the null was trained and separates from raw (the instrument is biased). With no control trained it
    is supported, with a ``note`` saying nothing checked the instrument (nothing failed, but nothing was
    checked either; ``reasons`` stays empty, since it lists failures only)."""
    reasons = []
    if "planted" in out and not out["planted"]["called_worse"]:
        reasons.append(
            f"the planted control ({out['planted']['fraction']:.0%} of the null's documents word-shuffled) is "
            f"not called worse than raw: {_ci(planted_iv)}; this run cannot see a known effect"
        )
    if "null" in out and not out["null"]["contains_1"]:
        reasons.append(
            f"the null control separates from raw: {_ci(null_iv)}, though it is raw's own distribution; "
            "the instrument is biased at this budget"
        )
    d: dict[str, Any] = {"supported": not reasons, "reasons": reasons}
    if "null" not in out and "planted" not in out:
        d["note"] = "no null or planted control was trained: nothing checked the instrument at this budget"
    return d


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
    controlled recipe against the rejected rows), its multiplier and the sentence the report shows, and
    the ``decision`` they support (:func:`decision`)."""
    out: dict[str, Any] = {"for": controlled, "skipped": skipped}
    null_iv = planted_iv = None
    if "null" in heads:
        null_iv = analysis.paired(heads["null"], heads[baseline])
        out["null"] = _null(base, null_iv, baseline, epochs)
    if "planted" in heads:
        planted_iv = analysis.paired(heads["planted"], heads[baseline])
        out["planted"] = _planted(base, planted_iv, planted, controlled)
    if "rejected" in heads and controlled in heads:
        out["rejected"] = _rejected(base, heads, controlled, epochs)
    out["decision"] = decision(out, null_iv, planted_iv)
    return out


def _null(base: analysis.Baseline, iv: Any, baseline: str, epochs: dict[str, float]) -> dict[str, Any]:
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
            "This run cannot support a decision; raise the budget or the seeds."
        )
    return {
        "diff_bpb": iv.as_dict(),
        "multiplier": mult,
        "contains_1": ok,
        "epochs_at_T": epochs.get("null"),
        "message": msg,
    }


def _planted(base: analysis.Baseline, iv: Any, planted: float, controlled: str | None) -> dict[str, Any]:
    mult = analysis.multiplier_block(base, iv)
    seen = analysis.call(iv) == "worse"
    built = planted_built(planted, controlled)
    return {
        "fraction": planted,
        "matched": {"of": controlled},  # + shares_with_baseline: measure.py, from the runs' streams
        "diff_bpb": iv.as_dict(),
        "multiplier": mult,
        "called_worse": seen,
        "message": (
            f"{built} is called worse than raw ({analysis.fmt_multiplier(mult)}x): the instrument sees a "
            f"known effect of this size in data that shares with raw what {controlled} shares"
            if seen
            else f"{built} is NOT called worse than raw ({analysis.fmt_multiplier(mult)}x, CI "
            f"{analysis.fmt_multiplier(mult, 'ci_low')}–{analysis.fmt_multiplier(mult, 'ci_high')}x): this run "
            "could not see a known effect, so it cannot support a decision; raise the budget or the seeds"
        ),
    }


def _rejected(
    base: analysis.Baseline, heads: dict[str, np.ndarray], controlled: str, epochs: dict[str, float]
) -> dict[str, Any]:
    iv = analysis.paired(heads[controlled], heads["rejected"])
    ratio = analysis.relative_multiplier(base, float(heads["rejected"][:, -1].mean()), iv)
    ratio["method"] = (
        "t_base(R + d) / t_base(R) over the paired interval of d = kept - rejected (R: rejected's bpb)"
    )
    c = analysis.call(iv)
    return {
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


def planted_matched(controls: dict[str, Any], shares: dict[str, dict[str, Any]]) -> None:
    """Fill ``controls.planted.matched`` with the stream shares (``stream_sharing``'s means): the
    planted control's with the baseline, beside the controlled recipe's it was matched to."""
    if "planted" not in controls:
        return
    m = controls["planted"]["matched"]
    m["shares_with_baseline"] = (shares.get("planted") or {}).get("mean")
    m["recipe_shares_with_baseline"] = (shares.get(m["of"]) or {}).get("mean")


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
        f"the planted control ({fraction:.0%} of the null's documents word-shuffled, worse by construction) is "
        "not called worse at "
        + ", ".join(
            f"{q['name']} ({analysis.fmt_multiplier(q['recipes']['planted'].get('multiplier') or {})}x)"
            for q in blind
        )
        + ": that point could not see a known effect, so a recipe it does not call may still matter there, "
        "and rankings at that point (and decision accuracy against it) are doubtful; give it more tokens per "
        "parameter or more seeds"
    )
