"""The verdict card: at most five short lines that open report.html, report.md and the terminal summary.

(1) the decision, from goodput.json's calls (``multiple_comparisons``: Holm-adjusted, or a sequential
design's), "inconclusive" when nothing is called, or why the run cannot support one; (2) the best recipe
called better, with the interval it keeps as the best of several; (3) what the run could not detect; (4)
the controls; (5) the best recipe's data goodput (each raw token trained once) and, where the run measured
it, the data-limited comparison (its share repeated against raw repeated, at each k), or the next step of an
inconclusive run. A run the controls cannot support gets the reason, the controls and the next step only. Every line is read from goodput.json, and
an interval is "above" or "below" 1 only when the whole of it is, bounds included. A file from before a
field existed gets the line that still holds, or none, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curate.goodput.calls import fmt_bounded, multiplier_call, multiplier_ci
from curate.goodput.schema import Goodput, as_goodput
from curate.report.fmt import CARD, CONTROL_GLOSSARY, pct
from curate.report.verdict import bounded_text, sides_of, verdict

GoodputLike = Goodput | Mapping[str, Any]


def control_names(goodput: GoodputLike) -> set[str]:
    """The recipes that are controls (null, rejected ...), never a choice for the reader."""
    g = as_goodput(goodput)
    return set(g.controls.checks) | {r for r, v in g.recipes.items() if v.role == "control"}


def compared(goodput: GoodputLike) -> list[str]:
    """The recipes a decision is about: every recipe but the baseline and the controls."""
    g = as_goodput(goodput)
    ctl = control_names(g)
    return [r for r in g.recipes if r != g.baseline and r not in ctl]


def label(goodput: GoodputLike, name: str) -> str:
    """A recipe's name, marked when it is a control, so a ranking never reads as if it were a choice."""
    return f"{name} (control)" if name in control_names(goodput) else name


def unsupported_reasons(goodput: GoodputLike) -> list[str] | None:
    """Why the run cannot support a decision (``verdict.supported`` or ``controls.decision.supported``
    false), or None when nothing says so."""
    g = as_goodput(goodput)
    v, dec = g.verdict, g.controls.decision
    if v.supported is False or dec.supported is False:
        reasons = list(v.unsupported_reasons) or list(dec.reasons)
        return [str(r).rstrip(".") for r in reasons] or ["a control failed"]
    return None


def best_recipe(goodput: GoodputLike) -> str | None:
    """The compared recipe of highest multiplier among those called better (the decision's calls), else
    among all compared recipes: the best one, not necessarily the recipe the controls were built for."""
    g = as_goodput(goodput)
    names = compared(g)
    value = {r: float(v) for r in names if (v := g.recipes[r].multiplier.value) is not None}
    if not value:
        return names[0] if names else None
    calls, _ = _calls(g)
    pool = [r for r in value if calls.get(r) == "better"] or list(value)
    return sorted(pool, key=lambda r: (-value[r], r))[0]


def _calls(g: Goodput) -> tuple[dict[str, str], str]:
    """Each compared recipe's call against the baseline and how it was made: Holm-adjusted from
    ``multiple_comparisons`` when present, else the recipe's own interval (bounds respected)."""
    mc = g.multiple_comparisons
    names = compared(g)
    if mc.pairs:
        calls = {r: str((mc.pairs[r].call if r in mc.pairs else None) or "not_called") for r in names}
        n = len(mc.family or names)
        method = mc.method if mc.has("method") else "Holm"
        return calls, f"{method}-adjusted across {n} recipe{'s' if n != 1 else ''}"
    calls = {}
    for r in names:
        m = g.recipes[r].multiplier
        calls[r] = multiplier_call(m.ci_low, m.ci_high, sides_of(g.recipes[r], "multiplier"))
    how = (
        "from each recipe's own interval, not adjusted for multiple comparisons"
        if len(names) > 1
        else "from its own interval"
    )
    return calls, how


def decision_line(goodput: GoodputLike) -> str:
    """Line 1: what to do, per training token, from the run's calls, or why there is no decision. A run
    that calls nothing is *inconclusive* (its undetectable band covers what it measured), never "keep
    raw": only a recipe called worse, or one a sequential design stopped as futile (below the effect
    worth deciding), says the baseline stays."""
    g = as_goodput(goodput)
    reasons = unsupported_reasons(g)
    if reasons is not None and g.controls.decision.inconclusive:
        return "Inconclusive, no decision at these seeds: " + "; ".join(reasons) + "."
    if reasons is not None:
        return "This run cannot support a decision: " + "; ".join(reasons) + "."
    base = str(g.baseline or "raw")
    calls, how = _calls(g)
    if not calls:
        return f"No recipe besides the baseline {base} and the controls: nothing to decide."
    better = [r for r, c in calls.items() if c == "better"]
    worse = [r for r, c in calls.items() if c == "worse"]
    futile = _futile(g, list(calls))
    if better:
        each = f"{', '.join(better[:-1])} and {better[-1]} each" if len(better) > 1 else better[0]
        text = f"Decision: {each} called better than {base} per training token"
    elif len(worse) == len(calls):
        text = f"Decision: keep {base}; every recipe is called worse per training token"
    elif futile and len(futile) + len(worse) == len(calls):
        text = f"Decision: keep {base}; {', '.join(futile)} stopped below the effect worth deciding" + (
            f", {', '.join(worse)} called worse" if worse else ""
        )
    else:
        text = f"Inconclusive: no recipe is called better than {base} per training token"
        if worse:
            text += f" ({', '.join(worse)} called worse)"
    return f"{text} (calls {how})."


def _futile(g: Goodput, names: list[str]) -> list[str]:
    """The recipes a sequential design stopped for futility (not called, decided at a look)."""
    mc = g.multiple_comparisons
    if not mc.has("design") or not mc.design:
        return []
    return [
        r
        for r in names
        if r in mc.pairs and mc.pairs[r].call == "not_called" and mc.pairs[r].look is not None
    ]


def best_line(g: Goodput, best: str) -> str:
    """Line 2: the best recipe's multiplier with its interval, bounds as ``>2.00``, and, picked as the best
    of several, the interval that keeps its coverage (Bonferroni over the recipes compared)."""
    base = str(g.baseline or "raw")
    rec = g.recipes[best]
    m = rec.multiplier
    if m.value is None:
        return f"Best recipe: {best}, its multiplier against {base} not measured."
    extra = " (extrapolated beyond the baseline's curve)" if m.extrapolated else ""
    n = len(compared(g))
    adj = rec.multiplier_adjusted if rec.has("multiplier_adjusted") else None
    if n > 1 and adj is not None and adj.ci_low is not None and adj.ci_high is not None:
        lo = fmt_bounded(adj.ci_low, adj.bounds.ci_low)
        hi = fmt_bounded(adj.ci_high, adj.bounds.ci_high)
        extra += f"; picked as the best of {n}, its interval is {lo}–{hi}"
    return f"Best recipe: {best}, multiplier {bounded_text(rec, 'multiplier')} against {base}{extra}."


def mde_line(g: Goodput, best: str | None) -> str | None:
    """Line 3: the effects the run could not detect (its minimum detectable multipliers)."""
    pw = g.power
    own = pw.by_pair.get(best or "")
    mm = own.mde_multiplier if own is not None and own.mde_multiplier.to_json() else pw.mde_multiplier
    lo, hi = mm.worse, mm.better
    if lo is None or hi is None:
        return None
    seeds = pw.n_seeds or (len(g.seeds) if g.has("seeds") else None)
    with_seeds = f" with {seeds} seeds" if seeds else ""
    return (
        f"Not detectable: effects between {fmt_bounded(lo, mm.bounds.worse)}x and "
        f"{fmt_bounded(hi, mm.bounds.better)}x{with_seeds}."
    )


def controls_line(g: Goodput) -> str | None:
    """Line 4: whether the gating controls passed, each in its own words."""
    ctl = g.controls.checks
    parts = []
    for name, blk in ctl.items():
        extra = blk.extra or {}
        if name not in CARD:
            continue
        passed = extra.get("passed", blk.contains_1) if name == "null" else blk.called_worse
        ok, bad = CARD[name]
        share = f"{100 * float(blk.fraction or 0):.0f}% " if blk.fraction is not None else ""
        text = (ok if passed else bad).format(share=share)
        eq = extra.get("equivalence") if isinstance(extra.get("equivalence"), Mapping) else None
        if eq and passed:
            text = f"{name} passed (within +-{float(eq['margin']):.3f} bpb of {g.baseline or 'raw'})"
        elif eq:
            text = (
                f"{name} FAILED (not shown within +-{float(eq['margin']):.3f} bpb of {g.baseline or 'raw'})"
            )
        if extra.get("against") and blk.called_worse is not None:
            text = text.replace("called worse)", f"called worse than the {extra['against']})")
        parts.append(text)
    skipped = sorted(set(g.controls.skipped) & set(CARD))
    parts += [f"{name} skipped" for name in skipped]
    if not parts:
        return "Controls: none run, so the instrument is not checked." if g.verdict.to_json() else None
    return "Controls: " + "; ".join(parts) + "."


def goodput_line(g: Goodput, best: str) -> str | None:
    """Line 5: the best recipe's data goodput, named for what it is: the value of each raw token trained
    once (yield x multiplier). It advises nothing: when data is the limit a team repeats its data, which
    only a data-limited measurement answers."""
    rec = g.recipes[best]
    if rec.goodput.value is None or rec.yield_ is None:
        return None
    return (
        f"Data goodput of {best} (yield x multiplier, each raw token trained once): "
        f"{bounded_text(rec, 'goodput')} at yield {pct(rec.yield_)}."
    )


def data_limited_line(g: Goodput, best: str) -> str | None:
    """The data-limited measurement of ``best`` (``proxy.data_limited``), where the run made one: at each
    compute-to-data ratio k measured, whether it repeated beats raw repeated, with the interval, and the k
    at which it stops paying. "Train on all of raw" is said only where such a comparison called it."""
    rows = sorted(
        (e for e in g.data_limited if e.recipe == best and e.role == "recipe"), key=lambda e: e.k or 0
    )
    if not rows:
        return None
    raw = g.baseline or "raw"
    parts: list[str] = []
    pays: list[float] = []
    stops: list[float] = []
    for e in rows:
        ratio = float(e.k or 0)
        k = f"k = {ratio:g}"
        d = e.diff_bpb
        diff = f"{d.value:+.4f} bpb" + (
            f" [{d.ci_low:+.4f}, {d.ci_high:+.4f}]" if d.ci_low is not None else ""
        )
        if not e.supported:
            parts.append(f"{k}: no decision ({e.unsupported_reason})")
            continue
        worth = ""
        if e.goodput.value is not None:
            worth = f", worth {multiplier_ci(e.goodput)} the fresh tokens {raw} repeated is worth"
        if e.call == "better":
            pays.append(ratio)
            parts.append(
                f"{k}: {best} repeated {e.epochs_at_T.recipe:.1f} times beats {raw} repeated "
                f"{e.epochs_at_T.baseline:.1f} times, {diff}{worth}"
            )
        elif e.call == "worse":
            stops.append(ratio)
            parts.append(
                f"{k}: {raw} repeated beats {best} repeated, {diff}: train on all of {raw} at that ratio"
            )
        else:
            stops.append(ratio)
            parts.append(f"{k}: not called, {diff}")
    tail = ""
    if pays and stops and max(pays) < min(stops):
        tail = f"; it stops paying between k = {max(pays):g} and {min(stops):g}"
    elif pays and not stops:
        tail = f"; it pays up to k = {max(pays):g}, the largest ratio measured"
    return "When data is the limit (compute = k x the raw data, measured): " + "; ".join(parts) + tail + "."


def next_step_line(g: Goodput) -> str | None:
    """The concrete next step of a run that could not decide: the seeds a 1.2x effect needs at its spread,
    and their cost at this run's own CPU per run."""
    rows = [r for r in g.power.seeds_needed if r.seeds is not None]
    if not rows:
        return None
    row = next((r for r in rows if r.multiplier == 1.2), rows[len(rows) // 2])
    seeds = int(row.seeds or 0)
    have = g.power.n_seeds or len(g.seeds)
    runs = sum(1 for _ in g.recipes)
    device = sum(float(v.costs.proxy_device_s or 0.0) for v in g.recipes.values() if v.has("costs"))
    per_run = device / max(1, runs * max(1, have))
    more = max(0, seeds - have) * runs
    cost = (
        f", about {more * per_run / 60:.0f} CPU-minutes more at this run's rate"
        if per_run > 0 and more
        else ""
    )
    return f"Next step: {seeds} seeds would call a {row.multiplier:g}x effect 80% of the time ({more} more runs{cost})."


def card_lines(manifest: dict[str, Any], goodput: GoodputLike | None) -> list[str]:
    """The card, at most five lines (fewer where goodput.json lacks what a line needs). A run whose
    controls cannot support a decision says so and why, the controls and the next step: no best recipe,
    no decision, no goodput sentence."""
    g = as_goodput(goodput) if goodput is not None else None
    if g is None or not g.has("recipes"):
        return [verdict(manifest, None)]  # what was kept, and that training value is not measured
    first = decision_line(g)
    if unsupported_reasons(g) is not None:
        return [x for x in (first, controls_line(g), next_step_line(g)) if x][:5]
    best = best_recipe(g)
    calls, _ = _calls(g)
    lines = [first]
    if best is not None and calls.get(best) == "better":
        lines.append(best_line(g, best))
    lines += [x for x in (mde_line(g, best), controls_line(g)) if x]
    if first.startswith("Inconclusive"):
        lines += [x for x in (next_step_line(g),) if x]
    elif best is not None:
        once, limited = goodput_line(g, best), data_limited_line(g, best)
        lines += [" ".join(x for x in (once, limited) if x)] if once or limited else []
    return lines[:5]


GLOSSARY: list[tuple[str, str, str]] = [
    (
        "called",
        "called",
        "a difference is called when its 95% interval excludes no difference (0 for a bpb difference, 1 "
        "for a multiplier); otherwise it is not called: the run cannot tell it from noise.",
    ),
    (
        "multiplier",
        "multiplier",
        "tokens the baseline needs to reach a recipe's eval loss, per token the recipe trained on (1.20x: "
        "one recipe token is worth 1.2 baseline tokens). '>2.00' is a bound: beyond the baseline's measured "
        "range, the true value may be anything above it.",
    ),
    (
        "goodput",
        "data goodput",
        "yield x multiplier: effective training tokens per raw token when each is trained once. When data "
        "is the limit a team repeats its data instead, which this number does not measure.",
    ),
    (
        "tokens-per-param",
        "tokens/param",
        "training tokens per model parameter; compute-optimal training is about 20. Far below it, a "
        "ranking may not transfer to larger models.",
    ),
    (
        "mde",
        "detectable effect (MDE)",
        "the smallest multiplier away from 1x this run would call 80% of the time at its seeds and spread; "
        "smaller effects are not detectable, so 'not called' is not 'no effect'.",
    ),
    (
        "control",
        "control",
        CONTROL_GLOSSARY,
    ),
    (
        "holm",
        "Holm",
        "with several recipes, the Holm step-down adjustment keeps the chance of any false call at 5% "
        "across all of them; calls use the adjusted p-values.",
    ),
]
