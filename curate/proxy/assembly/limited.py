"""``goodput.json``'s ``data_limited`` and ``repetition_curve``: the data-limited arm's runs
(:mod:`curate.proxy.kinds.limited`) analysed.

* ``data_limited``: one entry per (``k``, recipe) and one for the arm's null at each ``k``: the paired
  difference of the recipe's share of raw's pool (repeated ``k / yield`` times) with raw's pool (repeated
  ``k`` times), its per-seed values and call, and the *data-limited goodput*: how many times the fresh raw
  tokens that raw repeated is worth the recipe repeated is worth, read off raw's measured curve of fresh
  data (:func:`curate.proxy.statistics.repetition.ratio_on_curve`: bounds beyond it, never extrapolated).
  A recipe's call is supported only where the arm's null (a random subset of the pool at the controlled
  recipe's share, repeated as often) is shown equivalent to raw's pool (two one-sided tests): the
  data-limited regime is where a biased instrument shows (a subsample seen twice separated from raw).
* ``repetition_curve``: raw's pool of ``T / e`` tokens trained ``e`` times against raw's own runs at ``T``
  (fresh data): the paired difference, what it is worth as a share of fresh tokens (``t_raw(bpb) / T`` on
  raw's measured curve) and, beside it, Muennighoff et al.'s fit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from curate.proxy import stats
from curate.proxy.kinds.limited import Limited, arm_name
from curate.proxy.statistics import analysis, gate
from curate.proxy.statistics.repetition import MUENNIGHOFF, muennighoff_value, ratio_on_curve


def limited_blocks(
    cfg: Any,
    *,
    arms: list[Limited],
    arm_heads: dict[str, np.ndarray],
    data: dict[str, dict[str, Any]],
    base: analysis.Baseline,
    heads: dict[str, np.ndarray],
    recipes: dict[str, dict[str, Any]],
    family: list[str],
    margin: float | None = None,
) -> dict[str, Any]:
    """``{"data_limited": [...], "repetition_curve": {...}}`` from the arm's finished runs (``arms``, their
    headline bpb per seed in ``arm_heads``: seeds x eval points, the last at T), raw's measured curve
    ``base``, the main point's heads (raw's fresh runs among them), the report's recipe blocks (their yield
    and multiplier), the decision's family and the main null's equivalence margin (``margin``: the arm's
    null is held to it)."""
    if not arms:
        return {}
    main = cfg.points()[0]
    by_name = {a.name: a for a in arms}
    spec = cfg.data_limited
    raw = cfg.baseline
    entries: list[dict[str, Any]] = []
    for k in spec.k:
        pool = arm_name(raw, k)
        null = next((a for a in arms if a.null_of is not None and a.k == k), None)
        null_entry = (
            _null_entry(cfg, k, null, pool, arm_heads, data, main.budget, margin)
            if null is not None
            else None
        )
        for r in family:
            name = arm_name(r, k)
            if name not in by_name:
                continue
            entries.append(
                _recipe_entry(
                    k, r, name, pool, arm_heads, data, base, recipes[r], main.budget, null_entry, raw
                )
            )
        if null_entry is not None:
            entries.append(null_entry)
    return {
        "data_limited": entries,
        "repetition_curve": _repetition_curve(spec, raw, arm_heads, heads, data, base, main.budget),
    }


def _tokens(data: dict[str, Any]) -> dict[str, Any]:
    per = [int(d["tokens"]) for d in data["draws"].values()]
    return {"per_seed": per, "mean": float(np.mean(per))}


def _epochs(data: dict[str, Any], budget: int) -> float:
    return round(float(np.mean([budget / max(1, int(d["tokens"])) for d in data["draws"].values()])), 4)


def _recipe_entry(
    k: float,
    recipe: str,
    name: str,
    pool: str,
    heads: dict[str, np.ndarray],
    data: dict[str, dict[str, Any]],
    base: analysis.Baseline,
    block: dict[str, Any],
    budget: int,
    null: dict[str, Any] | None,
    raw: str,
) -> dict[str, Any]:
    d = heads[name][:, -1] - heads[pool][:, -1]
    iv = stats.paired_interval(d, analysis.LEVEL)
    level = float(np.mean(heads[pool][:, -1]))
    call = analysis.call(iv)
    supported, reason = True, None
    if null is None:
        supported, reason = False, "no null was trained at this ratio (no recipe to control)"
    elif not null["passed"]:
        supported, reason = False, null["message"]
    epochs = {"recipe": _epochs(data[name], budget), "baseline": _epochs(data[pool], budget)}
    g = ratio_on_curve(base, level, iv)
    m = block.get("multiplier") or {}
    once = None if m.get("value") is None else block["yield"] * m["value"]
    return {
        "k": k,
        "recipe": recipe,
        "role": "recipe",
        "arm": name,
        "baseline_arm": pool,
        "pool_tokens": _tokens(data[pool]),
        "tokens": _tokens(data[name]),
        "epochs_at_T": epochs,
        "bpb_at_T": {"recipe": float(np.mean(heads[name][:, -1])), "baseline": level},
        "diff_bpb": iv.as_dict(),
        "per_seed_diff": [float(x) for x in d],
        "call": call,
        "goodput": g,
        "goodput_trained_once": once,
        "supported": supported,
        "unsupported_reason": reason,
        "sentence": _sentence(k, recipe, raw, epochs, iv, call, g, supported, reason),
    }


def _sentence(
    k: float,
    recipe: str,
    raw: str,
    epochs: dict[str, float],
    iv: stats.Interval,
    call: str,
    g: dict[str, Any],
    supported: bool,
    reason: str | None,
) -> str:
    head = (
        f"with compute for {k:g}x the raw data (k = {k:g}), {recipe} repeated {epochs['recipe']:.1f} times "
        f"against {raw} repeated {epochs['baseline']:.1f} times: {analysis.fmt_diff(iv.as_dict())}"
    )
    if g.get("value") is not None:
        head += f", worth {_ratio(g)} the fresh tokens {raw} repeated is worth"
    if not supported:
        return f"{head}; not a decision: {reason}"
    if call == "better":
        return f"{head}: when data is the limit at this ratio, {recipe} repeated beats {raw} repeated"
    if call == "worse":
        return f"{head}: when data is the limit at this ratio, {raw} repeated beats {recipe} repeated"
    return f"{head}: not called (neither is shown better at these seeds)"


def _ratio(g: dict[str, Any]) -> str:
    def one(key: str) -> str:
        v, side = g.get(key), (g.get("bounds") or {}).get(key)
        return "?" if v is None else f"{side or ''}{v:.2f}"

    return f"{one('value')}x (CI {one('ci_low')}-{one('ci_high')}x)"


def _null_entry(
    cfg: Any,
    k: float,
    null: Limited,
    pool: str,
    heads: dict[str, np.ndarray],
    data: dict[str, dict[str, Any]],
    budget: int,
    main_margin: float | None,
) -> dict[str, Any]:
    """The arm's null at ``k`` against raw's pool: shown equivalent by two one-sided tests on its spread
    pooled with its twin's, the pair of the recipe it is a random subset like (the same share of the pool,
    repeated as often; the calibrated noise is the fresh regime's, not this one's, and a recipe repeated
    many more times, 40 epochs of a small share, spreads far more: pooling with it would hide the null's
    evidence, pooling with tighter pairs flatter it), inside ``proxy.null_margin``, else the margin the main
    null was held to, else the margin an unbiased null passes 97.5% of the time at the arm's own spread."""
    d = heads[null.name][:, -1] - heads[pool][:, -1]
    iv = stats.paired_interval(d, analysis.LEVEL)
    twin = null.null_of
    x = heads[twin][:, -1] - heads[pool][:, -1] if twin in heads else np.empty(0)
    dof = len(x) - 1 if len(x) > 1 else 0
    prior = (
        gate.Noise(float(x.std(ddof=1)), dof, f"its twin {twin} (the same share, repeated as often)")
        if dof
        else None
    )
    n = len(d)
    noise = gate.pooled(d, prior)
    if cfg.null_margin:
        margin, source = cfg.null_margin, "proxy.null_margin"
    elif main_margin is not None and math.isfinite(main_margin):
        margin, source = main_margin, "the main null's margin"
    else:
        margin = gate.supported_margin(noise.sd, n, noise.dof) if noise.dof > 0 and n > 0 else math.inf
        source = "what the arm's spread supports at 97.5%"
    eq = gate.tost(d, margin, prior=prior)
    epochs = _epochs(data[null.name], budget)
    if eq.equivalent:
        msg = (
            f"the null at k = {k:g} (a random subset of raw's pool at {null.null_of}'s share, repeated "
            f"{epochs:.1f} times) is within +-{margin:.4f} bpb of raw's pool (90% CI {eq.ci_low:+.4f} to "
            f"{eq.ci_high:+.4f}): no bias of that size in the data-limited regime"
        )
    elif iv.excludes(0.0):
        msg = (
            f"the null at k = {k:g} (a random subset of raw's pool, repeated {epochs:.1f} times) separates from "
            f"raw's pool ({analysis.fmt_diff(iv.as_dict())}) though it is raw's own distribution: the instrument "
            "is biased in the data-limited regime, so no recipe's data-limited call stands"
        )
    else:
        msg = (
            f"the null at k = {k:g} is not shown within +-{margin:.4f} bpb of raw's pool (90% CI "
            f"{eq.ci_low:+.4f} to {eq.ci_high:+.4f}): a bias of that size is not ruled out; add seeds"
        )
    return {
        "k": k,
        "recipe": "null",
        "role": "control",
        "arm": null.name,
        "baseline_arm": pool,
        "subset_of": null.null_of,
        "tokens": _tokens(data[null.name]),
        "epochs_at_T": {"recipe": epochs, "baseline": _epochs(data[pool], budget)},
        "diff_bpb": iv.as_dict(),
        "per_seed_diff": [float(x) for x in d],
        "call": analysis.call(iv),
        "equivalence": {
            **eq.as_dict(),
            "margin_source": source,
        },
        "passed": eq.equivalent,
        "message": msg,
    }


def _repetition_curve(
    spec: Any,
    raw: str,
    arm_heads: dict[str, np.ndarray],
    heads: dict[str, np.ndarray],
    data: dict[str, dict[str, Any]],
    base: analysis.Baseline,
    budget: int,
) -> dict[str, Any]:
    """Raw's pool at each epoch count of ``spec.repetition`` against raw's runs at T."""
    fresh = heads[raw][:, -1]
    points = []
    for e in spec.repetition:
        name = arm_name(raw, e)
        d = arm_heads[name][:, -1] - fresh
        iv = stats.paired_interval(d, analysis.LEVEL)
        worth = analysis.multiplier_block(base, iv)
        worth["method"] = (
            "t_raw(B + d) / T: the fresh raw tokens the repeated pool's bpb at T is worth, as a share of the "
            "tokens trained, on raw's finished runs; the interval's ends mapped through the mean and every "
            "seed's curve, the widest; beyond the measured budgets a bound"
        )
        mv = muennighoff_value(_epochs(data[name], budget))
        points.append(
            {
                "epochs": e,
                "epochs_at_T": _epochs(data[name], budget),
                "pool_tokens": _tokens(data[name]),
                "diff_bpb": iv.as_dict(),
                "per_seed_diff": [float(x) for x in d],
                "call": analysis.call(iv),
                "fresh_equivalent": worth,
                "muennighoff": round(mv, 4),
                "against_muennighoff": _against(worth, mv),
            }
        )
    return {
        "baseline": raw,
        "points": points,
        "muennighoff": MUENNIGHOFF,
        "sentence": _curve_sentence(points),
    }


def _against(worth: dict[str, Any], mv: float) -> str | None:
    """``as_fit`` where Muennighoff's value is inside the measured interval, ``less`` where the proxy loses
    less to repetition than the fit says (the interval above it), ``more`` where below; None without one."""
    lo, hi = worth.get("ci_low"), worth.get("ci_high")
    if lo is None or hi is None:
        return None
    if lo > mv:
        return "less"
    if hi < mv:
        return "more"
    return "as_fit"


def _curve_sentence(points: list[dict[str, Any]]) -> str:
    if not points:
        return "no repetition curve was asked for"
    parts = []
    for p in points:
        w = p["fresh_equivalent"]
        parts.append(
            f"{p['epochs_at_T']:.1f} epochs: worth {_ratio(w)} of fresh data (Muennighoff: {p['muennighoff']:.2f})"
        )
    less = [p for p in points if p["against_muennighoff"] == "less"]
    more = [p for p in points if p["against_muennighoff"] == "more"]
    if less and not more:
        tail = (
            "the proxy loses less to repetition than large models do at "
            + ", ".join(f"{p['epochs']:g}" for p in less)
            + " epochs: its data-limited calls understate what repetition costs a large run there"
        )
    elif more and not less:
        tail = (
            "the proxy loses more to repetition than large models do at "
            + ", ".join(f"{p['epochs']:g}" for p in more)
            + " epochs"
        )
    elif not less and not more:
        tail = "the proxy feels repetition as Muennighoff's fit says large models do, within its intervals"
    else:
        tail = (
            "the proxy loses less than Muennighoff's fit at "
            + ", ".join(f"{p['epochs']:g}" for p in less)
            + " epochs and more at "
            + ", ".join(f"{p['epochs']:g}" for p in more)
        )
    return "repetition on this proxy: " + "; ".join(parts) + ". " + tail[0].upper() + tail[1:]
