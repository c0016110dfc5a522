"""The top of report.html and report.md: the verdict card, the forest plot, the glossary, then the verdict
in full; and the ranking and agreement lines of the goodput section (controls marked, Holm named)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from curate.goodput.schema import DecisionAgreement, Goodput, as_goodput
from curate.report.card import GLOSSARY, card_lines, control_names, label
from curate.report.fmt import pct

__all__ = ["calls_html", "calls_markdown", "control_names", "html", "label", "markdown"]

GoodputLike = Goodput | Mapping[str, Any]


def _ranking(g: Goodput, sep: str) -> str | None:
    """The ranking tiers, each control marked as one (it is no choice for the reader)."""
    tiers = g.ranking.tiers
    if not tiers:
        return None
    return sep.join(" = ".join(label(g, str(x)) for x in t) for t in tiers)


def holm_note(goodput: GoodputLike) -> str | None:
    """Where calls are listed: that they are Holm-adjusted across the compared recipes, when they are."""
    g = as_goodput(goodput)
    mc = g.multiple_comparisons
    if not mc.pairs:
        return None
    n = len(mc.family or mc.pairs)
    method = mc.method if mc.has("method") else "Holm"
    alpha = mc.alpha if mc.has("alpha") else 0.05
    return (
        f"Calls of the {n} recipe{'s' if n != 1 else ''} against {g.baseline or 'raw'} are "
        f"{method}-adjusted (family-wise {pct(alpha)})"
        + (f": {str(mc.note).rstrip('.')}." if mc.note else ".")
    )


def agreement(goodput: GoodputLike) -> DecisionAgreement | None:
    """The ladder's decision agreement (finished points only, controls excluded), when the run has it;
    a top-level ``decision_agreement`` (schema 1, from un-cooled checkpoints) is not shown."""
    da = as_goodput(goodput).ladder.decision_agreement
    return da if da.value is not None else None


def _pairs(da: DecisionAgreement) -> str:
    return str(da.pairs) if da.has("pairs") else "?"


def calls_html(goodput: GoodputLike) -> list[str]:
    g = as_goodput(goodput)
    out = []
    rk = _ranking(g, " > ")
    if rk is not None:
        metric = escape(str(g.ranking.metric if g.ranking.has("metric") else "bpb at T"))
        out.append(f"<p>Ranking ({metric}); tiers where a pair is not called: <b>{escape(rk)}</b>.</p>")
    note = holm_note(g)
    if note:
        out.append(f'<p class="meta" id="holm-note">{escape(note)}</p>')
    da = agreement(g)
    if da is not None:
        out.append(
            f"<p>Decision agreement across the finished ladder points: <b>{pct(da.value)}</b> of "
            f"{escape(_pairs(da))} recipe pairs ordered the same (controls excluded).</p>"
        )
    return out


def calls_markdown(goodput: GoodputLike) -> list[str]:
    g = as_goodput(goodput)
    out = []
    rk = _ranking(g, " > ")
    if rk is not None:
        out.append(f"Ranking (a pair is called only where its interval excludes no difference): {rk}.")
    note = holm_note(g)
    if note:
        out.append(note)
    da = agreement(g)
    if da is not None:
        out.append(
            f"Decision agreement across the finished ladder points: {pct(da.value)} of "
            f"{_pairs(da)} recipe pairs (controls excluded)."
        )
    return out


def glossary_html() -> str:
    items = "".join(
        f'<dt id="g-{a}">{escape(term)}</dt><dd>{escape(text)}</dd>' for a, term, text in GLOSSARY
    )
    return f'<details id="glossary"><summary>Glossary</summary><dl>{items}</dl></details>'


def html(manifest: dict[str, Any], goodput: GoodputLike | None, headline: str) -> str:
    """The card, the forest plot, a link to the glossary, the glossary and the verdict in full."""
    from curate.report.forest import forest_svg

    lines = "".join(f"<li>{escape(x)}</li>" for x in card_lines(manifest, goodput))
    out = [
        f'<section class="card" id="card"><ul>{lines}</ul>'
        '<p class="meta"><a href="#glossary">Glossary</a>: called, multiplier, goodput, tokens/param, '
        "detectable effect, control, Holm.</p></section>"
    ]
    svg = forest_svg(goodput) if goodput else None
    if svg:
        out.append(f'<figure id="forest">{svg}</figure>')
    out.append(glossary_html())
    out.append(
        '<details id="verdict-full"><summary>The verdict in full</summary>'
        f'<p class="verdict" id="verdict">{escape(headline)}</p></details>'
    )
    return "".join(out)


def markdown(manifest: dict[str, Any], goodput: GoodputLike | None, headline: str) -> list[str]:
    out = [f"> {x}  " for x in card_lines(manifest, goodput)]
    out[-1] = out[-1].rstrip()
    out += ["", "<details><summary>Glossary</summary>", ""]
    out += [f"- **{term}**: {text}" for _, term, text in GLOSSARY]
    out += ["", "</details>", "", f"The verdict in full: {headline}", ""]
    return out
