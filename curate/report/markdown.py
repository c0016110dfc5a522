"""``report.md``: the same numbers as ``report.html``, as GitHub-flavoured Markdown for terminals and PRs."""

from __future__ import annotations

from typing import Any

from curate.goodput.schema import Goodput
from curate.report import front, sources, trust
from curate.report.data import RunData
from curate.report.mixture import markdown_section as mixture_markdown
from curate.report.search import markdown_section as search_markdown
from curate.report.tables import (
    attempts_note,
    counted,
    export_summary,
    extrapolated_parts,
    funnel_rows,
    goodput_columns,
    goodput_rows,
    score_range,
    score_thresholds,
)
from curate.report.verdict import count, nbytes, num, pct


def _cell(text: str) -> str:
    # Markdown table cells: no pipes or newlines from the data.
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,)) -> list[str]:
    """A Markdown table: the header, the alignment row (``left`` columns left, the rest right), the rows;
    pipes and newlines in a cell escaped."""
    align = [":--" if i in left else "--:" for i in range(len(header))]
    out = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def _bootstrap_note(g: Goodput) -> str | None:
    """How the intervals were made: the paired t (schema 2 and later) or the bootstrap (schema 1)."""
    if g.statistics.to_json():
        return "multiplier and goodput CIs and every call: paired t-intervals over seeds; eval bpb bands: bootstrap"
    bs = g.bootstrap
    if not bs.to_json():
        return None
    level = bs.level if bs.level is not None else 0.95
    return f"{round(100 * level)}% bootstrap CIs ({bs.n_boot if bs.has('n_boot') else '?'} resamples)"


def _goodput(g: Goodput | None, error: str | None) -> list[str]:
    out = ["## Data goodput", ""]
    if g is None:
        out.append(
            error
            or "No goodput.json: this run had no `proxy:` section, so the value of the curation for "
            "training is not measured here."
        )
        return [*out, ""]
    facts = [f"baseline **{g.baseline}**"]
    if g.budget is not None:
        facts.append(f"budget T = {count(g.budget)} tokens")
    if g.has("seeds"):
        facts.append(f"seeds {g.seeds}")
    how = _bootstrap_note(g)
    if how:
        facts.append(how)
    out += ["; ".join(facts), ""]
    rows = []
    for r, cols in goodput_rows(g):
        cells = [front.label(g, r)]  # a control marked as one
        for (header, _), cs in zip(goodput_columns(g), cols, strict=True):
            if header == "tokens in → kept":
                text = f"{cs[0].text} → {cs[1].text}"
            elif header == "multiplier":
                star = {k: "*" if v else "" for k, v in extrapolated_parts(g, r).items()}
                text = f"{cs[0].text}{star['value']} ({cs[1].text}{star['ci_low']}–{cs[2].text}{star['ci_high']})"
            elif len(cs) == 3:
                text = f"{cs[0].text} ({cs[1].text}–{cs[2].text})"
            else:
                text = cs[0].text
            cells.append(text)
        rows.append(cells)
    out += md_table(["recipe"] + [h for h, _ in goodput_columns(g)], rows)
    out += [
        "",
        "Values with 95% CIs in parentheses; multipliers are read from the baseline's finished runs at the "
        "budgets in baseline_curve, and '>'/'<' marks a bound beyond that measured range (never extrapolated; "
        "* marks an extrapolated number in reports from before it); yield counts tokens, the funnel documents.",
    ]
    out += front.calls_markdown(g)
    return [*out, "", *trust.markdown(g)]


def _funnel(m: dict[str, Any]) -> list[str]:
    rows = funnel_rows(m)
    a = m.get("accounting") or {}
    out = ["## Funnel", ""]
    if a:
        out += [
            f"input {count(a.get('input'))} = kept {count(a.get('kept'))} + rejected {count(a.get('rejected'))} + "
            f"quarantined {count(a.get('quarantined'))} ({'balanced' if a.get('balanced') else 'NOT BALANCED'})",
            "",
        ]
    out += md_table(
        ["stage", "docs in", "docs out", "removed", "bytes out", "CPU s", "removals by reason"],
        [
            [
                r["name"],
                f"{r['docs_in']:,}",
                f"{r['docs_out']:,}",
                f"{r['removed']:,}",
                nbytes(r["bytes_out"]),
                f"{r['cpu_s']:.1f}",
                ", ".join(
                    [f"{k} {v:,}" for k, v in r["reasons"]]
                    + ([f"counted: {counted(r['counts'])}"] if r["counts"] else [])
                ),
            ]
            for r in rows
        ],
        left=(0, 6),
    )
    out += [
        "",
        f"Curation cost: {sum(r['cpu_s'] for r in rows):,.1f} CPU-seconds; run wall time {num(m.get('wall_s'))} s{attempts_note(m)}.",
        "",
    ]
    return out


def _scores(d: RunData) -> list[str]:
    out = ["## Score distributions", ""]
    if not d.histograms:
        return [*out, "No numeric score columns in this run.", ""]
    rows = [
        [
            h.column,
            f"{h.n_kept:,}",
            num(h.mean_kept),
            f"{h.n_rejected:,}",
            f"{h.n_missing:,}",
            score_range(h),
            score_thresholds(h, stage=True),
        ]
        for h in d.histograms
    ]
    header = ["column", "kept", "mean (kept)", "rejected", "missing", "range", "thresholds"]
    return out + md_table(header, rows, left=(0, 6)) + [""]


def _export(d: RunData) -> list[str]:
    out = ["## Export", ""]
    if d.export is None:
        return [*out, "No export in this run.", ""]
    s = export_summary(d.export)
    out += md_table(
        ["split", "documents", "tokens"],
        [[k, count(v.get("docs")), count(v.get("tokens"))] for k, v in s["splits"].items()],
    )
    out += [
        "",
        *md_table(
            ["format", "files", "bytes", "tokens"],
            [
                [k, f"{v['files']:,}", nbytes(v["bytes"]), count(v["tokens"]) if v["tokens"] else "—"]
                for k, v in sorted(s["formats"].items())
            ],
        ),
    ]
    out += ["", f"sha256 recorded for {s['n_checksummed']:,} of {s['n_files']:,} files.", ""]
    return out


def render_markdown(d: RunData, headline: str) -> str:
    m = d.manifest
    lines = [
        f"# curate report: {m.get('name', d.run_dir.name)}",
        "",
        *front.markdown(m, d.goodput, headline),
        f"created {m.get('created', '?')} · pipeline `{m.get('pipeline', '?')}` · fingerprint {m.get('fingerprint', '?')}",
        "",
    ]
    lines += _goodput(d.goodput, d.goodput_error) + search_markdown(d.search) + mixture_markdown(d.mix)
    lines += _funnel(m) + sources.markdown(m) + _scores(d) + _export(d)
    by_reason = m.get("removed_by_reason") or {}
    if by_reason:
        lines += ["## Removals by reason", ""]
        n_in = (m.get("accounting") or {}).get("input") or 0
        lines += [
            *md_table(
                ["reason", "documents", "of input"],
                [
                    [k, f"{v:,}", pct(v / n_in) if n_in else "—"]
                    for k, v in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
            ),
            "",
        ]
        lines.append("Example documents per reason: see report.html, or `curate inspect RUN_DIR --reason R`.")
    return "\n".join(lines).rstrip() + "\n"
