"""What repeated data is worth: Muennighoff et al.'s fit, and a data-limited comparison read off raw's
measured curve of fresh data.

* :func:`muennighoff_value`: the effective fresh tokens per trained token of ``U`` unique tokens trained
  ``e`` epochs (``e`` = ``T / U``), ``(1 + R* (1 - exp(-(e - 1) / R*))) / e`` with ``R* = 15.4``
  (Muennighoff et al. 2023, "Scaling Data-Constrained Language Models"): 1 within an epoch, 0.93 at 4
  epochs, 0.83 at 8, 0.66 at 16.
* :func:`ratio_on_curve`: two bpb levels as a ratio of the fresh raw tokens each is worth,
  ``t_raw(R + d) / t_raw(R)`` on raw's finished (cooled-down) curve, never extrapolated: beyond the curve's
  measured budgets it is a bound (``>`` or ``<``), and where ``R`` itself leaves the curve nothing is read.
"""

from __future__ import annotations

import math
from typing import Any

from curate.proxy import stats
from curate.proxy.statistics.descriptive import finite_or_none

R_STAR = 15.4  # Muennighoff et al. 2023: the decay constant of repeated tokens' value (repetitions)
MUENNIGHOFF = (
    "Muennighoff et al. 2023 (R* = 15.4): (1 + R*(1 - exp(-(e - 1)/R*))) / e fresh tokens per trained token"
)


def muennighoff_value(epochs: float) -> float:
    """Fresh tokens per trained token of data trained ``epochs`` times (1 within an epoch)."""
    e = max(float(epochs), 1.0)
    return (1.0 + R_STAR * (1.0 - math.exp(-(e - 1.0) / R_STAR))) / e


def ratio_on_curve(base: Any, level: float, iv: stats.Interval) -> dict[str, Any]:
    """``t_raw(level + d) / t_raw(level)`` for the paired difference ``iv`` (``d = a - b``, ``level``:
    ``b``'s mean bpb at T) on the measured curve of :class:`curate.proxy.statistics.analysis.Baseline`
    ``base``: how many times the fresh raw tokens ``b`` is worth ``a`` is worth. The interval maps ``iv``'s
    ends (a lower bpb is worth more tokens). Beyond the measured budgets, the curve's end with its side in
    ``bounds``; ``None`` throughout where ``level`` itself is off the curve."""
    t_b, side_b = base.t_base(level)
    out: dict[str, Any] = {
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "bounds": {"value": None, "ci_low": None, "ci_high": None},
        "method": "t_raw(R + d) / t_raw(R) on raw's finished runs of fresh data (R: the repeated raw's bpb at T, "
        "d: the paired difference and its interval's ends), interpolated in log-tokens; beyond the measured "
        "budgets a bound, never extrapolated",
    }
    if side_b is not None:
        out["off_curve"] = (
            f"raw repeated ({level:.4f} bpb) lies {'below' if side_b == 'below' else 'above'} raw's measured "
            "curve of fresh data, so no ratio is read off it"
        )
        return out
    mark = {None: None, "above": ">", "below": "<"}
    for key, d in (("value", iv.value), ("ci_low", iv.ci_high), ("ci_high", iv.ci_low)):
        if d is None:
            continue
        t, side = base.t_base(level + d)
        out[key] = finite_or_none(t / t_b)
        out["bounds"][key] = mark[side]
    return out
