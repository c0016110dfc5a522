"""The report's "can this verdict be trusted" part: targets, controls, power, the scale ladder, the regime.

Everything is read from ``goodput.json`` (:class:`curate.goodput.schema.Goodput`, ``docs/goodput.md``); a
schema-1 file (no ``verdict`` block) gets none of these sections. Each section is rendered as HTML and as
Markdown from the same rows, so the two reports never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from curate.goodput.calls import multiplier_ci
from curate.goodput.schema import (
    Agreement,
    DiffBpb,
    Goodput,
    Ladder,
    LadderPoint,
    MdeMultiplier,
    as_goodput,
)
from curate.report.card import control_names, label
from curate.report.fmt import ladder_warning, row_label, sci
from curate.report.verdict import count, num, pct, ratio

__all__ = ["html", "markdown", "multiplier_ci", "sections"]

GoodputLike = Goodput | Mapping[str, Any]


def _diff(block: DiffBpb) -> str:
    if block.value is None:
        return "—"
    if block.ci_low is None:
        return f"{block.value:+.4f}"
    return f"{block.value:+.4f} [{block.ci_low:+.4f}, {block.ci_high:+.4f}]"


def _mde(mm: MdeMultiplier) -> str:
    if mm.worse is None or mm.better is None:
        return "—"
    return f"<{ratio(mm.worse)}x or >{ratio(mm.better)}x"


Section = tuple[str, str, list[str], list[list[str]], list[str]]  # (id, title, header, rows, notes)


def sections(goodput: GoodputLike) -> list[Section]:
    """``(id, title, header, rows, notes)`` per section; empty for a schema-1 ``goodput.json``."""
    g = as_goodput(goodput)
    if not g.has("verdict"):
        return []
    found = (
        _targets(g),
        _signal_noise(g),
        _controls(g),
        _power(g),
        _data_limited(g),
        _repetition(g),
        _ladder(g),
        _regime(g),
    )
    return [section for section in found if section is not None]


def _targets(g: Goodput) -> Section:
    """The eval sets: kind, headline or not, size, origin, decontamination, the baseline's accuracy."""
    base = g.baseline
    rec = g.recipes.get(base or "")
    rows = []
    for name, d in g.eval_set_info.items():
        acc = rec.accuracy.get(name) if rec is not None else None
        size = (
            f"{d.items if d.has('items') else 0} items"
            if d.kind == "choice"
            else f"{d.docs if d.has('docs') else 0} docs"
        )
        rows.append(
            [
                name,
                str(d.kind) if d.has("kind") else "?",
                "yes" if d.headline else "no",
                size,
                d.path or (f"input source {d.source}" if d.source else "held-out split of the input"),
                ", ".join(f"{r} {n}" for r, n in d.decontaminated.items() if n) or "0",
                pct(acc.at_T) if acc is not None and acc.to_json() else "—",
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


def _signal_noise(g: Goodput) -> Section | None:
    """Per eval set, how far the recipes spread (signal) against the seed noise of a recipe's mean; a set
    whose snr is under its threshold is flagged too noisy. Shown only: no set is chosen or weighted by it."""
    info = {n: e.signal_noise for n, e in g.eval_set_info.items() if e.signal_noise.to_json()}
    if not info:
        return None
    rows = [
        [
            n,
            num(s.signal),
            num(s.noise),
            num(s.snr),
            "TOO NOISY" if s.too_noisy else "ok" if s.snr is not None else "—",
        ]
        for n, s in info.items()
    ]
    methods = sorted({str(s.method) for s in info.values() if s.method})
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


def _controls(g: Goodput) -> Section | None:
    """The controls with their calls; None when the run had none."""
    ctl = g.controls.checks
    rows: list[list[str]] = []
    notes: list[str] = []
    for name, blk in ctl.items():  # each by the fields its kind writes
        if blk.contains_1 is not None:  # a control that should not separate from the baseline
            rows.append(
                [
                    row_label(name, blk),
                    _diff(blk.diff_bpb),
                    multiplier_ci(blk.multiplier),
                    "yes" if blk.contains_1 else "NO",
                ]
            )
        elif blk.called_worse is not None:  # a control built worse: it should be called worse
            rows.append(
                [
                    row_label(name, blk),
                    _diff(blk.diff_bpb),
                    multiplier_ci(blk.multiplier),
                    "called worse" if blk.called_worse else "NOT called worse",
                ]
            )
        elif blk.has("diff_bpb_kept_minus_rejected"):  # the controlled recipe against what it dropped
            rows.append(
                [
                    f"{g.controls.for_} vs {name}",
                    _diff(blk.diff_bpb_kept_minus_rejected),
                    multiplier_ci(blk.m_kept_over_m_rejected),
                    str(blk.call) if blk.has("call") else "—",
                ]
            )
        else:
            continue
        notes.append(blk.message or "")
    for name, why in g.controls.skipped.items():
        notes.append(f"{name} control skipped: {why}")
    if not (rows or notes):
        return None
    header = ["control", "paired Δ bpb at T [95% CI]", "multiplier (CI)", "CI contains 1 / call"]
    return ("controls", "Controls", header, rows, notes)


def _power(g: Goodput) -> Section | None:
    """What the run could have detected, and the seeds each multiplier would need."""
    pw = g.power
    if not pw.to_json():
        return None
    mm = pw.mde_multiplier
    rows = [
        [
            ratio(r.multiplier) + "x",
            f"{r.diff_bpb:+.4f}",
            str(r.seeds) if r.seeds else "> 1000",
        ]
        for r in pw.seeds_needed
    ]
    pair = pw.pair
    notes = [
        (f"For {pair[0]} vs {pair[1]}: " if isinstance(pair, list) and len(pair) == 2 else "")
        + f"{pw.n_seeds} seeds; per-seed difference spread sd = {num(pw.sd_diff_bpb)} bpb; minimum "
        f"detectable difference {num(pw.mde_bpb)} bpb, i.e. multipliers below {ratio(mm.worse)}x or above "
        f"{ratio(mm.better)}x (two-sided 5%, power 80%). The table: seeds needed to detect each "
        "multiplier at this budget and eval size (assuming the same spread).",
        pw.note or "",
    ]
    header = ["multiplier", "Δ bpb at T", "seeds needed"]
    return ("power", "Power: what this run could have detected", header, rows, notes)


def _one(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


def _data_limited(g: Goodput) -> Section | None:
    """The data-limited comparison (``proxy.data_limited``): each recipe's share of raw's pool repeated
    against the pool repeated, at each k, and the arm's null; None when the run made none."""
    if not g.data_limited:
        return None
    rows = []
    for e in g.data_limited:
        ep = e.epochs_at_T
        if e.role == "control":
            verdict = "within the margin" if e.passed else "NOT shown within the margin"
        elif not e.supported:
            verdict = f"{e.call} (no decision)"
        else:
            verdict = str(e.call)
        rows.append(
            [
                f"{e.k:g}",
                f"{e.recipe} (control)" if e.role == "control" else str(e.recipe),
                f"{_one(ep.recipe)} / {_one(ep.baseline)}",
                _diff(e.diff_bpb),
                multiplier_ci(e.goodput) if e.role == "recipe" else "—",
                ratio(e.goodput_trained_once) if e.goodput_trained_once is not None else "—",
                verdict,
            ]
        )
    notes = [e.sentence or "" for e in g.data_limited if e.role == "recipe"]
    notes += [e.message or "" for e in g.data_limited if e.role == "control"]
    header = [
        "k (compute / data)",
        "recipe",
        "epochs (recipe / raw)",
        "paired Δ bpb at T [95% CI]",
        "data-limited goodput (CI)",
        "yield x multiplier",
        "call",
    ]
    return ("data-limited", "When data is the limit: repeated against repeated", header, rows, notes)


def _repetition(g: Goodput) -> Section | None:
    """What repetition costs this proxy, beside Muennighoff et al.'s fit; None without the curve."""
    rc = g.repetition_curve
    if not rc.points:
        return None
    rows = [
        [
            _one(p.epochs_at_T),
            _diff(p.diff_bpb),
            multiplier_ci(p.fresh_equivalent),
            num(p.muennighoff, 2),
            {"less": "loses less", "more": "loses more", "as_fit": "as the fit"}.get(
                str(p.against_muennighoff), "—"
            ),
        ]
        for p in rc.points
    ]
    header = [
        "epochs of raw's pool",
        "Δ bpb vs fresh [95% CI]",
        "worth of fresh data (CI)",
        "Muennighoff",
        "this proxy",
    ]
    return (
        "repetition",
        "What repetition costs this proxy",
        header,
        rows,
        [rc.sentence or "", rc.muennighoff or ""],
    )


def _ladder(g: Goodput) -> Section | None:
    """One row per point of the scale ladder: its size, each recipe's multiplier, its order and power."""
    lad = g.ladder
    if not lad.points:
        return None
    recipes = [r for r in g.recipes if r != g.baseline]
    rows = []
    for p in lad.points:
        rows.append(
            [
                str(p.name)
                + (" (main)" if p.name == lad.main else "")
                + (" (reference)" if p.name == lad.reference else ""),
                num(p.params),
                num(p.tokens_per_param),
                sci(p.compute_flops_per_run),
                str(len(p.seeds)),
                *[multiplier_ci(p.recipes[r].multiplier if r in p.recipes else None) for r in recipes],
                " > ".join(label(g, str(x)) for x in p.ranking),
                _mde(p.mde_multiplier),
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
        "decision accuracy: every pair, weighted; on the reference's calls",
    ]
    return ("ladder", "Scale ladder", header, rows, _ladder_notes(lad))


def _regime(g: Goodput) -> Section | None:
    """This run's size beside published ones, and a GPU projection from FLOPs."""
    reg = g.regime
    if not reg.to_json():
        return None
    rows = [
        [
            "this run",
            num(reg.params),
            count(reg.tokens),
            num(reg.tokens_per_param),
            "measured here",
        ]
    ]
    for p in reg.published:
        rows.append([str(p.name), num(p.params), count(p.tokens), num(p.tokens_per_param), p.note or ""])
    gp = reg.gpu_projection
    notes = [
        f"A GPU projection from FLOPs (an upper bound, not a measurement: models this small are bound by kernel "
        f"latency, not FLOPs): {gp.device} at {pct(gp.mfu)} MFU would run this point at "
        f"{count(gp.this_point_tokens_per_s)} tokens/s ({num(gp.this_point_run_s)} s a run); a "
        f"DataDecide-like 150M model at 100 tokens/param would take {num(gp.datadecide_150m_run_hours)} "
        "hours a run."
    ]
    return ("regime", "The regime measured", ["", "params", "tokens", "tokens/param", "note"], rows, notes)


def _ladder_notes(lad: Ladder) -> list[str]:
    """The ladder table's notes: what decision accuracy means and what it is read against, whether the
    points' seeds are disjoint, then a warning per failed check."""
    notes = [
        "Decision accuracy: the share of the pairs of non-control recipes (the baseline among them) a point "
        "orders as the reference (largest compute) point does; over every pair, each weighted by how sure the "
        "reference is of its sign (1 - p of its paired t), and over the pairs the reference calls after Holm's "
        "adjustment, with 95% intervals from a bootstrap over recipes and seeds. Detectable: the multipliers "
        "each point could tell from 1x with its seeds, so the table also shows whether more tokens or a larger "
        "model buys power at this spread."
    ]
    if lad.has("chance"):
        notes.append(_read_against(lad))
    if lad.seeds_disjoint is False:
        shared = "; ".join(f"seed {s} at {', '.join(names)}" for s, names in lad.shared_seeds.items())
        notes.append(
            f"The points share seeds ({shared}): they share initialisation and data order, which inflates their "
            "agreement and narrows its interval; proxy.disjoint_seeds gives every point seeds of its own."
        )
    notes.append(
        "Whether the web reference point's rankings transfer to more compute was measured by the transfer "
        "study (docs/goodput.md; benchmarks/results/transfer_ladder-web-2026-12-08.json): 25 recipes, 300 "
        "pairs, each point on seeds of its own. Against 30.5x its compute, every pair weighted by how sure "
        "that point is of its sign, "
        "it orders 80% [65%, 89%] of the pairs as the 30.5x point does, "
        "against a noise ceiling of 90% [82%, 95%] and chance 50%, "
        "and all 112 pairs the 30.5x point calls after Holm's adjustment alike; no filter was shown to fade "
        "or grow with compute. That ladder's own reading is the table above."
    )
    if lad.warning:
        notes.append("Warning: " + lad.warning)
    for key, names in lad.failed_at.items():  # each control kind's failed points (its ladder_failure)
        notes.append(ladder_warning(key, names))
    return notes


def _share(a: Agreement) -> str:
    """``83.3% [70.0%, 95.0%]``: an agreement with its interval (the value alone without one)."""
    if a.value is None:
        return "—"
    return pct(a.value) + (f" [{pct(a.ci[0])}, {pct(a.ci[1])}]" if a.ci else "")


def _read_against(lad: Ladder) -> str:
    """The ceiling and the floor a point's decision accuracy is read against."""
    nc = lad.noise_ceiling
    chance = f"chance is {pct(lad.chance)}"
    if nc.all_pairs_weighted.value is None:
        return (
            f"Read it against chance ({pct(lad.chance)}); the noise ceiling (the reference's seeds split in "
            "halves) needs 4 seeds at the reference point."
        )
    calls = _share(nc.called) if nc.called.value is not None else "none (no pair called at half the seeds)"
    return (
        f"Read it against the noise ceiling, the reference point against itself with half its seeds against "
        f"the other half ({nc.splits} splits): {_share(nc.all_pairs_weighted)} over every pair, {calls} on the "
        f"calls; a point at the ceiling ranks as well as seed noise allows (each half has half the "
        f"reference's seeds, so the ceiling is conservative); {chance}."
    )


def _accuracy(point: LadderPoint, ladder: Ladder) -> str:
    """:func:`_accuracies` in one cell: every pair (weighted); the reference's calls."""
    every, calls = _accuracies(point, ladder)
    if every == calls or every == "—":
        return calls
    return f"{every}; {calls}"


def _accuracies(point: LadderPoint, ladder: Ladder) -> list[str]:
    """A point's decision accuracy against the reference, over every pair (weighted) and over the
    reference's calls; the reference itself (a one-point ladder's only point) agrees with itself by
    definition, which is no evidence, so it shows none. A run before 2026-12-07 has only the share of the
    pairs the reference called (unadjusted), shown with the calls."""
    if point.name == ladder.reference or len(ladder.points) < 2:
        return ["— (reference)", "— (reference)"]
    acc = point.decision_accuracy
    if not acc.present:
        old = point.decision_accuracy_vs_reference
        ci = point.decision_accuracy_ci
        return [
            "—",
            pct(old)
            + (f" [{pct(ci[0])}, {pct(ci[1])}] (its calls, unadjusted)" if old is not None and ci else ""),
        ]
    called = acc.called
    calls = "no pair called" if called.value is None else f"{_share(called)} of {called.pairs}"
    return [f"{_share(acc.all_pairs_weighted)} of {acc.all_pairs_weighted.pairs}", calls]


def _breakable(text: str) -> str:
    """Escaped cell text that may wrap after an interval's dash, a slash, an '@' or an '_' (recipe names
    join words with it), so a table of many recipes fits the page instead of overflowing it."""
    out = escape(text)
    for ch in ("–", "/", "@", "_"):
        out = out.replace(ch, ch + "<wbr>")
    return out


def html(goodput: GoodputLike) -> str:
    g = as_goodput(goodput)
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


def markdown(goodput: GoodputLike) -> list[str]:
    g = as_goodput(goodput)
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
