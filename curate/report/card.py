"""The verdict card: at most five short lines that open report.html, report.md and the terminal summary.

(1) the decision, from goodput.json's Holm-adjusted calls (``multiple_comparisons``), or why the run
cannot support one; (2) the best recipe's multiplier with its interval; (3) what the run could not
detect; (4) the controls; (5) the best recipe's data goodput. Every line is read from goodput.json, and
an interval is "above" or "below" 1 only when the whole of it is, bounds included. A file from before a
field existed gets the line that still holds, or none, never a guess.
"""

from __future__ import annotations

from typing import Any

from curate.report.fmt import pct, ratio
from curate.report.verdict import _side, bounded_text, goodput_ci, sides_of, verdict


def control_names(g: dict[str, Any]) -> set[str]:
    """The recipes that are controls (null, planted, rejected ...), never a choice for the reader."""
    ctl = set(g.get("controls") or {}) - {"for", "skipped", "decision"}
    recs = g.get("recipes") or {}
    return ctl | {r for r, v in recs.items() if isinstance(v, dict) and v.get("role") == "control"}


def compared(g: dict[str, Any]) -> list[str]:
    """The recipes a decision is about: every recipe but the baseline and the controls."""
    base, ctl = g.get("baseline"), control_names(g)
    return [
        r for r, v in (g.get("recipes") or {}).items() if r != base and r not in ctl and isinstance(v, dict)
    ]


def label(g: dict[str, Any], name: str) -> str:
    """A recipe's name, marked when it is a control, so a ranking never reads as if it were a choice."""
    return f"{name} (control)" if name in control_names(g) else name


def _verdict(g: dict[str, Any]) -> dict[str, Any]:
    v = g.get("verdict")
    return v if isinstance(v, dict) else {}


def unsupported_reasons(g: dict[str, Any]) -> list[str] | None:
    """Why the run cannot support a decision (``verdict.supported`` or ``controls.decision.supported``
    false), or None when nothing says so."""
    v = _verdict(g)
    dec = (g.get("controls") or {}).get("decision") or {}
    if v.get("supported") is False or dec.get("supported") is False:
        reasons = list(v.get("unsupported_reasons") or []) or list(dec.get("reasons") or [])
        return [str(r).rstrip(".") for r in reasons] or ["a control failed"]
    return None


def best_recipe(g: dict[str, Any]) -> str | None:
    """The compared recipe of highest multiplier among those called better (the decision's calls), else
    among all compared recipes: the best one, not necessarily the recipe the controls were built for."""
    names = compared(g)
    recs = g["recipes"]
    scored = [r for r in names if (recs[r].get("multiplier") or {}).get("value") is not None]
    if not scored:
        return names[0] if names else None
    calls, _ = _calls(g)
    pool = [r for r in scored if calls.get(r) == "better"] or scored
    return sorted(pool, key=lambda r: (-float(recs[r]["multiplier"]["value"]), r))[0]


def _calls(g: dict[str, Any]) -> tuple[dict[str, str], str]:
    """Each compared recipe's call against the baseline and how it was made: Holm-adjusted from
    ``multiple_comparisons`` when present, else the recipe's own interval (bounds respected)."""
    mc = g.get("multiple_comparisons") or {}
    pairs = mc.get("pairs") or {}
    names = compared(g)
    if pairs:
        calls = {r: str((pairs.get(r) or {}).get("call") or "not_called") for r in names}
        n = len(mc.get("family") or names)
        return calls, f"{mc.get('method', 'Holm')}-adjusted across {n} recipe{'s' if n != 1 else ''}"
    recs = g["recipes"]
    calls = {}
    for r in names:
        m = recs[r].get("multiplier") or {}
        side = _side(m.get("ci_low"), m.get("ci_high"), m.get("value"), sides_of(recs[r], "multiplier"))
        calls[r] = {"above": "better", "below": "worse"}.get(side, "not_called")
    how = (
        "from each recipe's own interval, not adjusted for multiple comparisons"
        if len(names) > 1
        else "from its own interval"
    )
    return calls, how


def decision_line(g: dict[str, Any]) -> str:
    """Line 1: what to do, per training token, from the run's calls, or why there is no decision."""
    reasons = unsupported_reasons(g)
    if reasons is not None:
        return "This run cannot support a decision: " + "; ".join(reasons) + "."
    base = str(g.get("baseline") or "raw")
    calls, how = _calls(g)
    if not calls:
        return f"No recipe besides the baseline {base} and the controls: nothing to decide."
    better = [r for r, c in calls.items() if c == "better"]
    worse = [r for r, c in calls.items() if c == "worse"]
    if better:
        text = f"Decision: {' or '.join(better)} called better than {base} per training token"
    elif len(worse) == len(calls):
        text = f"Decision: keep {base}; every recipe is called worse per training token"
    else:
        text = f"Decision: keep {base}; no recipe is called better per training token"
        if worse:
            text += f" ({', '.join(worse)} called worse)"
    return f"{text} (calls {how})."


def best_line(g: dict[str, Any], best: str) -> str:
    """Line 2: the best recipe's multiplier with its interval, bounds as ``>2.00``."""
    base = str(g.get("baseline") or "raw")
    rec = g["recipes"][best]
    if (rec.get("multiplier") or {}).get("value") is None:
        return f"Best recipe: {best}, its multiplier against {base} not measured."
    extra = " (extrapolated beyond the baseline's curve)" if rec["multiplier"].get("extrapolated") else ""
    return f"Best recipe: {best}, multiplier {bounded_text(rec, 'multiplier')} against {base}{extra}."


def mde_line(g: dict[str, Any], best: str | None) -> str | None:
    """Line 3: the effects the run could not detect (its minimum detectable multipliers)."""
    pw = g.get("power") or {}
    by_pair = (pw.get("by_pair") or {}).get(best or "") or {}
    mm = by_pair.get("mde_multiplier") or pw.get("mde_multiplier") or {}
    lo, hi = mm.get("worse"), mm.get("better")
    if lo is None or hi is None:
        return None
    b = mm.get("bounds") or {}
    seeds = pw.get("n_seeds") or (len(g["seeds"]) if isinstance(g.get("seeds"), list) else None)
    with_seeds = f" with {seeds} seeds" if seeds else ""
    return (
        f"Not detectable: effects between {b.get('worse') or ''}{ratio(lo)}x and "
        f"{b.get('better') or ''}{ratio(hi)}x{with_seeds}."
    )


def controls_line(g: dict[str, Any]) -> str | None:
    """Line 4: whether the null and planted controls passed."""
    ctl = g.get("controls") or {}
    parts = []
    if "null" in ctl:
        ok = ctl["null"].get("contains_1")
        parts.append("null passed (no bias seen)" if ok else "null FAILED (it separates from the baseline)")
    if "planted" in ctl:
        pl = ctl["planted"]
        share = f"{100 * float(pl.get('fraction') or 0):.0f}% "
        parts.append(
            f"planted passed ({share}corruption called worse)"
            if pl.get("called_worse")
            else f"planted FAILED ({share}corruption not called worse)"
        )
    skipped = sorted(set(ctl.get("skipped") or {}) & {"null", "planted"})
    parts += [f"{name} skipped" for name in skipped]
    if not parts:
        return "Controls: none run, so the instrument is not checked." if g.get("verdict") else None
    return "Controls: " + "; ".join(parts) + "."


def goodput_line(g: dict[str, Any], best: str) -> str | None:
    """Line 5: the best recipe's data goodput (per raw token), placed against 1 with its bounds."""
    rec = g["recipes"][best]
    gv = (rec.get("goodput") or {}).get("value")
    if gv is None or rec.get("yield") is None:
        return None
    lo, hi = goodput_ci(rec)
    side = _side(lo, hi, gv, sides_of(rec, "goodput"))
    words = {
        "above": "above 1: curation pays even when data is the limit",
        "below": f"below 1: when data is the limit, train on all of {g.get('baseline') or 'raw'}",
        "overlaps": "includes 1: whether curation pays when data is the limit is not settled",
    }.get(side, "interval unknown")
    return f"Data goodput of {best}: {bounded_text(rec, 'goodput')} at yield {pct(rec['yield'])}, {words}."


def card_lines(manifest: dict[str, Any], goodput: dict[str, Any] | None) -> list[str]:
    """The card, at most five lines (fewer where goodput.json lacks what a line needs)."""
    if goodput is None or not isinstance(goodput.get("recipes"), dict):
        return [verdict(manifest, None)]  # what was kept, and that training value is not measured
    best = best_recipe(goodput)
    lines = [decision_line(goodput)]
    if best is not None:
        lines.append(best_line(goodput, best))
    lines += [x for x in (mde_line(goodput, best), controls_line(goodput)) if x]
    if best is not None:
        lines += [x for x in (goodput_line(goodput, best),) if x]
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
        "yield x multiplier: effective training tokens per raw token. Above 1, curation pays even when "
        "data, not compute, is the limit.",
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
        "a recipe with a known answer: null (a random raw subsample, should not separate from raw) and "
        "planted (the null's subsample with a share of its documents word-shuffled, should be called worse). "
        "A failed control "
        "means the run cannot support a decision.",
    ),
    (
        "holm",
        "Holm",
        "with several recipes, the Holm step-down adjustment keeps the chance of any false call at 5% "
        "across all of them; calls use the adjusted p-values.",
    ),
]
