"""One verdict from one statistic: paired differences, the multiplier derived from them, controls, power.

The statistic: for recipe ``r`` and the baseline, per seed ``s`` (paired: same initialisation and data
order), ``d_s = H_r,s(T) - H_base,s(T)``, where ``H`` is the mean bpb over the *headline* eval sets at the
budget ``T``. Its mean and t-interval (:func:`curate.proxy.stats.paired_interval`) decide everything
that is called: the ranking of every pair, the verdict sentence, the controls' checks.

The multiplier is a monotone transform of the same difference, so it can never disagree with it:
``m(d) = t_base(B + d) / t_base(B)`` with ``B`` the baseline's mean headline bpb at ``T`` and
``t_base`` the tokens the baseline's mean curve needs to reach a bpb (:func:`curate.proxy.goodput.
tokens_to_reach`: interpolated in log-tokens, or extrapolated with the tail power law, flagged).
``m(0) = 1``; the CI of ``m`` is ``[m(d_hi), m(d_lo)]``; ``m``'s CI excludes 1 exactly when ``d``'s
excludes 0 (up to flat stretches of the baseline's envelope, where ``m`` touches 1).

Power: with ``sd`` the pooled spread of the per-seed differences (every non-baseline recipe at this
point), the minimum detectable difference at ``n`` seeds is ``δ = (t_{.975,n-1} + t_{.8,n-1}) sd/√n``;
the minimum detectable multipliers are ``m(+δ)`` (worse) and ``m(-δ)`` (better).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curate.proxy import stats
from curate.proxy.goodput import PowerLaw, finite_or_none, fit_tail, tokens_to_reach, value_at

LEVEL = 0.95
POWER = 0.8
TABLE_MULTIPLIERS = (0.8, 0.9, 1.1, 1.2, 1.5)


def headline(bpb: dict[str, np.ndarray], sets: list[str]) -> np.ndarray:
    """``(n_seeds, K)``: the mean over the headline eval sets, equal weight."""
    return np.mean(np.stack([np.asarray(bpb[s], dtype=np.float64) for s in sets]), axis=0)


@dataclass
class Baseline:
    """The baseline's mean headline curve and the maps between bpb differences and multipliers."""

    tokens: np.ndarray
    curve: np.ndarray
    law: PowerLaw = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = np.asarray(self.tokens, dtype=np.float64)
        self.curve = np.asarray(self.curve, dtype=np.float64)
        self.law = fit_tail(self.tokens, self.curve)

    @property
    def final(self) -> float:
        return float(self.curve[-1])

    def t_base(self, b: float) -> tuple[float, bool]:
        return tokens_to_reach(self.tokens, self.curve, b, self.law)

    def multiplier(self, d: float) -> tuple[float, bool]:
        """``m(d)`` and whether ``t_base`` was extrapolated beyond the curve."""
        t0, _ = self.t_base(self.final)
        t1, ex = self.t_base(self.final + d)
        return (t1 / t0 if t0 > 0 else math.nan), ex

    def diff_for(self, m: float) -> float:
        """The bpb difference at ``T`` that corresponds to multiplier ``m``: ``b_base(m·T) - b_base(T)``
        (on the curve inside its range, on the tail law anchored at the curve's end beyond it)."""
        big_t = float(self.tokens[-1])
        t = m * big_t
        env = np.minimum.accumulate(self.curve)
        if t <= big_t:
            return value_at(self.tokens, env, t) - float(env[-1])
        return float(self.law(t) - self.law(big_t))  # beyond T: the tail law (its offset cancels)


def paired(h_r: np.ndarray, h_base: np.ndarray) -> stats.Interval:
    """Paired interval of ``H_r - H_base`` at ``T`` (rows = the same seeds, in the same order)."""
    return stats.paired_interval(h_r[:, -1] - h_base[:, -1], LEVEL)


def multiplier_block(base: Baseline, iv: stats.Interval) -> dict[str, Any]:
    m, ex = base.multiplier(iv.value)
    lo = hi = None
    ex_lo = ex_hi = False
    if iv.ci_low is not None and iv.ci_high is not None:
        lo, ex_lo = base.multiplier(iv.ci_high)
        hi, ex_hi = base.multiplier(iv.ci_low)
    return {
        "value": finite_or_none(m),
        "ci_low": finite_or_none(lo) if lo is not None else None,
        "ci_high": finite_or_none(hi) if hi is not None else None,
        "extrapolated": bool(ex or ex_lo or ex_hi),
        "method": f"m(d) = t_base(B + d) / t_base(B) over the {stats.METHOD} of d",
    }


def relative_multiplier(base: Baseline, level: float, iv: stats.Interval) -> dict[str, Any]:
    """A paired difference ``d = H_a - H_b`` as a ratio of multipliers, ``m_a / m_b``: mapped through the
    baseline curve at ``b``'s level ``R`` (its mean headline bpb at T), ``t_base(R + d) / t_base(R)``
    (1 at d = 0, monotone in d), with the interval's bounds mapped the same way."""
    t_r, _ = base.t_base(level)

    def ratio_of(d: float | None) -> float | None:
        if d is None or not (t_r > 0 and math.isfinite(t_r)):
            return None
        t_k, _ = base.t_base(level + d)
        return finite_or_none(t_k / t_r)

    return {
        "value": ratio_of(iv.value),
        "ci_low": ratio_of(iv.ci_high),
        "ci_high": ratio_of(iv.ci_low),
        "method": "t_base(R + d) / t_base(R) over the paired interval of d (R: the other side's bpb at T)",
    }


def call(iv: stats.Interval) -> str:
    """``better`` / ``worse`` (lower / higher bpb than the other side) or ``not_called``."""
    if not iv.excludes(0.0):
        return "not_called"
    return "better" if iv.value < 0 else "worse"


def ranking(heads: dict[str, np.ndarray]) -> dict[str, Any]:
    """Order recipes by mean headline bpb at ``T``; a pair is called where its paired interval
    excludes 0; tiers start where a recipe is called better than every member of the current tier."""
    final = {r: float(h[:, -1].mean()) for r, h in heads.items()}
    order = sorted(final, key=lambda r: (final[r], r))
    pairs, called = [], {}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            iv = stats.paired_interval(heads[a][:, -1] - heads[b][:, -1], LEVEL)
            c = call(iv)
            called[(a, b)] = c != "not_called"
            pairs.append(
                {
                    "a": a,
                    "b": b,
                    "better": (a if c == "better" else b) if c != "not_called" else None,
                    "separated": c != "not_called",
                    "diff_bpb": iv.as_dict(),
                }
            )
    tiers: list[list[str]] = []
    for r in order:
        if tiers and not all(called.get((m, r), False) for m in tiers[-1]):
            tiers[-1].append(r)
        else:
            tiers.append([r])
    return {
        "metric": "mean headline eval bpb at T (lower is better); pairs called by "
        + stats.METHOD
        + " excluding 0",
        "order": order,
        "tiers": tiers,
        "pairs": pairs,
    }


def power(base: Baseline, diffs: list[np.ndarray], n_seeds: int) -> dict[str, Any]:
    """The minimum detectable effect at this point and the seeds a given multiplier would need."""
    sd, dof = stats.pooled_sd(diffs)
    out: dict[str, Any] = {
        "level": LEVEL,
        "power": POWER,
        "n_seeds": n_seeds,
        "sd_diff_bpb": sd,
        "sd_dof": dof,
        "method": "two-sided paired t-test: MDE = (t_{.975,n-1} + t_{.8,n-1}) * sd / sqrt(n), sd pooled "
        "over every non-baseline recipe's per-seed differences at this point",
    }
    if sd is None:
        out.update({"mde_bpb": None, "mde_multiplier": {"worse": None, "better": None}, "seeds_needed": []})
        out["note"] = "one seed: the seed-to-seed spread is unknown, so nothing can be called or powered"
        return out
    delta = stats.mde(sd, n_seeds, level=LEVEL, power=POWER)
    worse, _ = base.multiplier(delta)
    better, ex = base.multiplier(-delta)
    rows = []
    for m in TABLE_MULTIPLIERS:
        d = base.diff_for(m)
        rows.append(
            {
                "multiplier": m,
                "diff_bpb": d,
                "seeds": stats.seeds_needed(d, sd, level=LEVEL, power=POWER),
            }
        )
    out.update(
        {
            "mde_bpb": delta,
            "mde_multiplier": {
                "worse": finite_or_none(worse),
                "better": finite_or_none(better),
                "extrapolated": bool(ex),
            },
            "seeds_needed": rows,
        }
    )
    return out


def verdict_sentence(
    recipe: str, baseline: str, iv: stats.Interval, mult: dict[str, Any], pw: dict[str, Any], sets: list[str]
) -> str:
    """The one verdict, from the paired interval ``iv`` only (its multiplier is the same statistic)."""

    def r2(x: Any) -> str:
        return "—" if x is None else f"{x:.2f}"

    c = call(iv)
    target = ", ".join(sets)
    if iv.n < 2:
        return (
            f"{recipe} vs {baseline} on the targets ({target}): {r2(mult['value'])}x per training token from one "
            "seed; with one seed no difference can be called (run at least 2, see the power table)"
        )
    m_ci = f"{r2(mult['ci_low'])}–{r2(mult['ci_high'])}x"
    d = f"{iv.value:+.4f} bpb [{iv.ci_low:+.4f}, {iv.ci_high:+.4f}]"
    if c == "better":
        head = f"{recipe} beats {baseline} on the targets ({target}): {r2(mult['value'])}x tokens-to-target (CI {m_ci}; paired difference {d}, {iv.n} seeds)"
    elif c == "worse":
        head = f"{recipe} is worse than {baseline} on the targets ({target}): {r2(mult['value'])}x tokens-to-target (CI {m_ci}; paired difference {d}, {iv.n} seeds)"
    else:
        head = f"no effect of {recipe} vs {baseline} is detected on the targets ({target}): the multiplier is within {m_ci} (point {r2(mult['value'])}x; paired difference {d}, {iv.n} seeds)"
    mm = pw.get("mde_multiplier") or {}
    if mm.get("worse") is not None and mm.get("better") is not None:
        head += (
            f"; at this budget the run detects (80% power) only effects beyond {r2(mm['worse'])}x or "
            f"{r2(mm['better'])}x"
        )
    return head
