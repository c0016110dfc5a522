"""The top of report.html and report.md: the verdict card, the forest plot, the glossary, then the verdict
in full; and the ranking and agreement lines of the goodput section (controls marked, Holm named)."""

from __future__ import annotations

from html import escape
from typing import Any

from curate.report.card import GLOSSARY, card_lines, control_names, label

__all__ = ["calls_html", "calls_markdown", "control_names", "html", "label", "markdown"]
from curate.report.fmt import pct


def _ranking(g: dict[str, Any], sep: str) -> str | None:
    """The ranking tiers, each control marked as one (it is no choice for the reader)."""
    tiers = (g.get("ranking") or {}).get("tiers")
    if not tiers:
        return None
    return sep.join(" = ".join(label(g, str(x)) for x in t) for t in tiers)


def holm_note(g: dict[str, Any]) -> str | None:
    """Where calls are listed: that they are Holm-adjusted across the compared recipes, when they are."""
    mc = g.get("multiple_comparisons") or {}
    if not mc.get("pairs"):
        return None
    n = len(mc.get("family") or mc["pairs"])
    return (
        f"Calls of the {n} recipe{'s' if n != 1 else ''} against {g.get('baseline') or 'raw'} are "
        f"{mc.get('method', 'Holm')}-adjusted (family-wise {pct(mc.get('alpha', 0.05))})"
        + (f": {str(mc['note']).rstrip('.')}." if mc.get("note") else ".")
    )


def agreement(g: dict[str, Any]) -> dict[str, Any] | None:
    """The ladder's decision agreement (finished points only, controls excluded), when the run has it;
    a top-level ``decision_agreement`` (from un-cooled checkpoints) is not shown."""
    da = (g.get("ladder") or {}).get("decision_agreement")
    return da if isinstance(da, dict) and da.get("value") is not None else None


def calls_html(g: dict[str, Any]) -> list[str]:
    out = []
    rk = _ranking(g, " > ")
    if rk is not None:
        metric = escape(str((g.get("ranking") or {}).get("metric", "bpb at T")))
        out.append(f"<p>Ranking ({metric}); tiers where a pair is not called: <b>{escape(rk)}</b>.</p>")
    note = holm_note(g)
    if note:
        out.append(f'<p class="meta" id="holm-note">{escape(note)}</p>')
    da = agreement(g)
    if da is not None:
        out.append(
            f"<p>Decision agreement across the finished ladder points: <b>{pct(da['value'])}</b> of "
            f"{escape(str(da.get('pairs', '?')))} recipe pairs ordered the same (controls excluded).</p>"
        )
    return out


def calls_markdown(g: dict[str, Any]) -> list[str]:
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
            f"Decision agreement across the finished ladder points: {pct(da['value'])} of "
            f"{da.get('pairs', '?')} recipe pairs (controls excluded)."
        )
    return out


def glossary_html() -> str:
    items = "".join(
        f'<dt id="g-{a}">{escape(term)}</dt><dd>{escape(text)}</dd>' for a, term, text in GLOSSARY
    )
    return f'<details id="glossary"><summary>Glossary</summary><dl>{items}</dl></details>'


def html(manifest: dict[str, Any], goodput: dict[str, Any] | None, headline: str) -> str:
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


def markdown(manifest: dict[str, Any], goodput: dict[str, Any] | None, headline: str) -> list[str]:
    out = [f"> {x}  " for x in card_lines(manifest, goodput)]
    out[-1] = out[-1].rstrip()
    out += ["", "<details><summary>Glossary</summary>", ""]
    out += [f"- **{term}**: {text}" for _, term, text in GLOSSARY]
    out += ["", "</details>", "", f"The verdict in full: {headline}", ""]
    return out
