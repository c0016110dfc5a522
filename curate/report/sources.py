"""Where kept and removed documents came from: the manifest's ``by_source`` (a run of several sources)
as rows, a Markdown table, an HTML table and a fixed-width terminal table."""

from __future__ import annotations

from html import escape
from typing import Any

from curate.report.verdict import pct

HEADER = [
    "source",
    "docs in",
    "kept",
    "rejected",
    "quarantined",
    "tokens kept",
    "tokens removed",
    "of tokens kept",
]


def source_rows(manifest: dict[str, Any]) -> list[list[str]]:
    """One row of cells per source (in the manifest's order), plus a total row; empty when the run
    read one source."""
    by = manifest.get("by_source") or {}
    if not by:
        return []
    all_kept = sum(e["tokens_kept"] for e in by.values())
    rows = []
    for name, e in by.items():
        removed = e["tokens_rejected"] + e["tokens_quarantined"]
        share = pct(e["tokens_kept"] / all_kept) if all_kept else "—"
        cells = [e["input"], e["kept"], e["rejected"], e["quarantined"], e["tokens_kept"], removed]
        rows.append([name, *(f"{c:,}" for c in cells), share])
    totals = [
        sum(e[k] for e in by.values()) for k in ("input", "kept", "rejected", "quarantined", "tokens_kept")
    ]
    removed = sum(e["tokens_rejected"] + e["tokens_quarantined"] for e in by.values())
    rows.append(["all", *(f"{c:,}" for c in [*totals, removed]), pct(1.0) if all_kept else "—"])
    return rows


def _stages(manifest: dict[str, Any]) -> str:
    """Removals per source by stage, one phrase (``web: exact_dedup_v1 12, read 3; ...``)."""
    by = manifest.get("by_source") or {}
    parts = [
        f"{name}: " + ", ".join(f"{s} {n:,}" for s, n in e["by_stage"].items())
        for name, e in by.items()
        if e["by_stage"]
    ]
    return "; ".join(parts)


def _tokens_note(manifest: dict[str, Any]) -> str:
    return f"tokens counted as {manifest.get('tokens_unit') or 'whitespace_words'}"


def markdown(manifest: dict[str, Any]) -> list[str]:
    """The ``## Sources`` section of report.md (no lines for a one-source run)."""
    rows = source_rows(manifest)
    if not rows:
        return []
    out = ["## Sources", "", "| " + " | ".join(HEADER) + " |", "| --- |" + " ---: |" * (len(HEADER) - 1)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    stages = _stages(manifest)
    out += ["", _tokens_note(manifest) + (f"; removed by stage: {stages}" if stages else "") + ".", ""]
    return out


def html(manifest: dict[str, Any]) -> str:
    """The sources table of report.html (empty for a one-source run)."""
    rows = source_rows(manifest)
    if not rows:
        return ""
    cells = [f'<th class="l">{HEADER[0]}</th>', *(f"<th>{h}</th>" for h in HEADER[1:])]
    th = "<tr>" + "".join(cells) + "</tr>"
    body = "".join(
        f'<tr data-source="{escape(r[0])}"><td class="l">{escape(r[0])}</td>'
        + "".join(f"<td>{escape(c)}</td>" for c in r[1:])
        + "</tr>"
        for r in rows
    )
    stages = _stages(manifest)
    note = _tokens_note(manifest) + (f"; removed by stage: {stages}" if stages else "")
    return f'<h3>Sources</h3><table id="sources-table">{th}{body}</table><p class="meta">{escape(note)}.</p>'


def terminal(manifest: dict[str, Any]) -> str:
    """A fixed-width table of the sources for the terminal summary ("" for a one-source run)."""
    rows = source_rows(manifest)
    if not rows:
        return ""
    table = [HEADER, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    lines = [
        "  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])
        for r in table
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
