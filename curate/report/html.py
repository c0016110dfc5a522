"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network).

Every string from the run (document texts, ids, reasons, recipe and column names) goes through
:func:`html.escape`; only the SVG that matplotlib wrote is inserted raw.
"""

from __future__ import annotations

from html import escape

from curate.goodput.schema import Goodput
from curate.report import charts, front, sources, trust
from curate.report.data import RunData
from curate.report.examples import Example
from curate.report.mixture import html_section as mixture_html
from curate.report.search import html_section as search_html
from curate.report.tables import (
    Cell,
    attempts_note,
    bounded,
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

CSS = """
:root { --fg:#1d232b; --muted:#5b6673; --line:#dde3ea; --accent:#3b6ea8; --bg:#fff; --soft:#f5f7fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 32px 0 10px;
     border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 14px; margin: 18px 0 6px; }
.meta { color: var(--muted); font-size: 12px; }
.verdict { background: #eef4fb; border-left: 4px solid var(--accent); padding: 12px 16px; margin: 16px 0;
           font-size: 15px; }
.note { background: #fff8e6; border-left: 4px solid #e0a800; padding: 8px 14px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; max-width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; vertical-align: top;
         overflow-wrap: break-word; }
.card { background: #eef4fb; border-left: 4px solid var(--accent); padding: 8px 16px; margin: 12px 0 6px;
        font-size: 15px; } .card ul { margin: 0; padding-left: 18px; } .card p { margin: 4px 0 0; }
#ladder-table { font-size: 12px; } #ladder-table th, #ladder-table td { padding: 4px 5px; }
#forest { margin: 0 0 8px; } dt { font-weight: 600; } dd { margin: 0 0 6px 16px; }
th { background: var(--soft); font-weight: 600; } td.l, th.l { text-align: left; }
.ci { color: var(--muted); font-size: 12px; display: block; white-space: nowrap; }
.flag { color: #a05a00; font-size: 11px; }
.grid { display: flex; flex-wrap: wrap; gap: 10px; } .grid figure { margin: 0; }
svg { max-width: 100%; height: auto; }
details { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; padding: 4px 10px; }
summary { cursor: pointer; font-weight: 600; }
pre.doc { white-space: pre-wrap; word-break: break-word; background: var(--soft); padding: 8px 10px;
          margin: 4px 0 10px; font-size: 12px; max-height: 16em; overflow: auto; }
code { font-size: 12px; }
"""


def _metric(c: Cell) -> str:
    value = "null" if c.value is None else repr(c.value)
    return f'<span data-metric="{escape(c.key)}" data-value="{escape(value)}">{escape(c.text)}</span>'


def _goodput_facts(g: Goodput) -> str:
    """The line above the goodput table: budget, seeds, model, how the intervals were made, baseline."""
    facts = []
    if g.budget is not None:
        facts.append(f"budget T = {count(g.budget)} tokens per run")
    if g.has("seeds"):
        facts.append(f"seeds: {escape(', '.join(map(str, g.seeds)))}")
    model = g.model.to_json()  # every key the file records of the model, as it records them
    if model:
        facts.append(
            "model: "
            + escape(", ".join(f"{k}={v}" for k, v in model.items() if not isinstance(v, dict | list)))
        )
    if g.statistics.to_json():
        facts.append(
            "multiplier and goodput CIs and every call: paired t-intervals over seeds; eval bpb bands: bootstrap"
        )
    elif g.bootstrap.to_json():
        bs = g.bootstrap
        level = bs.level if bs.level is not None else 0.95
        facts.append(
            f"{escape(str(round(100 * level)))}% bootstrap CIs over seeds "
            f"({escape(str(bs.n_boot if bs.has('n_boot') else '?'))} resamples)"
        )
    facts.append(f"baseline: <b>{escape(str(g.baseline))}</b>")
    return f'<p class="meta">{"; ".join(facts)}</p>'


def _goodput_table(g: Goodput) -> str:
    """One row per recipe: each metric with its interval, an extrapolated multiplier flagged."""
    head = "".join(f"<th>{escape(h)}</th>" for h, _ in goodput_columns(g))
    rows = []
    for r, cols in goodput_rows(g):
        tds = []
        for (header, _), cells in zip(goodput_columns(g), cols, strict=True):
            main = _metric(cells[0])
            if header == "tokens in → kept":
                main = f"{_metric(cells[0])} → {_metric(cells[1])}"
            elif header == "multiplier":
                ex = extrapolated_parts(g, r)
                star = {k: "*" if v else "" for k, v in ex.items()}
                main += f"{star['value']}"
                main += f'<span class="ci">CI {_metric(cells[1])}{star["ci_low"]}–{_metric(cells[2])}{star["ci_high"]}</span>'
                if any(ex.values()):
                    main += f'<span class="flag">{"extrapolated" if ex["value"] else "CI bound extrapolated"}</span>'
                elif bounded(g, r):
                    main += '<span class="flag">beyond the measured range: a bound</span>'
            elif len(cells) == 3:
                main += f'<span class="ci">CI {_metric(cells[1])}–{_metric(cells[2])}</span>'
            tds.append(f"<td>{main}</td>")
        flag = '<span class="flag"> control</span>' if r in front.control_names(g) else ""
        rows.append(f'<tr><td class="l"><b>{escape(r)}</b>{flag}</td>{"".join(tds)}</tr>')
    return f'<table id="goodput-table"><tr><th class="l">recipe</th>{head}</tr>{"".join(rows)}</table>'


def _goodput_section(d: RunData) -> str:
    g = d.goodput
    if g is None:
        why = (
            escape(d.goodput_error)
            if d.goodput_error
            else (
                "This run has no <code>goodput.json</code>: it had no <code>proxy:</code> section, so no proxy "
                "models were trained and the value of the curation for training is not measured here."
            )
        )
        return f'<h2 id="goodput">Data goodput</h2><p class="note">{why}</p>'
    out = ['<h2 id="goodput">Data goodput</h2>', _goodput_facts(g), _goodput_table(g)]
    out.append(
        '<p class="meta">multiplier m = t<sub>base</sub>(b<sub>r</sub>(T)) / T (tokens the baseline needs '
        "to reach this recipe's loss, per token trained, read off the baseline's finished runs; &gt;/&lt; = a bound "
        "beyond the tokens the baseline was measured at, never extrapolated); yield = tokens kept / tokens in (tokens, where the funnel counts "
        "documents); data goodput = yield × m (effective training tokens per raw token); effective tokens = "
        "tokens in × goodput; learning signal = (baseline bpb − recipe bpb at T) / T, in bits per byte per "
        "training token.</p>"
    )
    out += front.calls_html(g)
    out.append(trust.html(g))
    svg = charts.loss_curves_svg(g)
    if svg:
        out.append("<h3>Proxy loss curves (mean over seeds, band = CI)</h3>")
        out.append(f'<figure id="loss-curves">{svg}</figure>')
    return "".join(out)


def _funnel_section(d: RunData) -> str:
    m = d.manifest
    rows = funnel_rows(m)
    a = m.get("accounting") or {}
    out = ['<h2 id="funnel">Funnel</h2>']
    if a:
        ok = "balanced" if a.get("balanced") else "NOT BALANCED"
        out.append(
            f"<p>input <b>{count(a.get('input'))}</b> = kept <b>{count(a.get('kept'))}</b> + rejected "
            f"<b>{count(a.get('rejected'))}</b> + quarantined <b>{count(a.get('quarantined'))}</b> ({ok}).</p>"
        )
    if rows:
        out.append(f'<figure id="funnel-chart">{charts.funnel_svg(rows)}</figure>')
    has_tokens = any(r["tokens_out"] is not None for r in rows)
    th = (
        "<tr><th class='l'>stage</th><th>docs in</th><th>docs out</th><th>removed</th><th>bytes in</th>"
        f"<th>bytes out</th>{'<th>tokens out</th>' if has_tokens else ''}<th>wall s</th><th>CPU s</th>"
        "<th class='l'>removals by reason</th></tr>"
    )
    body = []
    for r in rows:
        reasons = "<br>".join(
            [f'<a href="#reason-{_anchor(k)}">{escape(k)}</a> {v:,}' for k, v in r["reasons"]]
            + ([f"counted: {escape(counted(r['counts']))}"] if r["counts"] else [])
        )
        tok = f"<td>{count(r['tokens_out'])}</td>" if has_tokens else ""
        body.append(
            f'<tr data-stage="{escape(r["name"])}"><td class="l">{escape(r["name"])}</td>'
            f'<td data-col="docs_in">{r["docs_in"]:,}</td><td data-col="docs_out">{r["docs_out"]:,}</td>'
            f'<td data-col="removed">{r["removed"]:,}</td><td>{nbytes(r["bytes_in"])}</td>'
            f"<td>{nbytes(r['bytes_out'])}</td>{tok}<td>{r['wall_s']:.1f}</td><td>{r['cpu_s']:.1f}</td>"
            f'<td class="l">{reasons}</td></tr>'
        )
    out.append(f'<table id="funnel-table">{th}{"".join(body)}</table>')
    out.append(sources.html(m))  # a run of several sources: where kept and removed tokens came from
    cpu = sum(r["cpu_s"] for r in rows)
    out.append(
        f"<p class='meta'>Curation cost: {cpu:,.1f} CPU-seconds over all stages "
        f"(run wall time {num(m.get('wall_s'))} s{attempts_note(m)}).</p>"
    )
    by_reason = m.get("removed_by_reason") or {}
    if by_reason:
        n_in = a.get("input") or 0
        trs = "".join(
            f'<tr data-reason="{escape(k)}"><td class="l">{escape(k)}</td><td>{v:,}</td>'
            f"<td>{pct(v / n_in) if n_in else '—'}</td></tr>"
            for k, v in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        out.append(
            f'<h3>Removals by reason</h3><table id="reasons-table"><tr><th class="l">reason</th>'
            f"<th>documents</th><th>of input</th></tr>{trs}</table>"
        )
    return "".join(out)


def _scores_section(d: RunData) -> str:
    out = ['<h2 id="scores">Score distributions</h2>']
    if not d.histograms:
        out.append("<p>No numeric score columns in this run.</p>")
        return "".join(out)
    out.append(
        "<p class='meta'>Kept documents in blue, rejected documents that carry the score in orange "
        "(stacked), over the range of the data; dashed lines are the select thresholds within it, and "
        "one beyond every value is named in the legend. A column of one value is one bar (all v).</p>"
    )

    def grid(hs: list) -> str:
        figs = "".join(
            f'<figure data-column="{escape(h.column)}">{charts.histogram_svg(h)}</figure>' for h in hs
        )
        return f'<div class="grid">{figs}</div>'

    # One histogram per column that removed documents, most removals first; the others folded.
    removing = [h for h in d.histograms if h.removed]
    others = [h for h in d.histograms if not h.removed]
    out.append(grid(removing))
    if others:
        out.append(
            f"<details><summary>{len(others)} more score columns (no removals)</summary>{grid(others)}</details>"
        )
    rows = []
    for h in d.histograms:
        th = escape(score_thresholds(h, stage=True))
        rows.append(
            f'<tr data-column="{escape(h.column)}"><td class="l">{escape(h.column)}</td><td>{h.n_kept:,}</td>'
            f"<td>{num(h.mean_kept)}</td><td>{h.n_rejected:,}</td><td>{h.n_missing:,}</td>"
            f'<td>{score_range(h)}</td><td class="l">{th}</td></tr>'
        )
    out.append(
        '<table id="scores-table"><tr><th class="l">column</th><th>kept</th><th>mean (kept)</th>'
        '<th>rejected</th><th>missing</th><th>range</th><th class="l">thresholds</th></tr>'
        f"{''.join(rows)}</table>"
    )
    return "".join(out)


def _anchor(reason: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in reason)


def _example(e: Example) -> str:
    meta = [f"id <code>{escape(e.id)}</code>", f"source {escape(e.source)}", f"stage {escape(e.stage)}"]
    if e.duplicate_of:
        meta.append(f"duplicate of <code>{escape(str(e.duplicate_of))}</code>")
    if e.detail:
        meta.append(f"detail {escape(e.detail)}")
    more = " …" if e.truncated else ""
    return f'<div class="meta">{" · ".join(meta)}</div><pre class="doc">{escape(e.text)}{more}</pre>'


def _examples_section(d: RunData) -> str:
    by_reason = d.manifest.get("removed_by_reason") or {}
    out = ['<h2 id="examples">Example documents per removal reason</h2>']
    if not by_reason:
        out.append("<p>No documents were removed.</p>")
        return "".join(out)
    for i, (reason, exs) in enumerate(d.examples.items()):
        n = by_reason.get(reason, 0)
        is_open = " open" if i < 6 else ""  # the most frequent reasons start unfolded
        body = "".join(_example(e) for e in exs) or "<p class='meta'>(no sample found in rejected/)</p>"
        out.append(
            f'<details{is_open} id="reason-{_anchor(reason)}" data-reason="{escape(reason)}"><summary>'
            f"{escape(reason)} — {n:,} document{'s' if n != 1 else ''} ({len(exs)} shown)</summary>{body}</details>"
        )
    return "".join(out)


def _export_section(d: RunData) -> str:
    if d.export is None:
        return (
            '<h2 id="export">Export</h2><p class="meta">No export in this run (no <code>export/manifest.json</code>); '
            "<code>curate export RUN_DIR</code> writes one.</p>"
        )
    s = export_summary(d.export)
    out = ['<h2 id="export">Export</h2>']
    splits = "".join(
        f'<tr data-split="{escape(k)}"><td class="l">{escape(k)}</td><td>{count(v.get("docs"))}</td>'
        f"<td>{count(v.get('tokens'))}</td></tr>"
        for k, v in s["splits"].items()
    )
    out.append(
        f'<table id="export-splits"><tr><th class="l">split</th><th>documents</th><th>tokens</th></tr>{splits}</table>'
    )
    fmts = "".join(
        f'<tr><td class="l">{escape(k)}</td><td>{v["files"]:,}</td><td>{nbytes(v["bytes"])}</td>'
        f"<td>{count(v['tokens']) if v['tokens'] else '—'}</td></tr>"
        for k, v in sorted(s["formats"].items())
    )
    out.append(
        f'<table id="export-formats"><tr><th class="l">format</th><th>files</th><th>bytes</th><th>tokens</th></tr>'
        f"{fmts}</table>"
    )
    tok = s["tokenizer"]
    tok_txt = (
        ", ".join(f"{k} {escape(str(v))}" for k, v in tok.items() if k != "sha256" and v is not None)
        or "none"
    )
    out.append(
        f"<p>sha256 recorded for <b>{s['n_checksummed']:,}</b> of {s['n_files']:,} files; tokenizer: {tok_txt}"
        f"{' (sha256 ' + escape(str(tok['sha256'])[:12]) + '…)' if tok.get('sha256') else ''}; "
        f"shuffle seed {escape(str(s['seed']))}, validation fraction {escape(str(s['val_fraction']))}.</p>"
    )
    shards = s["shards"]
    if shards:
        rows = "".join(
            f'<tr><td class="l"><code>{escape(str(f.get("path")))}</code></td><td class="l">'
            f"{escape(str(f.get('format')))}</td><td>{escape(str(f.get('split', '')))}</td>"
            f"<td>{count(f.get('docs'))}</td><td>{count(f.get('tokens'))}</td>"
            f'<td class="l"><code>{escape(str(f.get("sha256") or "")[:16])}</code></td></tr>'
            for f in shards[:60]
        )
        more = f"<p class='meta'>… and {len(shards) - 60:,} more shards.</p>" if len(shards) > 60 else ""
        out.append(
            f'<details><summary>{len(shards):,} shard files</summary><table><tr><th class="l">file</th>'
            f'<th class="l">format</th><th>split</th><th>docs</th><th>tokens</th><th class="l">sha256</th></tr>'
            f"{rows}</table>{more}</details>"
        )
    return "".join(out)


def render_html(d: RunData, headline: str) -> str:
    """The whole page."""
    m = d.manifest
    title = f"curate report: {m.get('name', d.run_dir.name)}"
    eng = m.get("engine") or {}
    meta = " · ".join(
        escape(str(x))
        for x in (
            f"created {m.get('created', '?')}",
            f"pipeline {m.get('pipeline', '?')}",
            f"fingerprint {m.get('fingerprint', '?')}",
            f"engine {eng.get('kind', '?')}",
            f"curate {m.get('curate_version', '?')}",
        )
    )
    versions = ", ".join(
        f"{escape(k)} {escape(str(v))}" for k, v in sorted((m.get("versions") or {}).items())
    )
    nav = " · ".join(
        f'<a href="#{a}">{t}</a>'
        for a, t in (
            ("goodput", "goodput"),
            *((("search", "search"),) if d.search else ()),
            *((("mixture", "mixtures"),) if d.mix else ()),
            ("funnel", "funnel"),
            ("scores", "scores"),
            ("examples", "examples"),
            ("export", "export"),
        )
    )
    body = "".join(
        (
            _goodput_section(d),
            search_html(d.search),
            mixture_html(d.mix),
            _funnel_section(d),
            _scores_section(d),
            _examples_section(d),
            _export_section(d),
        )
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>"
        f'<h1>{escape(title)}</h1><div class="meta">{meta}</div><div class="meta">{nav}</div>'
        f"{front.html(m, d.goodput, headline)}{body}"
        f'<h2 id="versions">Versions</h2><p class="meta">{versions or "—"}</p>'
        "</main></body></html>\n"
    )
