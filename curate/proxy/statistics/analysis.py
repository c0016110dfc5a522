"""One verdict from one statistic: paired differences, the multiplier derived from them, controls, power.

The statistic: for recipe ``r`` and the baseline, per seed ``s`` (paired: same initialisation and data
order), ``d_s = H_r,s(T) - H_base,s(T)``, where ``H`` is the mean bpb over the *headline* eval sets at the
budget ``T``. Its mean and t-interval (:func:`curate.proxy.stats.paired_interval`) decide everything
that is called: the ranking of every pair, the verdict sentence, the controls' checks.

The multiplier is a monotone transform of the same difference, so it never disagrees with it:
``m(d) = t_raw(B + d) / T`` with ``B`` the baseline's mean headline bpb at ``T`` and ``t_raw`` read from the
baseline's *finished* runs at several budgets (:class:`Baseline`: measured, interpolated in log-tokens,
never extrapolated; beyond the measured range a bound). ``m(0) = 1``; the CI's ends map ``d``'s through the
mean curve and every seed's own curve, the widest, so the curve's uncertainty is in it and it still
excludes 1 exactly when ``d``'s excludes 0 (up to flat stretches of the envelope, where ``m`` touches 1;
a seed whose curve does not fall through ``T`` is read relative to the budget where it first reached its
own ``B``, so ``m(0) = 1`` on every curve).

Statistics (:class:`Pairs`): every pair (a recipe or a control against the baseline, any two recipes of
the ranking) is called with its *own* paired t-interval, df = n - 1; nothing is pooled across pairs. Recipes
share different fractions of the baseline's stream (measured: curated ~41-54%, toward_target ~10%), so
their paired differences differ in noise (six-seed sds 0.014 and 0.030 at lr 1e-3); a spread pooled over
them covered the noisier pair's difference in 90.6% of 10,000 simulated draws at 3 seeds
(tests/proxy/test_coverage.py). The
family of non-control recipes against the baseline is called after Holm's step-down adjustment
(:func:`comparisons`). Power, per pair: the minimum detectable difference at ``n`` seeds is
``δ = (t_{.975,n-1} + t_{.8,n-1}) sd/√n`` with the pair's own ``sd``; the minimum detectable multipliers
are ``m(+δ)`` (worse) and ``m(-δ)`` (better).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from curate.goodput.calls import (
    fmt_multiplier,
)  # a multiplier for text (>2.00: a bound), as every reader writes it
from curate.proxy import stats
from curate.proxy.statistics.descriptive import finite_or_none, tokens_to_reach, value_at
from curate.proxy.statistics.gate import Noise, pooled

LEVEL = 0.95
POWER = 0.8
ALPHA = 0.05  # the Holm family's level: 1 - LEVEL
TABLE_MULTIPLIERS = (0.8, 0.9, 1.1, 1.2, 1.5)


def headline(bpb: dict[str, np.ndarray], sets: list[str]) -> np.ndarray:
    """``(n_seeds, K)``: the mean over the headline eval sets, equal weight."""
    return np.mean(np.stack([np.asarray(bpb[s], dtype=np.float64) for s in sets]), axis=0)


def _t_on(budgets: np.ndarray, curve: np.ndarray, b: float) -> tuple[float, str | None]:
    """Tokens the finished curve ``(budgets, curve)`` needs to reach bpb ``b``: interpolated linearly in
    log-tokens on its running-minimum envelope; outside the measured range, the range's end and which
    side (``"below"``: worse than the smallest budget reached, ``"above"``: better than the largest)."""
    env = np.minimum.accumulate(np.asarray(curve, dtype=np.float64))
    if b > env[0]:
        return float(budgets[0]), "below"
    if b < env[-1]:
        return float(budgets[-1]), "above"
    t, _ = tokens_to_reach(budgets, env, b)
    return t, None


@dataclass
class Baseline:
    """The baseline's *measured* tokens-to-bpb curve: its headline bpb when trained to a finished model
    (cooled down to zero) at each budget of ``budgets``, per seed (``curves``: seeds x budgets), and the
    maps between bpb differences at ``T`` and multipliers. Nothing is extrapolated: a multiplier beyond the
    measured range ``[budgets[0], budgets[-1]] / T`` is that range's end, flagged as a bound."""

    budgets: np.ndarray
    curves: np.ndarray
    budget: float

    def __post_init__(self) -> None:
        self.budgets = np.asarray(self.budgets, dtype=np.float64)
        self.curves = np.atleast_2d(np.asarray(self.curves, dtype=np.float64))
        if self.budget not in self.budgets:
            raise ValueError(
                f"the main budget {self.budget} is not among the measured budgets {self.budgets}"
            )
        self.curve = self.curves.mean(axis=0)
        self._at_t = int(np.flatnonzero(self.budgets == self.budget)[0])

    @property
    def final(self) -> float:
        return float(self.curve[self._at_t])

    @property
    def range(self) -> tuple[float, float]:
        return float(self.budgets[0] / self.budget), float(self.budgets[-1] / self.budget)

    def t_base(self, b: float) -> tuple[float, str | None]:
        return _t_on(self.budgets, self.curve, b)

    def multiplier(self, d: float, curve: np.ndarray | None = None) -> tuple[float, str | None]:
        """``m(d) = t_base(B + d) / t_base(B)`` on the mean curve (or on one seed's ``curve``, at its own
        ``B``), and the bound's side when it leaves the measured range. ``t_base(B)`` is ``T`` on a curve that
        falls through ``T``; on one that does not (a finished run at ``T`` no better than a shorter one,
        measured: the demo's seed 5 at proxy_1m@294,912), dividing by it keeps ``m(0) = 1``, so a map
        through that curve cannot move an interval's end across 1 (it read ``[0.31, 1.00]`` for raw
        against itself). A value beyond the measured range is that range's end and its side."""
        c = self.curve if curve is None else np.asarray(curve, dtype=np.float64)
        b = float(c[self._at_t])
        t, side = _t_on(self.budgets, c, b + d)
        if side:
            return t / self.budget, side
        m = t / _t_on(self.budgets, c, b)[0]
        lo, hi = self.range
        if m > hi:
            return hi, "above"
        if m < lo:
            return lo, "below"
        return m, None

    def diff_for(self, m: float) -> float | None:
        """The bpb difference at ``T`` that multiplier ``m`` means on the mean measured curve:
        ``b_base(m·T) - b_base(T)``; ``None`` outside the measured range."""
        lo, hi = self.range
        if not lo <= m <= hi:
            return None
        env = np.minimum.accumulate(self.curve)
        return value_at(self.budgets, env, m * self.budget) - float(env[self._at_t])


def _map_bound(base: Baseline, d: float, pick: Any) -> tuple[float, str | None]:
    """An interval bound ``d`` as a multiplier through the mean curve and through every seed's own curve,
    the most extreme (``pick``: min or max): the curve's own uncertainty widens the interval, and since
    each curve maps 0 to exactly 1, the interval still excludes 1 exactly when ``d``'s excludes 0."""
    maps = [base.multiplier(d)] + [base.multiplier(d, c) for c in base.curves]
    return pick(maps, key=lambda x: x[0])


class Pairs:
    """The headline bpb at ``T`` of every recipe of one point (``heads``: seeds x budgets each, the last
    column at ``T``) and each pair's own paired t-interval of the per-seed differences (df = n - 1): the
    interval every call reads. ``members``: the baseline and the non-control recipes (the Holm family's
    recipes and the spread of the signal); ``baseline``: the side every recipe is compared with."""

    def __init__(self, heads: dict[str, np.ndarray], members: list[str], baseline: str | None = None) -> None:
        self.heads, self.members, self.baseline = heads, [m for m in members if m in heads], baseline

    def diffs(self, a: str, b: str) -> np.ndarray:
        return (
            np.asarray(self.heads[a], dtype=np.float64)[:, -1]
            - np.asarray(self.heads[b], dtype=np.float64)[:, -1]
        )

    def interval(self, a: str, b: str) -> stats.Interval:
        return stats.paired_interval(self.diffs(a, b), LEVEL)


def paired(h_r: np.ndarray, h_base: np.ndarray) -> stats.Interval:
    """Paired interval of ``H_r - H_base`` at ``T`` (rows = the same seeds, in the same order)."""
    return stats.paired_interval(h_r[:, -1] - h_base[:, -1], LEVEL)


def multiplier_block(base: Baseline, iv: stats.Interval) -> dict[str, Any]:
    """The paired difference ``iv`` as a multiplier on the baseline's measured curve. A value or bound
    beyond the measured range is that range's end with its side in ``bounds`` (``>`` / ``<``): a bound,
    never a number."""
    m, side = base.multiplier(iv.value)
    lo = hi = None
    side_lo = side_hi = None
    if iv.ci_low is not None and iv.ci_high is not None:
        lo, side_lo = _map_bound(base, iv.ci_high, min)
        hi, side_hi = _map_bound(base, iv.ci_low, max)
    mark = {None: None, "above": ">", "below": "<"}
    return {
        "value": finite_or_none(m),
        "ci_low": finite_or_none(lo) if lo is not None else None,
        "ci_high": finite_or_none(hi) if hi is not None else None,
        "bounds": {"value": mark[side], "ci_low": mark[side_lo], "ci_high": mark[side_hi]},
        "range": list(base.range),
        "extrapolated": False,
        "method": f"m(d) = t_raw(B + d) / T on raw's finished (cooled-down) runs at {_budgets(base)} tokens, "
        f"interpolated in log-tokens, over the {stats.METHOD} of d; the interval's ends mapped through the mean "
        "curve and every seed's own curve, the widest; beyond the measured range a bound",
    }


def _budgets(base: Baseline) -> str:
    return ", ".join(f"{int(b):,}" for b in base.budgets)


def fmt_diff(d: dict[str, Any]) -> str:
    """``+0.0123 bpb (CI +0.0050 to +0.0196)``: a paired difference (an :class:`~curate.proxy.stats.Interval`
    as a dict) and its interval, for a sentence."""
    if d.get("ci_low") is None or d.get("ci_high") is None:
        return f"{d['value']:+.4f} bpb (no CI: one seed)"
    return f"{d['value']:+.4f} bpb (CI {d['ci_low']:+.4f} to {d['ci_high']:+.4f})"


def relative_multiplier(base: Baseline, level: float, iv: stats.Interval) -> dict[str, Any]:
    """A paired difference ``d = H_a - H_b`` as a ratio of multipliers, ``m_a / m_b``: mapped through the
    baseline's measured curve at ``b``'s level ``R`` (its mean headline bpb at T), ``t_base(R + d) /
    t_base(R)`` (1 at d = 0, monotone in d), with the interval's bounds mapped the same way; ``None``
    where ``R`` or ``R + d`` leaves the measured range (no extrapolation)."""
    t_r, side_r = base.t_base(level)

    def ratio_of(d: float | None) -> float | None:
        if d is None or side_r is not None:
            return None
        t_k, side = base.t_base(level + d)
        return None if side is not None else finite_or_none(t_k / t_r)

    return {
        "value": ratio_of(iv.value),
        "ci_low": ratio_of(iv.ci_high),
        "ci_high": ratio_of(iv.ci_low),
        "method": "t_raw(R + d) / t_raw(R) on raw's measured curve over the paired interval of d (R: the other "
        "side's bpb at T); null where it leaves the measured range",
    }


def call(iv: stats.Interval) -> str:
    """``better`` / ``worse`` (lower / higher bpb than the other side) or ``not_called``."""
    if not iv.excludes(0.0):
        return "not_called"
    return "better" if iv.value < 0 else "worse"


def ranking(heads: dict[str, np.ndarray], pairs: Pairs | None = None) -> dict[str, Any]:
    """Order recipes by mean headline bpb at ``T``; a pair is called where its own paired interval
    excludes 0 (unadjusted: the ranking describes; the decision's family is Holm-adjusted in
    :func:`comparisons`); tiers start where a recipe is called better than every member of the current tier."""
    pairs = pairs or Pairs(heads, list(heads))
    final = {r: float(h[:, -1].mean()) for r, h in heads.items()}
    order = sorted(final, key=lambda r: (final[r], r))
    rows, called = [], {}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            iv = pairs.interval(a, b)
            c = call(iv)
            called[(a, b)] = c != "not_called"
            rows.append(
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
        "metric": "mean headline eval bpb at T (lower is better); a pair is called where the 95% paired "
        "t-interval of its own per-seed differences (df = seeds - 1) excludes 0, unadjusted for the number of pairs",
        "order": order,
        "tiers": tiers,
        "pairs": rows,
    }


def _pair_power(base: Baseline, spread: Noise | None, n_seeds: int) -> dict[str, Any]:
    """One pair's spread (its df and 95% interval, where it came from), the minimum detectable difference
    at ``n_seeds`` (with the same at the interval's ends) and the multipliers."""
    mark = {None: None, "above": ">", "below": "<"}
    if spread is None or n_seeds < 2 or spread.dof < 1:
        return {
            "sd_diff_bpb": None,
            "sd_dof": 0,
            "mde_bpb": None,
            "mde_multiplier": {"worse": None, "better": None},
        }
    sd, dof = spread.sd, spread.dof
    delta = stats.mde(sd, n_seeds, level=LEVEL, power=POWER, dof=dof)
    lo, hi = (sd * math.sqrt(dof / float(sps.chi2.ppf(q, dof))) for q in (0.975, 0.025))
    worse, side_w = base.multiplier(delta)
    better, side_b = base.multiplier(-delta)
    return {
        "sd_diff_bpb": sd,
        "sd_dof": dof,
        "sd_interval": [lo, hi],
        "sd_source": spread.source,
        "mde_bpb": delta,
        "mde_bpb_interval": [
            stats.mde(lo, n_seeds, level=LEVEL, power=POWER, dof=dof),
            stats.mde(hi, n_seeds, level=LEVEL, power=POWER, dof=dof),
        ],
        "mde_multiplier": {
            "worse": finite_or_none(worse),
            "better": finite_or_none(better),
            "bounds": {"worse": mark[side_w], "better": mark[side_b]},
            "extrapolated": False,
        },
    }


def spread_of(pairs: Pairs, pair: tuple[str, str] | None, prior: Noise | None) -> Noise | None:
    """The spread a pair's power is read from: its own per-seed differences pooled with the calibrated
    noise (``prior``, ``proxy.noise``); without one, pooled with the run's other recipes' pairs against the
    baseline (so df is not the three or four seeds of one pair). None with one seed."""
    if pair is None:
        return None
    d = pairs.diffs(*pair)
    if prior is not None:
        return pooled(d, prior)
    ss = dof = 0.0
    others = [m for m in pairs.members if m != pairs.baseline and (m, pairs.baseline) != pair]
    for a, b in [pair, *((m, pairs.baseline) for m in others if pairs.baseline is not None)]:
        x = pairs.diffs(a, b)
        if len(x) > 1:
            ss += float(((x - x.mean()) ** 2).sum())
            dof += len(x) - 1
    if not dof:
        return None
    source = (
        "this pair's per-seed differences"
        if not others
        else f"pooled over {1 + len(others)} pairs with the baseline"
    )
    return Noise(math.sqrt(ss / dof), int(dof), source)


def _noisiest(pairs: Pairs) -> tuple[str, str] | None:
    """Without a baseline: the pair of members whose own per-seed differences spread the most."""
    cands = [(a, b) for i, a in enumerate(pairs.members) for b in pairs.members[i + 1 :]]
    sds = {p: stats.paired_interval(pairs.diffs(*p)).sd for p in cands}
    known = [p for p in cands if sds[p] is not None]
    return max(known, key=lambda p: sds[p] or 0.0) if known else (cands[0] if cands else None)


def power(
    base: Baseline,
    pairs: Pairs,
    n_seeds: int,
    pair: tuple[str, str] | None = None,
    prior: Noise | None = None,
) -> dict[str, Any]:
    """The minimum detectable effect of ``pair`` (the verdict's recipe and the baseline) from its spread
    (:func:`spread_of`: pooled with the calibrated noise or with the run's other pairs, so its df is not
    one pair's n - 1), with the spread's 95% interval and the MDE at its ends; the seeds each multiplier of
    :data:`TABLE_MULTIPLIERS` would need at that spread; and ``by_pair``: the same for every recipe and
    control against the baseline. Without ``pair``: the first non-baseline member against
    ``pairs.baseline``, else the noisiest pair of members."""
    if pair is None and pairs.baseline is not None:
        subject = next((m for m in pairs.members if m != pairs.baseline), None)
        pair = (subject, pairs.baseline) if subject else None
    elif pair is None:
        pair = _noisiest(pairs)
    spread = spread_of(pairs, pair, prior)
    out: dict[str, Any] = {
        "level": LEVEL,
        "power": POWER,
        "n_seeds": n_seeds,
        "pair": list(pair) if pair else None,
        **_pair_power(base, spread, n_seeds),
        "method": "two-sided paired t-test of the verdict's pair (its recipe - the baseline): MDE = "
        "(t_{.975,df} + t_{.8,df}) * sd / sqrt(n), sd pooled with the calibrated noise (else with the run's "
        "other pairs) and df its degrees of freedom; its 95% interval (chi-square) gives the MDE's; "
        "by_pair: the same for every recipe and control against the baseline",
    }
    if pairs.baseline is not None:
        out["by_pair"] = {
            r: _pair_power(base, spread_of(pairs, (r, pairs.baseline), prior), n_seeds)
            for r in pairs.heads
            if r != pairs.baseline
        }
    if spread is None:
        out["seeds_needed"] = []
        out["note"] = (
            "one seed (or no recipe besides the baseline): the spread is unknown, so nothing is powered"
        )
        return out
    rows = []
    for m in TABLE_MULTIPLIERS:
        d = base.diff_for(m)
        n = stats.seeds_needed(d, spread.sd, level=LEVEL, power=POWER) if d is not None else None
        rows.append({"multiplier": m, "diff_bpb": d, "seeds": n})
    out["seeds_needed"] = rows
    return out


def verdict_sentence(
    recipe: str,
    baseline: str,
    iv: stats.Interval,
    mult: dict[str, Any],
    pw: dict[str, Any],
    sets: list[str],
    holm: dict[str, Any] | None = None,
) -> str:
    """The one verdict, from the paired interval ``iv`` (its multiplier is the same statistic) and, when
    ``recipe`` is in the Holm family (``holm``: the ``multiple_comparisons`` block), its adjusted call."""

    def r2(x: Any) -> str:
        return "—" if x is None else f"{x:.2f}"

    def mx(key: str) -> str:
        return fmt_multiplier(mult, key)

    c = call(iv)
    row = (holm or {}).get("pairs", {}).get(recipe)
    if row is not None:
        c = row["call"]
    target = ", ".join(sets)
    if iv.n < 2:
        return (
            f"{recipe} vs {baseline} on the targets ({target}): {mx('value')}x per training token from one "
            "seed; with one seed no difference can be called (run at least 2, see the power table)"
        )
    m_ci = f"{mx('ci_low')}–{mx('ci_high')}x"
    d = f"{iv.value:+.4f} bpb [{iv.ci_low:+.4f}, {iv.ci_high:+.4f}]"
    if c == "better":
        head = f"{recipe} beats {baseline} on the targets ({target}): {mx('value')}x tokens-to-target (CI {m_ci}; paired difference {d}, {iv.n} seeds)"
    elif c == "worse":
        head = f"{recipe} is worse than {baseline} on the targets ({target}): {mx('value')}x tokens-to-target (CI {m_ci}; paired difference {d}, {iv.n} seeds)"
    else:
        head = f"no effect of {recipe} vs {baseline} is detected on the targets ({target}): the multiplier is within {m_ci} (point {mx('value')}x; paired difference {d}, {iv.n} seeds)"
        if row is not None and row["call_unadjusted"] != "not_called" and row.get("p_holm") is not None:
            head += (
                f"; its own interval excludes 0 (p = {row['p']:.3f}), but not after Holm's adjustment over the "
                f"{len((holm or {}).get('family', []))} recipes compared with {baseline} (p = {row['p_holm']:.3f})"
            )
    mm = pw.get("mde_multiplier") or {}
    if mm.get("worse") is not None and mm.get("better") is not None:
        mb = mm.get("bounds") or {}
        head += (
            f"; at this budget the run detects (80% power) only effects beyond {mb.get('worse') or ''}"
            f"{r2(mm['worse'])}x or {mb.get('better') or ''}{r2(mm['better'])}x"
        )
    return head
