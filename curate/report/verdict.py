"""Number formatting shared by the HTML and Markdown reports, and the plain-language verdict.

The verdict is derived only from the numbers in ``manifest.json`` and ``goodput.json``; it calls a
difference only where a confidence interval excludes "no difference" (1.0 for a multiplier or a
goodput, separated intervals for a ranking), and says so when it does not.
"""

from __future__ import annotations

import math
from typing import Any

from curate.report.fmt import DASH, ci_text, count, nbytes, num, pct, ratio

__all__ = ["DASH", "ci_text", "count", "nbytes", "num", "pct", "ratio"]


def goodput_ci(rec: dict[str, Any]) -> tuple[Any, Any]:
    ci = (rec.get("goodput") or {}).get("ci") or [None, None]
    return (ci[0], ci[1]) if len(ci) == 2 else (None, None)


def _side(lo: Any, hi: Any, value: Any, sides: tuple[Any, Any] = (None, None)) -> str:
    """Where an interval sits relative to 1.0: "above", "below", "overlaps" or "unknown". ``sides`` are the
    ends' bound marks: a '<' low end or a '>' high end means the true end may lie anywhere beyond it, so
    the interval is above (below) 1 only when its low (high) end is a number, not such a bound, past 1."""
    if value is None and lo is None:
        return "unknown"
    if lo is not None and lo > 1 and sides[0] != "<":
        return "above"
    if hi is not None and hi < 1 and sides[1] != ">":
        return "below"
    if lo is None and hi is None:
        return "unknown"
    return "overlaps"


def sides_of(rec: dict[str, Any], what: str) -> tuple[Any, Any]:
    """The bound marks of a recipe's multiplier or goodput CI ends; goodput = yield x multiplier (yield > 0)
    shares the multiplier's marks where goodput.json records none of its own."""
    mb = (rec.get("multiplier") or {}).get("bounds") or {}
    if what == "goodput":
        gb = ((rec.get("goodput") or {}).get("bounds") or {}).get("ci")
        if isinstance(gb, list | tuple) and len(gb) == 2:
            return gb[0], gb[1]
    return mb.get("ci_low"), mb.get("ci_high")


def planted_what(pl: dict[str, Any]) -> str:
    """What the planted control was: the null's subsample with a share corrupted (``matched``), or, in a
    file written before controls were matched to a recipe, raw with that share corrupted."""
    share = f"{100 * float(pl.get('fraction') or 0):.0f}%"
    if pl.get("matched"):
        return f"the null's subsample with {share} of its documents word-shuffled"
    return f"{share} of raw word-shuffled"


def pick_recipe(goodput: dict[str, Any]) -> str | None:
    """The non-baseline recipe the verdict is about: the highest goodput, else the highest multiplier."""
    base = goodput.get("baseline")
    recipes = {r: v for r, v in (goodput.get("recipes") or {}).items() if r != base and isinstance(v, dict)}
    if not recipes:
        return None

    def key(r: str) -> tuple[float, float, str]:
        g = (recipes[r].get("goodput") or {}).get("value")
        m = (recipes[r].get("multiplier") or {}).get("value")
        return (-(g if g is not None else -math.inf), -(m if m is not None else -math.inf), r)

    return sorted(recipes, key=key)[0]


def bounded_text(rec: dict[str, Any], what: str) -> str:
    """A recipe's multiplier or goodput with its CI, e.g. ``>2.00x (CI 1.21–>2.00)``: a number at the end of
    the baseline's measured range carries its side (``>`` / ``<``), as it is a bound."""
    block = rec.get(what) or {}
    b = block.get("bounds") or {}
    if what == "multiplier":
        sides = (b.get("value"), b.get("ci_low"), b.get("ci_high"))
        nums = (block.get("value"), block.get("ci_low"), block.get("ci_high"))
    else:  # goodput = yield x multiplier: the multiplier's marks where goodput records none
        glo, ghi = goodput_ci(rec)
        mark = b.get("value") or ((rec.get("multiplier") or {}).get("bounds") or {}).get("value")
        sides, nums = (mark, *sides_of(rec, "goodput")), (block.get("value"), glo, ghi)
    t = [f"{s or ''}{ratio(x)}" for s, x in zip(sides, nums, strict=True)]
    if nums[1] is None and nums[2] is None:
        return f"{t[0]}{'x' if what == 'multiplier' else ''} (CI —)"
    return f"{t[0]}{'x' if what == 'multiplier' else ''} (CI {t[1]}{DASH}{t[2]})"


def recipe_sentence(name: str, rec: dict[str, Any], baseline: str) -> str:
    """One recipe against the baseline, e.g. "curated beats raw: 1.38x tokens-to-target (CI 1.34–1.42)"."""
    m = rec.get("multiplier") or {}
    mv, lo, hi = m.get("value"), m.get("ci_low"), m.get("ci_high")
    side = _side(lo, hi, mv, sides_of(rec, "multiplier"))
    extra = " (extrapolated beyond the baseline's curve)" if m.get("extrapolated") else ""
    b = m.get("bounds") or {}  # '>' / '<': beyond the range the baseline was measured at, a bound
    mtxt = f"{b.get('value') or ''}{ratio(mv)}"
    mci = (
        f"CI {b.get('ci_low') or ''}{ratio(lo)}{DASH}{b.get('ci_high') or ''}{ratio(hi)}"
        if lo is not None
        else ci_text(lo, hi)
    )
    if mv is None:
        head = (
            f"{name} reaches a loss the {baseline} baseline never reaches on its fitted curve "
            f"(multiplier unbounded{extra})"
        )
    elif side == "above":
        head = f"{name} beats {baseline}: {mtxt}x tokens-to-target ({mci}){extra}"
    elif side == "below":
        head = f"{name} is worse than {baseline}: {mtxt}x tokens-to-target ({mci}){extra}"
    else:
        head = (
            f"{name} vs {baseline}: {mtxt}x tokens-to-target ({mci}){extra}, "
            "an interval that includes 1x, so no difference per training token is established"
        )
    y = rec.get("yield")
    g = (rec.get("goodput") or {}).get("value")
    glo, ghi = goodput_ci(rec)
    gside = _side(glo, ghi, g, sides_of(rec, "goodput"))
    parts = [head, f"yield {pct(y)} of tokens"]
    if g is None:
        parts.append("data goodput unknown")
    else:
        parts.append(f"data goodput {bounded_text(rec, 'goodput')}{goodput_words(gside, baseline)}")
    return "; ".join(parts)


def goodput_words(side: str, baseline: str) -> str:
    """What a data goodput interval's place against 1 means, in words."""
    if side == "above":
        return ", above 1 — curation pays: each raw token is worth more than one training token"
    if side == "below":
        return (
            ", below 1 — curation does not pay at this budget when data, not compute, is the limit "
            f"(training on all of the {baseline} data gives more effective tokens)"
        )
    if side == "overlaps":
        return " — whether curation pays is not settled (the interval includes 1)"
    return ""


def ranking_sentence(goodput: dict[str, Any], recipe: str) -> str | None:
    """How ``recipe`` and the baseline compare on eval bpb at T, called only where their CIs separate."""
    base = goodput.get("baseline")
    for p in (goodput.get("ranking") or {}).get("pairs") or []:
        if {p.get("a"), p.get("b")} == {recipe, base}:
            if p.get("separated"):
                better = p.get("better")
                return f"At T its eval bpb CI is separated from {base}'s ({better} is lower)"
            return f"At T its eval bpb CI overlaps {base}'s: the ranking of the two is not called"
    return None


def decision_sentence(goodput: dict[str, Any]) -> str | None:
    """With two or more recipes besides the baseline and the controls: which measures best, and whether
    it is called against each other recipe (the paired interval of the bpb difference at T excludes 0)
    or not, with the run's minimum detectable difference; ``None`` with fewer than two."""
    base = goodput.get("baseline")
    controls = set(goodput.get("controls") or {}) - {"for", "skipped"}
    recs = goodput.get("recipes") or {}
    names = [r for r in recs if r != base and r not in controls]
    value: dict[str, float] = {}
    for r in names:
        v = (recs[r].get("multiplier") or {}).get("value")
        if v is not None:
            value[r] = float(v)
    names = [r for r in names if r in value]
    if len(names) < 2:
        return None
    names.sort(key=lambda r: (-value[r], r))
    best = names[0]

    def m(r: str) -> str:
        g = recs[r].get("goodput") or {}
        text = f"{r} {bounded_text(recs[r], 'multiplier')}"
        if recs[r].get("yield") is not None and g.get("value") is not None:
            text += f" at yield {pct(recs[r]['yield'])}, goodput {bounded_text(recs[r], 'goodput')}"
        return text

    pairs = {
        frozenset((p.get("a"), p.get("b"))): p for p in (goodput.get("ranking") or {}).get("pairs") or []
    }
    calls = []
    for other in [*names[1:], base]:
        p = pairs.get(frozenset((best, other)))
        if p is None:
            continue
        d = p.get("diff_bpb") or {}
        if p.get("separated") and p.get("better") == best:
            calls.append(f"{best} beats {other} (called)")
        elif any(d.get(k) is None for k in ("value", "ci_low", "ci_high")):  # no difference recorded
            calls.append(f"{best} vs {other} not called")
        else:
            v, lo, hi = (float(d[k]) for k in ("value", "ci_low", "ci_high"))
            if p.get("a") != best:  # the pair stores a - b: turn it into best - other
                v, lo, hi = -v, -hi, -lo
            calls.append(
                f"{best} vs {other} not called (paired bpb difference {best} - {other} {v:+.4f} "
                f"[{lo:+.4f}, {hi:+.4f}])"
            )
    text = "Recipes by multiplier: " + ", ".join(m(r) for r in names)
    if calls:
        text += "; " + "; ".join(calls)
    mde = (goodput.get("power") or {}).get("mde_bpb")
    if mde is not None and not all(c.endswith("(called)") for c in calls):
        text += f"; this run separates two recipes only when their bpb differs by more than {mde:.4f}"
    return text


def paired_verdict(goodput: dict[str, Any], v: dict[str, Any], curation: str) -> str:
    """Schema 2: the verdict sentence goodput.json carries (the paired statistic that also calls the
    ranking), the subject's yield and goodput (the same interval scaled by the yield), and the controls."""
    sentences = [str(v["sentence"])]
    rec = (goodput.get("recipes") or {}).get(v.get("recipe") or "") or {}
    if rec:
        g = (rec.get("goodput") or {}).get("value")
        glo, ghi = goodput_ci(rec)
        sentences.append(
            f"Yield {pct(rec.get('yield'))} of tokens, data goodput {bounded_text(rec, 'goodput')}"
            + goodput_words(
                _side(glo, ghi, g, sides_of(rec, "goodput")), str(goodput.get("baseline") or "raw")
            )
        )
    ctl = goodput.get("controls") or {}
    if "null" in ctl:
        sentences.append(
            "Null control: "
            + (
                "inside its interval (no instrument bias seen)"
                if ctl["null"].get("contains_1")
                else str(ctl["null"].get("message"))
            )
        )
    if "planted" in ctl and ctl["planted"].get("called_worse"):  # when not, it is the run's first warning
        pl = ctl["planted"]
        sentences.append(
            "Planted control: "
            + (
                f"{planted_what(pl)} is called worse, so the run can see a known effect of that size"
                if pl.get("called_worse")
                else str(pl.get("message"))
            )
        )
    if "rejected" in ctl:
        sentences.append("Kept vs rejected: " + str(ctl["rejected"].get("message")))
    decision = decision_sentence(goodput)
    if decision:
        sentences.append(decision)
    sentences += [f"Warning: {w}" for w in goodput.get("warnings") or [] if w not in str(v["sentence"])]
    return ". ".join(s.rstrip(".") for s in sentences) + f". Curation {curation}." + _closing(goodput)


def _closing(goodput: dict[str, Any]) -> str:
    """The scope and the decision sentences that end every verdict (each when the run has the data; no
    decision where the run says it cannot support one)."""
    v, dec = goodput.get("verdict"), (goodput.get("controls") or {}).get("decision") or {}
    unsupported = (isinstance(v, dict) and v.get("supported") is False) or dec.get("supported") is False
    out = [s for s in (scope_sentence(goodput), None if unsupported else decision_line(goodput)) if s]
    return "".join(f" {s}." for s in out)


def verdict(manifest: dict[str, Any], goodput: dict[str, Any] | None) -> str:
    """The one-paragraph headline of the report."""
    a = manifest.get("accounting") or {}
    n_in, kept = a.get("input") or 0, a.get("kept") or 0
    curation = f"kept {kept:,} of {n_in:,} documents ({pct(kept / n_in) + ' of documents' if n_in else '—'})"
    if goodput is None:
        return f"{curation}. No proxy runs (no goodput.json): whether the curation helps training is not measured."
    base = str(goodput.get("baseline") or "raw")
    v = goodput.get("verdict")
    if isinstance(v, dict) and v.get("sentence"):
        return paired_verdict(goodput, v, curation)
    r = pick_recipe(goodput)
    if r is None:
        return f"{curation}. goodput.json has no recipe besides the baseline {base}: nothing to compare."
    sentences = [recipe_sentence(r, goodput["recipes"][r], base)]
    rs = ranking_sentence(goodput, r)
    if rs:
        sentences.append(rs)
    return ". ".join(sentences) + f". Curation {curation}." + _closing(goodput)


def _compared(goodput: dict[str, Any]) -> list[str]:
    """The recipes a decision is about: every recipe but the baseline and the controls."""
    base = goodput.get("baseline")
    controls = set(goodput.get("controls") or {}) - {"for", "skipped"}
    recs = goodput.get("recipes") or {}
    return [
        r
        for r, v in recs.items()
        if r != base and r not in controls and isinstance(v, dict) and v.get("role") != "control"
    ]


def decision_line(goodput: dict[str, Any]) -> str | None:
    """The decision a reader can act on, from the run's own calls: per training token (the multiplier's
    interval against 1) when compute is the limit, per raw token (data goodput's) when data is."""
    base = str(goodput.get("baseline") or "raw")
    recs = goodput.get("recipes") or {}
    names = _compared(goodput)
    if not names:
        return None

    def side(r: str, key: str) -> str:
        rec = recs[r].get(key) or {}
        if key == "goodput":
            lo, hi = goodput_ci(recs[r])
            return _side(lo, hi, rec.get("value"), sides_of(recs[r], key))
        return _side(rec.get("ci_low"), rec.get("ci_high"), rec.get("value"), sides_of(recs[r], key))

    def by(key: str) -> dict[str, list[str]]:
        sides: dict[str, list[str]] = {"above": [], "below": [], "overlaps": [], "unknown": []}
        for r in names:
            sides[side(r, key)].append(r)
        value = {r: ((recs[r].get(key) or {}).get("value") or 0.0) for r in names}
        return {k: sorted(v, key=lambda r: (-value[r], r)) for k, v in sides.items()}

    m, g = by("multiplier"), by("goodput")
    mc = (goodput.get("multiple_comparisons") or {}).get("pairs") or {}
    if mc:  # the calls per training token are the Holm-adjusted ones
        c = {r: (mc.get(r) or {}).get("call") for r in m["above"] + m["below"] + m["overlaps"] + m["unknown"]}
        m = {"above": [r for r in c if c[r] == "better"], "below": [r for r in c if c[r] == "worse"]}
    if m["above"]:
        compute = f"if your limit is compute, take {' or '.join(m['above'])} (called better than {base})"
    elif len(m["below"]) == len(names):
        compute = f"if your limit is compute, keep {base} (every recipe is called worse per training token)"
    else:
        compute = f"if your limit is compute, no recipe is established better than {base} (not called)"
    if g["above"]:
        data = f"if it is data, take {' or '.join(g['above'])} (data goodput called above 1)"
    elif g["below"] and len(g["below"]) == len(names):
        data = f"if it is data, train on everything ({base}): every data goodput is called below 1"
    else:
        data = "if it is data, whether curation pays is not settled (a data goodput interval includes 1)"
    return f"Decision: {compute}; {data}"


def scope_sentence(goodput: dict[str, Any]) -> str | None:
    """What the verdict rests on: the headline target sets' size and the proxy's tokens per parameter,
    flagged when either is small (a target of under 100 documents or items; under 20 tokens/param, far
    from compute-optimal training, so the ranking may not transfer to larger models)."""
    info = goodput.get("eval_set_info") or {}
    heads = [n for n, e in info.items() if isinstance(e, dict) and e.get("headline")]
    sizes = []
    small = False
    for n in heads:
        e = info[n]
        size, unit = (e.get("docs"), "documents") if e.get("docs") is not None else (e.get("items"), "items")
        if size is not None:
            sizes.append(f"{size:,} {unit} ({n})")
            small = small or size < 100
    reg = goodput.get("regime") or {}
    tpp = reg.get("tokens_per_param")
    if tpp is None:
        main = (goodput.get("ladder") or {}).get("main")
        for p in (goodput.get("ladder") or {}).get("points") or []:
            if p.get("name") == main:
                tpp = p.get("tokens_per_param")
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
