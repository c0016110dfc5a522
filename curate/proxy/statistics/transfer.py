"""Does a cheap point's ranking transfer to a costly one? Decision accuracy as the field measures it, read
against a noise ceiling and the chance floor, and whether the filters fade as compute grows.

The input is, per ladder point (:class:`Point`), each recipe's headline bpb at the point's budget per seed
(finished, cooled-down runs), the point's seeds and its compute per run. Within a point the seeds pair the
recipes (seed ``s`` fixes the initialisation and the stream order of every recipe), so a pair's difference
at a point is the mean over its seeds of the per-seed differences. The recipes compared are the non-control
recipes, the baseline among them; the **reference** is the point of most compute per run. For every pair
``(a, b)`` of them the reference's paired t-test of ``d_s = H_a,s - H_b,s`` over its seeds gives ``p_ab``.

* **(a) All pairs, weighted by how sure the reference is of each sign** (``all_pairs_weighted``). DataDecide
  counts every pair of recipes, not only those the large scale separates; a pair the reference cannot tell
  from a tie then counts as much as one it is sure of, and agreeing with it is a coin's luck. So each pair
  has the weight ``w_ab = 1 - p_ab`` (two-sided p of the reference's paired t, df = its seeds - 1): 0 for a
  pair whose difference is no larger than its noise, near 1 for one far beyond it; under a flat prior it
  is ``2 P(the reference's sign is right) - 1``. The accuracy is ``sum w_ab [sign_p = sign_ref] / sum w_ab``.
  The weighting is this module's, stated here in full; it is not a copy of a published formula.
* **(b) The reference's calls** (``called``): the pairs whose ``p_ab`` survives Holm's step-down adjustment
  over every pair at level 0.05 (:func:`holm_rejects`), each counted once; the share of them a point orders
  alike. ``None`` where the reference calls no pair.
* **The interval** of both: a 95% percentile cluster bootstrap (2,000 draws). Each draw resamples the
  recipes with replacement (the pairs follow from them: a recipe drawn twice takes part in twice as many
  pairs, a pair of a recipe with its own copy has no sign and drops out) and, independently, each point's
  seeds with replacement (the same seeds for every recipe of a point), then recomputes the weights, the
  Holm calls and the accuracy; a draw whose reference seeds are one seed repeated has no spread to test
  with and weighs and calls nothing (it has no value). An estimate of ``None`` has no interval. A resample
  that repeats a seed understates the reference's spread, so its weights run high and it can call a pair
  the data do not: with few reference seeds (below 4) read ``called``'s interval with its
  ``draws_with_value``. So the number of recipes, and with it the number of pairs, sets the width as
  much as the seeds do. Points are independent samples only if they share no seed
  (:func:`shared_seeds`; ``proxy.disjoint_seeds``); where they share one, the interval is too narrow.
* **(c) The noise ceiling** (:func:`noise_ceiling`): the reference against itself on split seeds. Each
  ordered split of its seeds into halves (``A`` plays a cheap point, ``B`` the reference: ``B``'s weights and
  Holm calls, ``A``'s signs), pooled over the splits (at most :data:`MAX_SPLITS`). It is what a cheap point
  that ranks exactly as the reference does, but sees it through seed noise, reaches: a point at the
  ceiling is as good as a perfect one. Each half has half the reference's seeds, so the ceiling is
  conservative (a cheap point with more seeds than a half can pass it). Its interval resamples recipes
  only: a seed resampled into both halves would agree with itself. Needs 4 seeds at the reference.
* **(d) Chance**: 0.5, the agreement of a point whose signs are coin flips (weighted or not).
* **(e) Do the filters fade with compute?** (:func:`trend`): per recipe, each seed's multiplier at each
  point (its difference with the baseline at that seed mapped through the point's own measured baseline
  curve, :class:`curate.proxy.statistics.analysis.Baseline`; beyond the curve its end, a bound, counted in
  ``censored``), ``ln m`` regressed on ``log2`` compute over every seed of every point (OLS, HC3 standard
  errors: the points' spreads differ; ``statsmodels``). The slope is the change per doubling of compute,
  reported as a ratio of multipliers with its 95% interval; the recipes' p-values are Holm-adjusted, and a
  recipe fades (or grows) only where its adjusted p is at most 0.05. Anything else is said as "not shown
  either way", with the seeds it rests on. A recipe with a seed beyond a point's measured curve is not
  tested (``bounded``, out of the Holm family): its value there is a bound, and a bound read as a value
  gives a slope with no spread behind it.
* **(f) Which point to use** (:func:`point_choice`), by a rule stated before the reference is read: the
  cheapest point whose weighted accuracy is shown above chance and that no costlier cheap point is shown to
  beat (a paired bootstrap of their accuracies); none where no point is shown above chance.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from curate.proxy import stats
from curate.proxy.statistics.analysis import Baseline

ALPHA = 0.05  # Holm's level over the reference's pairs and over the recipes' trends
LEVEL = 0.95
POWER = 0.8  # the power at which a trend test's detectable fade or growth is stated
DRAWS = 2000
CHANCE = 0.5
MAX_SPLITS = 20  # ordered splits of the reference's seeds the ceiling pools (a seeded draw of them beyond)


@dataclass(frozen=True)
class Point:
    """One ladder point: its name, seeds (in the order of every recipe's values), compute per run (FLOPs;
    only ratios are read), each recipe's headline bpb at its budget per seed, and raw's finished curve at
    the point (``budgets``, mean ``curve`` bpb, ``budget`` the point's own) for multipliers."""

    name: str
    seeds: tuple[int, ...]
    compute: float
    bpb: Mapping[str, Sequence[float]]
    budgets: tuple[float, ...] = ()
    curve: tuple[float, ...] = ()
    budget: float | None = None

    def matrix(self, recipes: Sequence[str]) -> np.ndarray:
        """``(recipes, seeds)``: the recipes' per-seed bpb, in ``recipes``' order."""
        return np.array([np.asarray(self.bpb[r], dtype=np.float64) for r in recipes])


def shared_seeds(points: Sequence[Point]) -> dict[int, list[str]]:
    """Every seed that more than one point runs, with the points that run it (empty: disjoint)."""
    at: dict[int, list[str]] = {}
    for p in points:
        for s in p.seeds:
            at.setdefault(s, []).append(p.name)
    return {s: names for s, names in sorted(at.items()) if len(names) > 1}


def _valid(rows: np.ndarray) -> np.ndarray:
    """``(draws, pairs)``: which pairs of positions (``np.triu_indices``) hold two different recipes in each
    draw's ``rows`` (recipe indices, with repeats): a recipe paired with its own copy has no sign."""
    ia, ib = np.triu_indices(rows.shape[1], k=1)
    return rows[:, ia] != rows[:, ib]


def _reference_tests(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ref``: ``(draws, recipes, seeds)``. Per draw and pair of positions: the mean difference and the
    two-sided p of its paired t over the seeds (``scipy.stats.ttest_1samp``'s p of the per-seed differences
    against 0, written out for a batch of draws; a test holds the two equal). A pair without spread has p 0
    (a sign) or 1 (a tie); with one seed every p is 1."""
    ia, ib = np.triu_indices(ref.shape[1], k=1)
    d = ref[:, ia] - ref[:, ib]
    mean = d.mean(axis=2)
    n = d.shape[2]
    if n < 2:
        return mean, np.ones_like(mean)
    sd = d.std(axis=2, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(mean) / (sd / math.sqrt(n))
    p = np.where(sd > 0, 2 * sps.t.sf(t, n - 1), np.where(mean == 0, 1.0, 0.0))
    return mean, np.nan_to_num(p, nan=1.0)


def holm_rejects(p: np.ndarray, valid: np.ndarray | None = None, alpha: float = ALPHA) -> np.ndarray:
    """Holm's step-down rejections at ``alpha`` of each row's family (``p``: ``(families, m)``, or one family;
    ``valid``: which members belong to it, the others never rejected): sorted ascending, ``p_(i)`` is
    rejected when every ``p_(j)``, ``j <= i``, is at most ``alpha / (m - j + 1)``. The same decisions as
    ``statsmodels``' ``multipletests(p, alpha, method="holm")[0]`` (a test holds them equal), written out
    for a batch because that call runs a full garbage collection each time (0.08 s here)."""
    p2 = np.atleast_2d(np.asarray(p, dtype=np.float64))
    ok = np.ones_like(p2, dtype=bool) if valid is None else np.atleast_2d(valid)
    m = ok.sum(axis=1, keepdims=True)
    order = np.argsort(np.where(ok, p2, np.inf), axis=1, kind="stable")
    j = np.arange(p2.shape[1])
    with np.errstate(divide="ignore"):
        limit = np.where(j < m, alpha / np.maximum(m - j, 1), -1.0)
    passed = np.logical_and.accumulate(np.take_along_axis(p2, order, axis=1) <= limit, axis=1)
    out = np.zeros_like(passed)
    np.put_along_axis(out, order, passed, axis=1)
    return out.reshape(np.shape(p))


@dataclass(frozen=True)
class _Drawn:
    """The reference in each bootstrap draw (row 0 the data themselves), tested once for every point read
    against it: which pairs of positions hold two different recipes (``valid``, :func:`_valid`), and per
    pair the mean difference, its weight ``1 - p`` (``p`` of its paired t, :func:`_reference_tests`) and
    Holm's call; ``p`` is 1 in a draw whose seeds cannot be tested (``tested`` false: one seed repeated has
    no spread, its differences would look certain, so it weighs and calls nothing)."""

    valid: np.ndarray
    mean: np.ndarray
    weight: np.ndarray
    called: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray, rows: np.ndarray, tested: np.ndarray | None = None) -> _Drawn:
        """``values``: ``(draws, recipes, seeds)``, the reference's per-seed bpb of the recipes ``rows``."""
        mean, p = _reference_tests(values)
        if tested is not None:
            p = np.where(tested[:, None], p, 1.0)
        valid = _valid(rows)
        return cls(valid, mean, (1.0 - p) * valid, holm_rejects(p, valid) & (mean != 0))

    @classmethod
    def resampled(cls, f: np.ndarray, rows: np.ndarray, seeds: np.ndarray) -> _Drawn:
        """``f`` (``(recipes, seeds)``) at the drawn recipes ``rows`` and seeds ``seeds`` (one row per draw)."""
        tested = np.array([len(set(r)) > 1 for r in seeds.tolist()])
        return cls.of(f[rows[:, :, None], seeds[:, None, :]], rows, tested)

    def sums(self, cheap: np.ndarray) -> np.ndarray:
        """``(draws, 4)``: per draw, ``sum w·agree``, ``sum w``, the agreements among the reference's Holm
        calls and the calls, of a cheap point's values (``(draws, recipes, seeds)``, the same recipes drawn)
        over the valid pairs."""
        ia, ib = np.triu_indices(cheap.shape[1], k=1)
        small = cheap.mean(axis=2)
        agree = (np.sign(small[:, ia] - small[:, ib]) == np.sign(self.mean)) & self.valid
        w, called = self.weight, self.called
        return np.stack([(w * agree).sum(1), w.sum(1), (agree & called).sum(1), called.sum(1)], axis=1)


def _ratios(sums: np.ndarray, num: int, den: int) -> list[float | None]:
    return [float(a / b) if b > 0 else None for a, b in zip(sums[:, num], sums[:, den], strict=True)]


def _block(values: list[float | None], **extra: Any) -> dict[str, Any]:
    """The first value is the estimate, the rest the bootstrap's draws (their 95% percentile interval;
    draws without a value, e.g. with no call, left out and counted). No estimate, no interval: draws that
    have a value where the data have none describe another question."""
    v = np.array([x for x in values[1:] if x is not None], dtype=np.float64)
    ci = None
    if len(v) and values[0] is not None:
        ci = [float(x) for x in np.quantile(v, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])]
    return {"value": values[0], "ci": ci, **extra, "draws_with_value": len(v)}


def _resample(rng: np.random.Generator, draws: int, n: int) -> np.ndarray:
    """``(1 + draws, n)``: the identity first (the estimate), then ``draws`` resamples with replacement."""
    return np.vstack([np.arange(n)[None], rng.integers(n, size=(draws, n))])


def decision_accuracy(
    cheap: Point, ref: Point, recipes: Sequence[str], *, draws: int = DRAWS, seed: int = 0
) -> dict[str, Any]:
    """(a) and (b) of ``cheap`` against ``ref`` over the pairs of ``recipes``, each with its cluster
    bootstrap interval (recipes and each point's seeds resampled; the module's docstring)."""
    c, f = cheap.matrix(recipes), ref.matrix(recipes)
    rng = np.random.default_rng(seed)
    rows = _resample(rng, draws, len(recipes))
    cs, fs = _resample(rng, draws, c.shape[1]), _resample(rng, draws, f.shape[1])
    sums = _Drawn.resampled(f, rows, fs).sums(c[rows[:, :, None], cs[:, None, :]])
    n_pairs = len(recipes) * (len(recipes) - 1) // 2
    return {
        "all_pairs_weighted": _block(_ratios(sums, 0, 1), pairs=n_pairs, weight=round(float(sums[0, 1]), 6)),
        "called": _block(_ratios(sums, 2, 3), pairs=int(sums[0, 3])),
    }


def _splits(n: int, seed: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Ordered splits of ``n`` seeds into halves ``(A, B)``, each once; more than :data:`MAX_SPLITS`: a
    seeded draw of them."""
    out = []
    for a in itertools.combinations(range(n), n // 2):
        b = tuple(i for i in range(n) if i not in a)
        out += [(a, b), (b, a)]
    out = list(dict.fromkeys(out))  # an even n lists each split twice
    if len(out) > MAX_SPLITS:
        pick = np.random.default_rng(seed).choice(len(out), size=MAX_SPLITS, replace=False)
        out = [out[i] for i in sorted(pick)]
    return out


def noise_ceiling(ref: Point, recipes: Sequence[str], *, draws: int = DRAWS, seed: int = 0) -> dict[str, Any]:
    """(c): the reference against itself, half its seeds against the other half, pooled over the ordered
    splits; the interval resamples recipes (seeds fixed). ``None`` values below 4 seeds."""
    f = ref.matrix(recipes)
    splits = _splits(f.shape[1], seed) if f.shape[1] >= 4 else []
    rows = _resample(np.random.default_rng(seed), draws if splits else 0, len(recipes))
    m = f[rows]
    sums = sum(
        (_Drawn.of(m[:, :, list(b)], rows).sums(m[:, :, list(a)]) for a, b in splits),
        np.zeros((len(rows), 4)),
    )
    return {
        "all_pairs_weighted": _block(_ratios(sums, 0, 1)),
        "called": _block(_ratios(sums, 2, 3)),
        "splits": len(splits),
        "seeds_per_half": sorted({len(a) for a, _ in splits}),
    }


def _log_multipliers(r: str, baseline: str, p: Point) -> tuple[list[float], int]:
    """Each seed's ``ln m`` of ``r`` at ``p`` (its difference with the baseline through the point's mean
    measured curve) and how many sit at the curve's end (a bound)."""
    base = Baseline(np.asarray(p.budgets), np.asarray([p.curve]), float(p.budget or 0))
    out, censored = [], 0
    for x, y in zip(p.bpb[r], p.bpb[baseline], strict=True):
        m, side = base.multiplier(float(x) - float(y))
        out.append(math.log(m))
        censored += side is not None
    return out, censored


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, list[float], float, float] | None:
    """OLS slope of ``y`` on ``x`` with HC3 standard errors: slope, its 95% interval, its p, its standard
    error (normal inference, as statsmodels gives with ``cov_type="HC3"``)."""
    if len(set(x.tolist())) < 2 or len(x) < 4:
        return None
    import statsmodels.api as sm  # imports pandas: only where it is used

    res = sm.OLS(y, sm.add_constant(x)).fit(cov_type="HC3")
    lo, hi = res.conf_int(alpha=1 - LEVEL)[1]
    p = float(res.pvalues[1])
    return float(res.params[1]), [float(lo), float(hi)], p if math.isfinite(p) else 1.0, float(res.bse[1])


def detectable_per_doubling(se: float, family: int, *, power: float = POWER) -> list[float]:
    """The fade and the growth per doubling of compute (as ratios, ``[below 1, above 1]``) that a slope
    with standard error ``se`` is called at with probability ``power``, at ``ALPHA / family`` (two-sided,
    normal): the level Holm's first step holds each of ``family`` recipes to, so no recipe's test is held
    to less. What a "no trend shown" rules out at these seeds."""
    from scipy.stats import norm

    d = (norm.ppf(1 - ALPHA / (2 * max(family, 1))) + norm.ppf(power)) * se
    return [math.exp(-d), math.exp(d)]


def _geometric(log_m: list[float]) -> dict[str, Any]:
    """A point's multiplier over its seeds: ``exp`` of the mean ``ln m`` and of its t-interval's ends."""
    iv = stats.paired_interval(log_m, LEVEL)
    ci = None if iv.ci_low is None or iv.ci_high is None else [math.exp(iv.ci_low), math.exp(iv.ci_high)]
    return {"value": math.exp(iv.value), "ci": ci, "seeds": len(log_m)}


def trend(points: Sequence[Point], recipes: Sequence[str], baseline: str) -> dict[str, Any]:
    """(e) per recipe (every one but the baseline) over every point with a measured curve: each point's
    geometric mean multiplier over its seeds with its t-interval, the slope of ``ln m`` per doubling of
    compute as a ratio with its interval and p (Holm over the recipes), the fade and growth its test would
    call (:func:`detectable_per_doubling`), and a sentence."""
    pts = sorted((p for p in points if p.budgets), key=lambda p: p.compute)
    if len(pts) < 2:
        return {"recipes": {}, "summary": "fewer than two points with a measured curve: no trend to test"}
    span = pts[-1].compute / pts[0].compute
    out: dict[str, dict[str, Any]] = {}
    for r in recipes:
        if r == baseline:
            continue
        xs, ys, per, censored = [], [], [], 0
        for p in pts:
            lm, c = _log_multipliers(r, baseline, p)
            censored += c
            xs += [math.log2(p.compute / pts[0].compute)] * len(lm)
            ys += lm
            per.append(
                {"point": p.name, "compute": p.compute / pts[0].compute, **_geometric(lm), "censored": c}
            )
        fit = _fit(np.array(xs), np.array(ys))
        out[r] = {"points": per, "seeds": len(ys), "censored": censored}
        if fit is not None:
            b, (lo, hi), pv, se = fit
            out[r].update(ratio_per_doubling=math.exp(b), ci=[math.exp(lo), math.exp(hi)], p=pv, se_log=se)
    # a seed beyond the measured curve is a bound, not a value: such a recipe is not tested (nor in the family)
    adj = stats.holm({r: v["p"] for r, v in out.items() if "p" in v and not v["censored"]})
    for r, v in out.items():
        v["p_holm"] = adj.get(r)
        if r in adj:
            v["detectable_per_doubling"] = detectable_per_doubling(v["se_log"], len(adj))
        v["verdict"] = _verdict(v)
        v["sentence"] = _sentence(r, v, span, len(pts))
    n = {k: sum(v["verdict"] == k for v in out.values()) for k in ("fades", "grows", "not_shown", "bounded")}
    summary = (
        f"over {span:.1f}x of compute ({len(pts)} points): {n['fades']} of {len(out)} recipes fade (Holm, 5%), "
        f"{n['grows']} grow, {n['not_shown']} show no trend either way at these seeds"
        + (f", {n['bounded']} not tested (a seed beyond the measured curve)" if n["bounded"] else "")
    )
    return {"recipes": out, "summary": summary, "compute_span": span}


def _verdict(v: Mapping[str, Any]) -> str:
    if v["censored"]:
        return "bounded"
    if v.get("p_holm") is None or v["p_holm"] > ALPHA:
        return "not_shown"
    return "fades" if v["ratio_per_doubling"] < 1 else "grows"


def _sentence(r: str, v: Mapping[str, Any], span: float, points: int) -> str:
    if "ratio_per_doubling" not in v:
        return f"{r}: too few seeds for a trend ({v['seeds']} over {points} points)"
    lo, hi = v["ci"]
    slope = f"{r}: x{v['ratio_per_doubling']:.3f} per doubling of compute [{lo:.3f}, {hi:.3f}]"
    seeds = f"({v['seeds']} seeds at {points} points)"
    if v["verdict"] == "bounded":
        return (
            f"{slope}: not tested, {v['censored']} seed(s) beyond the measured curve (a bound, not a value; a "
            f"longer proxy.curve measures them) {seeds}"
        )
    said = {
        "fades": "it fades as compute grows",
        "grows": "it grows as compute grows",
        "not_shown": "no fade and no growth shown",
    }[v["verdict"]]
    if v["verdict"] == "not_shown":
        below, above = v["detectable_per_doubling"]
        said += f" (detectable at these seeds, {POWER:.0%} power: x{below:.3f} or x{above:.3f} per doubling)"
    return f"{slope}, p {v['p']:.2g} (Holm {v['p_holm']:.2g}): {said} over {span:.1f}x of compute {seeds}"


def pairs(ref: Point, recipes: Sequence[str], others: Sequence[Point] = ()) -> list[dict[str, Any]]:
    """Every pair of ``recipes`` at the reference (mean difference ``a - b`` in bpb, p, Holm's call, weight)
    and whether each other point orders it alike (``agrees``, by point name)."""
    means2, p2 = _reference_tests(ref.matrix(recipes)[None])
    mean, p = means2[0], p2[0]
    called = holm_rejects(p) & (mean != 0)
    means = {q.name: q.matrix(recipes).mean(axis=1) for q in others}
    out = []
    for k, (i, j) in enumerate(itertools.combinations(range(len(recipes)), 2)):
        a, b = recipes[i], recipes[j]
        better = None if not called[k] else (a if mean[k] < 0 else b)
        agrees = {n: bool(np.sign(m[i] - m[j]) == np.sign(mean[k])) for n, m in means.items()}
        out.append(
            {
                "a": a,
                "b": b,
                "diff_bpb": float(mean[k]),
                "p": float(p[k]),
                "weight": float(1 - p[k]),
                "called": bool(called[k]),
                "better": better,
                "agrees": agrees,
            }
        )
    return out


def _weighted_draws(
    cheap: Point, ref: _Drawn, rows: np.ndarray, recipes: Sequence[str], rng: np.random.Generator
) -> np.ndarray:
    """``(1 + draws,)``: ``cheap``'s weighted accuracy (a) against the drawn reference ``ref`` over the
    recipes drawn in ``rows``, its own seeds resampled; NaN where a draw has none."""
    c = cheap.matrix(recipes)
    cs = _resample(rng, rows.shape[0] - 1, c.shape[1])
    sums = ref.sums(c[rows[:, :, None], cs[:, None, :]])
    return np.array([np.nan if v is None else v for v in _ratios(sums, 0, 1)])


def point_choice(
    cheap: Sequence[Point],
    ref: Point,
    recipes: Sequence[str],
    accuracy: Mapping[str, Mapping[str, Any]],
    *,
    draws: int = DRAWS,
    seed: int = 0,
) -> dict[str, Any]:
    """(f) Which cheap point to use, by a rule fixed before the reference is read: the cheapest point whose
    weighted decision accuracy (``accuracy[name]["all_pairs_weighted"]``, as :func:`decision_accuracy` gives
    it) is shown above chance (its interval's lower end above :data:`CHANCE`) and which no costlier cheap
    point is shown to beat (the paired bootstrap interval of the costlier point's accuracy minus its own has
    a lower end at or below 0); none where no point passes. The differences share their draws: the same
    recipes and reference seeds in each draw, each point's own seeds resampled."""
    pts = sorted(cheap, key=lambda p: p.compute)
    rng = np.random.default_rng(seed)
    f = ref.matrix(recipes)
    rows = _resample(rng, draws, len(recipes))
    drawn = _Drawn.resampled(f, rows, _resample(rng, draws, f.shape[1]))  # tested once for every point
    acc = {p.name: _weighted_draws(p, drawn, rows, recipes, rng) for p in pts}
    diffs: dict[str, dict[str, Any]] = {}
    for a, b in itertools.combinations(pts, 2):
        d = acc[b.name] - acc[a.name]
        ok = d[1:][np.isfinite(d[1:])]
        ci = [float(x) for x in np.quantile(ok, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])] if len(ok) else None
        diffs[f"{b.name} - {a.name}"] = {
            "value": None if not np.isfinite(d[0]) else float(d[0]),
            "ci": ci if np.isfinite(d[0]) else None,
            "draws_with_value": len(ok),
        }
    chosen, why, passed = None, "no cheap point's weighted decision accuracy is shown above chance", {}
    for i, a in enumerate(pts):
        w = accuracy[a.name]["all_pairs_weighted"]
        ci = w.get("ci")
        if ci is None or ci[0] <= CHANCE:
            shown = "no value" if ci is None else f"{w['value']:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]"
            passed[a.name] = f"not shown above chance ({shown}, chance {CHANCE:.0%})"
            continue
        beaten = {
            b.name: iv
            for b in pts[i + 1 :]
            if (iv := diffs[f"{b.name} - {a.name}"])["ci"] is not None and iv["ci"][0] > 0
        }
        if beaten:
            passed[a.name] = "; ".join(
                f"{b} is shown better ({iv['value']:+.0%} [{iv['ci'][0]:+.0%}, {iv['ci'][1]:+.0%}])"
                for b, iv in beaten.items()
            )
            continue
        why = (
            f"the cheapest point shown above chance ({w['value']:.0%} [{ci[0]:.0%}, {ci[1]:.0%}], chance "
            f"{CHANCE:.0%}) that no costlier cheap point is shown to beat"
        )
        chosen = a.name
        break
    return {
        "point": chosen,
        "reason": why,
        "passed_over": passed,
        "differences": diffs,
        "rule": "the cheapest point whose weighted decision accuracy's 95% interval lies above chance and "
        "that no costlier cheap point beats (paired bootstrap of their accuracies, the same recipes and "
        "reference seeds in each draw, 95% interval of the difference above 0)",
    }


def study(
    points: Sequence[Point], recipes: Sequence[str], baseline: str, *, draws: int = DRAWS, seed: int = 0
) -> dict[str, Any]:
    """The transfer study of ``points`` over ``recipes`` (non-control, the baseline among them): the
    reference (most compute), every pair, each other point's decision accuracy (a, b), the noise ceiling,
    chance, the point to use (f), the trend, and whether the points' seeds are disjoint."""
    ref = max(points, key=lambda p: p.compute)
    others = [p for p in points if p is not ref]
    shared = shared_seeds(points)
    accuracy = {p.name: decision_accuracy(p, ref, recipes, draws=draws, seed=seed) for p in others}
    return {
        "reference": ref.name,
        "recipes": list(recipes),
        "seeds_disjoint": not shared,
        "shared_seeds": {str(s): names for s, names in shared.items()},
        "pairs": pairs(ref, recipes, others),
        "decision_accuracy": accuracy,
        "noise_ceiling": noise_ceiling(ref, recipes, draws=draws, seed=seed),
        "chance": CHANCE,
        "choice": point_choice(others, ref, recipes, accuracy, draws=draws, seed=seed),
        "trend": trend(points, recipes, baseline),
    }
