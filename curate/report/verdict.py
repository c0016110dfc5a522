"""Number formatting shared by the HTML and Markdown reports, and the plain-language verdict.

The verdict is derived only from the numbers in ``manifest.json`` and ``goodput.json`` (read as
:class:`curate.goodput.schema.Goodput`); it calls a difference only where a confidence interval excludes
"no difference" (1.0 for a multiplier or a goodput, separated intervals for a ranking:
:mod:`curate.goodput.calls`), and says so when it does not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from curate.goodput.calls import fmt_bounded, side
from curate.goodput.schema import Goodput, Recipe, as_goodput, as_recipe
from curate.report.fmt import DASH, ci_text, count, nbytes, num, pct, ratio, what

__all__ = ["DASH", "ci_text", "count", "nbytes", "num", "pct", "ratio"]

GoodputLike = Goodput | Mapping[str, Any]
RecipeLike = Recipe | Mapping[str, Any]

_side = side  # where an interval lies against 1 (the rule of curate.goodput.calls)


def goodput_ci(rec: RecipeLike) -> tuple[Any, Any]:
    """A recipe's data goodput interval ``(low, high)``."""
    g = as_recipe(rec).goodput
    return g.ci_low, g.ci_high


def sides_of(rec: RecipeLike, what: str) -> tuple[Any, Any]:
    """The bound marks of a recipe's multiplier or goodput CI ends; goodput = yield x multiplier (yield > 0)
    shares the multiplier's marks where goodput.json records none of its own."""
    r = as_recipe(rec)
    gb = r.goodput.bounds
    if what == "goodput" and gb.has("ci_low") and gb.has("ci_high"):
        return gb.ci_low, gb.ci_high
    return r.multiplier.bounds.ci_low, r.multiplier.bounds.ci_high


def pick_recipe(goodput: GoodputLike) -> str | None:
    """The non-baseline recipe the verdict is about: the highest goodput, else the highest multiplier."""
    g = as_goodput(goodput)
    recipes = {r: v for r, v in g.recipes.items() if r != g.baseline}
    if not recipes:
        return None

    def key(r: str) -> tuple[float, float, str]:
        gv, mv = recipes[r].goodput.value, recipes[r].multiplier.value
        return (-(gv if gv is not None else -math.inf), -(mv if mv is not None else -math.inf), r)

    return sorted(recipes, key=key)[0]


def bounded_text(rec: RecipeLike, what: str) -> str:
    """A recipe's multiplier or goodput with its CI, e.g. ``>2.00x (CI 1.21–>2.00)``: a number at the end of
    the baseline's measured range carries its side (``>`` / ``<``), as it is a bound."""
    r = as_recipe(rec)
    if what == "multiplier":
        m = r.multiplier
        sides: tuple[Any, ...] = (m.bounds.value, m.bounds.ci_low, m.bounds.ci_high)
        nums: tuple[Any, ...] = (m.value, m.ci_low, m.ci_high)
    else:  # goodput = yield x multiplier: the multiplier's marks where goodput records none
        g = r.goodput
        mark = g.bounds.value or r.multiplier.bounds.value
        sides, nums = (mark, *sides_of(r, "goodput")), (g.value, g.ci_low, g.ci_high)
    t = [fmt_bounded(x, s) for s, x in zip(sides, nums, strict=True)]
    unit = "x" if what == "multiplier" else ""
    if nums[1] is None and nums[2] is None:
        return f"{t[0]}{unit} (CI —)"
    return f"{t[0]}{unit} (CI {t[1]}{DASH}{t[2]})"


def goodput_side(r: Recipe) -> str:
    g = r.goodput
    return side(g.ci_low, g.ci_high, g.value, sides_of(r, "goodput"))


def recipe_sentence(name: str, rec: RecipeLike, baseline: str) -> str:
    """One recipe against the baseline, e.g. "curated beats raw: 1.38x tokens-to-target (CI 1.34–1.42)"."""
    r = as_recipe(rec)
    m = r.multiplier
    mv, lo, hi = m.value, m.ci_low, m.ci_high
    where = side(lo, hi, mv, sides_of(r, "multiplier"))
    extra = " (extrapolated beyond the baseline's curve)" if m.extrapolated else ""
    b = m.bounds  # '>' / '<': beyond the range the baseline was measured at, a bound
    mtxt = fmt_bounded(mv, b.value)
    mci = (
        f"CI {fmt_bounded(lo, b.ci_low)}{DASH}{fmt_bounded(hi, b.ci_high)}"
        if lo is not None
        else ci_text(lo, hi)
    )
    if mv is None:
        head = (
            f"{name} reaches a loss the {baseline} baseline never reaches on its fitted curve "
            f"(multiplier unbounded{extra})"
        )
    elif where == "above":
        head = f"{name} beats {baseline}: {mtxt}x tokens-to-target ({mci}){extra}"
    elif where == "below":
        head = f"{name} is worse than {baseline}: {mtxt}x tokens-to-target ({mci}){extra}"
    else:
        head = (
            f"{name} vs {baseline}: {mtxt}x tokens-to-target ({mci}){extra}, "
            "an interval that includes 1x, so no difference per training token is established"
        )
    parts = [head, f"yield {pct(r.yield_)} of tokens"]
    if r.goodput.value is None:
        parts.append("data goodput unknown")
    else:
        parts.append(f"data goodput {bounded_text(r, 'goodput')}{goodput_words(goodput_side(r), baseline)}")
    return "; ".join(parts)


def goodput_words(where: str, baseline: str) -> str:
    """What a data goodput interval's place against 1 says, and no more: the value of each raw token
    trained once (yield x multiplier). When data is the limit a team repeats its data, which only a
    data-limited measurement answers, so nothing here advises training on the baseline."""
    if where == "above":
        return ", above 1 per raw token trained once"
    if where == "below":
        return ", below 1 per raw token trained once"
    if where == "overlaps":
        return " (its interval includes 1)"
    return ""


def ranking_sentence(goodput: GoodputLike, recipe: str) -> str | None:
    """How ``recipe`` and the baseline compare on eval bpb at T, called only where their CIs separate."""
    g = as_goodput(goodput)
    base = g.baseline
    for p in g.ranking.pairs:
        if {p.a, p.b} == {recipe, base}:
            if p.separated:
                return f"At T its eval bpb CI is separated from {base}'s ({p.better} is lower)"
            return f"At T its eval bpb CI overlaps {base}'s: the ranking of the two is not called"
    return None


def _not_controls(g: Goodput) -> list[str]:
    """The recipes besides the baseline and those the controls block names."""
    return [r for r in g.recipes if r != g.baseline and r not in g.controls.checks]


def decision_sentence(goodput: GoodputLike) -> str | None:
    """With two or more recipes besides the baseline and the controls: which measures best, and whether
    it is called against each other recipe (the paired interval of the bpb difference at T excludes 0)
    or not, with the run's minimum detectable difference; ``None`` with fewer than two."""
    g = as_goodput(goodput)
    recs = g.recipes
    value = {r: float(v) for r in _not_controls(g) if (v := recs[r].multiplier.value) is not None}
    names = sorted(value, key=lambda r: (-value[r], r))
    if len(names) < 2:
        return None
    best = names[0]

    def m(r: str) -> str:
        text = f"{r} {bounded_text(recs[r], 'multiplier')}"
        if recs[r].yield_ is not None and recs[r].goodput.value is not None:
            text += f" at yield {pct(recs[r].yield_)}, goodput {bounded_text(recs[r], 'goodput')}"
        return text

    pairs = {frozenset((p.a, p.b)): p for p in g.ranking.pairs}
    calls = []
    for other in [*names[1:], g.baseline]:
        p = pairs.get(frozenset((best, other)))
        if p is None:
            continue
        d = p.diff_bpb
        if p.separated and p.better == best:
            calls.append(f"{best} beats {other} (called)")
        elif d.value is None or d.ci_low is None or d.ci_high is None:  # no difference recorded
            calls.append(f"{best} vs {other} not called")
        else:
            v, lo, hi = float(d.value), float(d.ci_low), float(d.ci_high)
            if p.a != best:  # the pair stores a - b: turn it into best - other
                v, lo, hi = -v, -hi, -lo
            calls.append(
                f"{best} vs {other} not called (paired bpb difference {best} - {other} {v:+.4f} "
                f"[{lo:+.4f}, {hi:+.4f}])"
            )
    text = "Recipes by multiplier: " + ", ".join(m(r) for r in names)
    if calls:
        text += "; " + "; ".join(calls)
    mde = g.power.mde_bpb
    if mde is not None and not all(c.endswith("(called)") for c in calls):
        text += f"; this run separates two recipes only when their bpb differs by more than {mde:.4f}"
    return text


def paired_verdict(g: Goodput, curation: str) -> str:
    """Schema 2 and later: the verdict sentence goodput.json carries (the paired statistic that also calls
    the ranking), the subject's yield and goodput (the same interval scaled by the yield), the controls."""
    v = g.verdict
    sentences = [str(v.sentence)]
    rec = g.recipes.get(v.recipe or "")
    if rec is not None and rec.to_json():
        sentences.append(
            f"Yield {pct(rec.yield_)} of tokens, data goodput {bounded_text(rec, 'goodput')}"
            + goodput_words(goodput_side(rec), str(g.baseline or "raw"))
        )
    ctl = g.controls.checks
    if "null" in ctl:
        eq = (ctl["null"].extra or {}).get("equivalence")
        passed = (ctl["null"].extra or {}).get("passed", ctl["null"].contains_1)
        sentences.append(
            "Null control: "
            + (
                (
                    f"within +-{float(eq['margin']):.4f} bpb of {g.baseline or 'raw'} (90% CI "
                    f"{float(eq['ci_low']):+.4f} to {float(eq['ci_high']):+.4f}): no instrument bias of that size"
                    if eq
                    else "inside its interval (no instrument bias seen)"
                )
                if passed
                else str(ctl["null"].message)
            )
        )
    for name, blk in ctl.items():  # a control built worse; when not called, it is the run's first warning
        if not blk.called_worse:
            continue
        sentences.append(
            f"{name.capitalize()} control: {what(name, blk)} is called worse, so the run can see a known "
            "effect of that size"
        )
    if "rejected" in ctl:
        sentences.append("Kept vs rejected: " + str(ctl["rejected"].message))
    decision = decision_sentence(g)
    if decision:
        sentences.append(decision)
    sentences += [f"Warning: {w}" for w in g.warnings if w not in str(v.sentence)]
    return ". ".join(s.rstrip(".") for s in sentences) + f". Curation {curation}." + _closing(g)


def _closing(g: Goodput) -> str:
    """The scope and the decision sentences that end every verdict (each when the run has the data; no
    decision where the run says it cannot support one)."""
    unsupported = g.verdict.supported is False or g.controls.decision.supported is False
    out = [s for s in (scope_sentence(g), None if unsupported else decision_line(g)) if s]
    return "".join(f" {s}." for s in out)


def verdict(manifest: dict[str, Any], goodput: GoodputLike | None) -> str:
    """The one-paragraph headline of the report."""
    a = manifest.get("accounting") or {}
    n_in, kept = a.get("input") or 0, a.get("kept") or 0
    curation = f"kept {kept:,} of {n_in:,} documents ({pct(kept / n_in) + ' of documents' if n_in else '—'})"
    if goodput is None:
        return f"{curation}. No proxy runs (no goodput.json): whether the curation helps training is not measured."
    g = as_goodput(goodput)
    base = str(g.baseline or "raw")
    if g.verdict.sentence:
        return paired_verdict(g, curation)
    r = pick_recipe(g)
    if r is None:
        return f"{curation}. goodput.json has no recipe besides the baseline {base}: nothing to compare."
    sentences = [recipe_sentence(r, g.recipes[r], base)]
    rs = ranking_sentence(g, r)
    if rs:
        sentences.append(rs)
    return ". ".join(sentences) + f". Curation {curation}." + _closing(g)


def _compared(g: Goodput) -> list[str]:
    """The recipes a decision is about: every recipe but the baseline and the controls."""
    return [r for r in _not_controls(g) if g.recipes[r].role != "control"]


def decision_line(goodput: GoodputLike) -> str | None:
    """The decision a reader can act on, from the run's own calls: per training token (the multiplier's
    interval against 1) when compute is the limit, per raw token (data goodput's) when data is."""
    g = as_goodput(goodput)
    base = str(g.baseline or "raw")
    recs = g.recipes
    names = _compared(g)
    if not names:
        return None

    def where(r: str, key: str) -> str:
        if key == "goodput":
            return goodput_side(recs[r])
        m = recs[r].multiplier
        return side(m.ci_low, m.ci_high, m.value, sides_of(recs[r], key))

    def by(key: str) -> dict[str, list[str]]:
        sides: dict[str, list[str]] = {"above": [], "below": [], "overlaps": [], "unknown": []}
        for r in names:
            sides[where(r, key)].append(r)
        block = {r: recs[r].multiplier if key == "multiplier" else recs[r].goodput for r in names}
        value = {r: block[r].value or 0.0 for r in names}
        return {k: sorted(v, key=lambda r: (-value[r], r)) for k, v in sides.items()}

    m, gp = by("multiplier"), by("goodput")
    mc = g.multiple_comparisons.pairs
    if mc:  # the calls per training token are the Holm-adjusted ones
        c = {
            r: mc[r].call if r in mc else None for r in m["above"] + m["below"] + m["overlaps"] + m["unknown"]
        }
        m = {"above": [r for r in c if c[r] == "better"], "below": [r for r in c if c[r] == "worse"]}
    if m["above"]:
        compute = f"if your limit is compute, take {' or '.join(m['above'])} (called better than {base})"
    elif len(m["below"]) == len(names):
        compute = f"if your limit is compute, keep {base} (every recipe is called worse per training token)"
    else:
        compute = f"if your limit is compute, no recipe is established better than {base} (not called)"
    data = (
        "if it is data, this run does not decide: data goodput (yield x multiplier) values each raw token "
        "trained once, and a team short of data repeats it instead"
    )
    if gp["above"]:
        data += f" ({' and '.join(gp['above'])} above 1 even so)"
    limited = data_limited_decision(g)
    return f"Decision: {compute}; {limited or data}"


def data_limited_decision(g: Goodput) -> str | None:
    """The decision when data is the limit, from the data-limited measurement's own calls (each recipe's
    share of raw's pool repeated against the pool repeated, at each compute-to-data ratio k); None where the
    run made none."""
    rows = [e for e in g.data_limited if e.role == "recipe"]
    if not rows:
        return None
    base = str(g.baseline or "raw")
    ok = [e for e in rows if e.supported]
    if not ok:
        return f"if it is data, the data-limited measurement cannot decide: {rows[0].unsupported_reason}"

    def ks(es: list[Any]) -> str:
        return " and ".join(f"{e.k:g}" for e in sorted(es, key=lambda e: e.k or 0))

    parts = []
    for r in dict.fromkeys(e.recipe for e in ok):
        mine = [e for e in ok if e.recipe == r]
        better = [e for e in mine if e.call == "better"]
        worse = [e for e in mine if e.call == "worse"]
        neither = [e for e in mine if e.call not in ("better", "worse")]
        if better:
            parts.append(f"{r} repeated beats {base} repeated at k = {ks(better)}")
        if worse:
            parts.append(
                f"{base} repeated beats {r} repeated at k = {ks(worse)} (train on all of {base} there)"
            )
        if neither:
            parts.append(f"{r} not called at k = {ks(neither)}")
    return "if it is data (compute = k x the raw data, measured): " + "; ".join(parts)


def scope_sentence(goodput: GoodputLike) -> str | None:
    """What the verdict rests on: the headline target sets' size and the proxy's tokens per parameter,
    flagged when either is small (a target of under 100 documents or items; under 20 tokens/param, far
    from compute-optimal training, so the ranking may not transfer to larger models)."""
    g = as_goodput(goodput)
    sizes = []
    small = False
    for n, e in g.eval_set_info.items():
        if not e.headline:
            continue
        size, unit = (e.docs, "documents") if e.docs is not None else (e.items, "items")
        if size is not None:
            sizes.append(f"{size:,} {unit} ({n})")
            small = small or size < 100
    tpp = g.regime.tokens_per_param
    if tpp is None:
        for p in g.ladder.points:
            if p.name == g.ladder.main:
                tpp = p.tokens_per_param
    parts = []
    if sizes:
        parts.append("a target of " + ", ".join(sizes))
    if tpp is not None:
        parts.append(f"a proxy trained at {num(tpp)} tokens/param")
    if not parts:
        return None
    text = "It rests on " + " and ".join(parts)
    if small or (tpp is not None and tpp < 20):
        why = []
        if small:
            why.append("a target that small gives wide intervals")
        if tpp is not None and tpp < 20:
            why.append(
                "far below the ~20 tokens/param of compute-optimal training, a ranking may not transfer"
            )
        text += ": " + "; ".join(why)
    return text
