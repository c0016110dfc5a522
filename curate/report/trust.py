"""The report's "can this verdict be trusted" part: targets, controls, power, the scale ladder, the regime.

Everything is read from ``goodput.json`` (schema 2, ``docs/goodput.md``); a schema-1 file (no
``verdict`` block) gets none of these sections. Each section is rendered as HTML and as Markdown from
the same rows, so the two reports never disagree.
"""

from __future__ import annotations

from html import escape
from typing import Any

from curate.report.card import control_names, label
from curate.report.fmt import sci
from curate.report.verdict import count, num, pct, planted_what, ratio


def multiplier_ci(block: dict[str, Any] | None) -> str:
    """A multiplier with its CI; a number beyond the baseline's measured range reads as a bound (``>2.00``)."""
    if not block or block.get("value") is None:
        return "—"
    b = block.get("bounds") or {}

    def m(key: str) -> str:
        return f"{b.get(key) or ''}{ratio(block.get(key))}"

    if block.get("ci_low") is None:
        return f"{m('value')}x"
    return f"{m('value')}x ({m('ci_low')}–{m('ci_high')})"


def _diff(block: dict[str, Any] | None) -> str:
    if not block or block.get("value") is None:
        return "—"
    if block.get("ci_low") is None:
        return f"{block['value']:+.4f}"
    return f"{block['value']:+.4f} [{block['ci_low']:+.4f}, {block['ci_high']:+.4f}]"


def _mde(mm: dict[str, Any] | None) -> str:
    if not mm or mm.get("worse") is None or mm.get("better") is None:
        return "—"
    return f"<{ratio(mm['worse'])}x or >{ratio(mm['better'])}x"


Section = tuple[str, str, list[str], list[list[str]], list[str]]  # (id, title, header, rows, notes)


def sections(g: dict[str, Any]) -> list[Section]:
    """``(id, title, header, rows, notes)`` per section; empty for a schema-1 ``goodput.json``."""
    if not isinstance(g.get("verdict"), dict):
        return []
    found = (_targets(g), _signal_noise(g), _controls(g), _power(g), _ladder(g), _regime(g))
    return [section for section in found if section is not None]


def _targets(g: dict[str, Any]) -> Section:
    """The eval sets: kind, headline or not, size, origin, decontamination, the baseline's accuracy."""
    info = g.get("eval_set_info") or {}
    base = g.get("baseline")
    rows = []
    for name, d in info.items():
        acc = (g["recipes"].get(base, {}).get("accuracy") or {}).get(name) or {}
        size = f"{d.get('items', 0)} items" if d.get("kind") == "choice" else f"{d.get('docs', 0)} docs"
        rows.append(
            [
                name,
                d.get("kind", "?"),
                "yes" if d.get("headline") else "no",
                size,
                d.get("path")
                or (f"input source {d['source']}" if d.get("source") else "held-out split of the input"),
                ", ".join(f"{r} {n}" for r, n in (d.get("decontaminated") or {}).items() if n) or "0",
                pct(acc.get("at_T")) if acc else "—",
            ]
        )
    notes = [
        "Headline = the sets averaged into the verdict. Choice sets are scored by the bpb of the gold "
        "continuation given its context (accuracy is reported, never the headline at these scales). "
        "Held-out splits of the input measure fit to the raw distribution, which every filter moves "
        "away from: they are never a quality target. Decontaminated = documents each recipe lost to that "
        "set (exact text or a shared 13-gram)."
    ]
    header = ["eval set", "kind", "headline", "size", "from", "decontaminated", f"{base} accuracy at T"]
    return ("targets", "Targets", header, rows, notes)


def _signal_noise(g: dict[str, Any]) -> Section | None:
    """Per eval set, how far the recipes spread (signal) against the seed noise of a recipe's mean; a set
    whose snr is under its threshold is flagged too noisy. Shown only: no set is chosen or weighted by it."""
    info = {n: e["signal_noise"] for n, e in (g.get("eval_set_info") or {}).items() if e.get("signal_noise")}
    if not info:
        return None
    rows = [
        [
            n,
            num(s.get("signal")),
            num(s.get("noise")),
            num(s.get("snr")),
            "TOO NOISY" if s.get("too_noisy") else "ok" if s.get("snr") is not None else "—",
        ]
        for n, s in info.items()
    ]
    methods = sorted({str(s["method"]) for s in info.values() if s.get("method")})
    notes = [
        "Signal = spread of the recipes' mean bpb at T; noise = seed noise of one recipe's mean; a set flagged "
        "too noisy cannot tell these recipes apart at this many seeds. Shown only: no set is chosen, weighted "
        "or dropped by it.",
        *[f"Method: {m}" for m in methods],
    ]
    return (
        "signal-noise",
        "Signal and noise per eval set",
        ["eval set", "signal", "noise", "snr", ""],
        rows,
        notes,
    )


def _controls(g: dict[str, Any]) -> Section | None:
    """The null, planted and rejected controls with their calls; None when the run had none."""
    ctl = g.get("controls") or {}
    rows: list[list[str]] = []
    notes: list[str] = []
    if "null" in ctl:
        n = ctl["null"]
        rows.append(
            [
                "null (random raw subsample)",
                _diff(n.get("diff_bpb")),
                multiplier_ci(n.get("multiplier")),
                "yes" if n.get("contains_1") else "NO",
            ]
        )
        notes.append(n.get("message", ""))
    if "planted" in ctl:
        pl = ctl["planted"]
        rows.append(
            [
                f"planted ({planted_what(pl)})",
                _diff(pl.get("diff_bpb")),
                multiplier_ci(pl.get("multiplier")),
                "called worse" if pl.get("called_worse") else "NOT called worse",
            ]
        )
        notes.append(pl.get("message", ""))
    if "rejected" in ctl:
        r = ctl["rejected"]
        rows.append(
            [
                f"{ctl.get('for')} vs rejected",
                _diff(r.get("diff_bpb_kept_minus_rejected")),
                multiplier_ci(r.get("m_kept_over_m_rejected")),
                r.get("call", "—"),
            ]
        )
        notes.append(r.get("message", ""))
    for name, why in (ctl.get("skipped") or {}).items():
        notes.append(f"{name} control skipped: {why}")
    if not (rows or notes):
        return None
    header = ["control", "paired Δ bpb at T [95% CI]", "multiplier (CI)", "CI contains 1 / call"]
    return ("controls", "Controls", header, rows, notes)


def _power(g: dict[str, Any]) -> Section | None:
    """What the run could have detected, and the seeds each multiplier would need."""
    pw = g.get("power") or {}
    if not pw:
        return None
    mm = pw.get("mde_multiplier") or {}
    rows = [
        [
            ratio(r["multiplier"]) + "x",
            f"{r['diff_bpb']:+.4f}",
            str(r["seeds"]) if r.get("seeds") else "> 1000",
        ]
        for r in pw.get("seeds_needed") or []
    ]
    pair = pw.get("pair")
    notes = [
        (f"For {pair[0]} vs {pair[1]}: " if isinstance(pair, list) and len(pair) == 2 else "")
        + f"{pw.get('n_seeds')} seeds; per-seed difference spread sd = {num(pw.get('sd_diff_bpb'))} bpb; minimum "
        f"detectable difference {num(pw.get('mde_bpb'))} bpb, i.e. multipliers below {ratio(mm.get('worse'))}x or above "
        f"{ratio(mm.get('better'))}x (two-sided 5%, power 80%). The table: seeds needed to detect each "
        "multiplier at this budget and eval size (assuming the same spread).",
        pw.get("note", ""),
    ]
    header = ["multiplier", "Δ bpb at T", "seeds needed"]
    return ("power", "Power: what this run could have detected", header, rows, notes)


def _ladder(g: dict[str, Any]) -> Section | None:
    """One row per point of the scale ladder: its size, each recipe's multiplier, its order and power."""
    lad = g.get("ladder") or {}
    pts = lad.get("points") or []
    if not pts:
        return None
    base = g.get("baseline")
    recipes = [r for r in (g.get("recipes") or {}) if r != base]
    rows = []
    for p in pts:
        rows.append(
            [
                p["name"]
                + (" (main)" if p["name"] == lad.get("main") else "")
                + (" (reference)" if p["name"] == lad.get("reference") else ""),
                num(p.get("params")),
                num(p.get("tokens_per_param")),
                sci(p.get("compute_flops_per_run")),
                str(len(p.get("seeds") or [])),
                *[multiplier_ci((p["recipes"].get(r) or {}).get("multiplier")) for r in recipes],
                " > ".join(label(g, str(x)) for x in p.get("ranking") or []),
                _mde(p.get("mde_multiplier")),
                _accuracy(p, lad),
            ]
        )
    header = [
        "point",
        "params",
        "tokens/param",
        "FLOPs/run",
        "seeds",
        *[f"{r}{' (control)' if r in control_names(g) else ''} multiplier" for r in recipes],
        "order (best first)",
        "detectable",
        "decision accuracy",
    ]
    return ("ladder", "Scale ladder", header, rows, _ladder_notes(lad))


def _regime(g: dict[str, Any]) -> Section | None:
    """This run's size beside published ones, and a GPU projection from FLOPs."""
    reg = g.get("regime") or {}
    if not reg:
        return None
    rows = [
        [
            "this run",
            num(reg.get("params")),
            count(reg.get("tokens")),
            num(reg.get("tokens_per_param")),
            "measured here",
        ]
    ]
    for p in reg.get("published") or []:
        rows.append(
            [
                p["name"],
                num(p.get("params")),
                count(p.get("tokens")),
                num(p.get("tokens_per_param")),
                p.get("note", ""),
            ]
        )
    gp = reg.get("gpu_projection") or {}
    notes = [
        f"A GPU projection from FLOPs (an upper bound, not a measurement: models this small are bound by kernel "
        f"latency, not FLOPs): {gp.get('device')} at {pct(gp.get('mfu'))} MFU would run this point at "
        f"{count(gp.get('this_point_tokens_per_s'))} tokens/s ({num(gp.get('this_point_run_s'))} s a run); a "
        f"DataDecide-like 150M model at 100 tokens/param would take {num(gp.get('datadecide_150m_run_hours'))} "
        "hours a run."
    ]
    return ("regime", "The regime measured", ["", "params", "tokens", "tokens/param", "note"], rows, notes)


def _ladder_notes(lad: dict[str, Any]) -> list[str]:
    """The ladder table's notes: what decision accuracy means, then a warning per failed check."""
    notes = [
        "Decision accuracy (DataDecide): the share of the recipe pairs the reference (largest compute) point "
        "calls that a point orders as the reference does, with a 95% bootstrap interval over both points' "
        "seeds. Detectable: the multipliers each point could tell from 1x with its seeds, so "
        "the table also shows whether more tokens or a larger model buys power at this spread.",
        "The default point, proxy_1m@294,912, comes from the transfer study (docs/goodput.md, measured on the web "
        "input on 2026-12-06, not in this run): it ordered 80% of the pairs a point with 30x its compute "
        "called as that point did, for the least CPU time; proxy_1m at 4x the tokens ordered 100%.",
    ]
    if lad.get("warning"):
        notes.append("Warning: " + lad["warning"])
    if lad.get("null_separated_at"):
        notes.append(
            "Warning: the null control separates from raw at "
            + ", ".join(lad["null_separated_at"])
            + ": rankings there are doubtful."
        )
    if lad.get("planted_not_called_at"):
        notes.append(
            "Warning: the planted control is not called worse at "
            + ", ".join(lad["planted_not_called_at"])
            + ": that point could not see a known effect; rankings there are doubtful."
        )
    return notes


def _accuracy(point: dict[str, Any], ladder: dict[str, Any]) -> str:
    """A point's decision accuracy against the reference; the reference itself (a one-point ladder's only
    point) agrees with itself by definition, which is no evidence, so it shows none."""
    if point.get("name") == ladder.get("reference") or len(ladder.get("points") or []) < 2:
        return "— (reference)"
    acc, ci = point.get("decision_accuracy_vs_reference"), point.get("decision_accuracy_ci")
    if acc is None or not ci:
        return pct(acc)
    return f"{pct(acc)} [{pct(ci[0])}, {pct(ci[1])}]"


def _breakable(text: str) -> str:
    """Escaped cell text that may wrap after an interval's dash, a slash, an '@' or an '_' (recipe names
    join words with it), so a table of many recipes fits the page instead of overflowing it."""
    out = escape(text)
    for ch in ("–", "/", "@", "_"):
        out = out.replace(ch, ch + "<wbr>")
    return out


def html(g: dict[str, Any]) -> str:
    parts = []
    for sid, title, header, rows, notes in sections(g):
        parts.append(f'<h3 id="{sid}">{escape(title)}</h3>')
        if rows:
            head = "".join(f"<th>{_breakable(h)}</th>" for h in header)
            body = "".join(
                "<tr>" + "".join(f"<td>{_breakable(str(c))}</td>" for c in r) + "</tr>" for r in rows
            )
            parts.append(f'<table id="{sid}-table"><tr>{head}</tr>{body}</table>')
        parts += [f'<p class="meta">{escape(n)}</p>' for n in notes if n]
        if sid == "ladder":
            from curate.report.charts import ladder_svg

            svg = ladder_svg(g)
            if svg:
                parts.append(f'<figure id="ladder-chart">{svg}</figure>')
    return "".join(parts)


def markdown(g: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for _, title, header, rows, notes in sections(g):
        out += [f"### {title}", ""]
        if rows:
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
            out.append("")
        out += [n for n in notes if n] + [""]
    return out
