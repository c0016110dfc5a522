"""The report's figures, drawn with matplotlib (Agg) and inlined as SVG text.

SVG keeps the report one self-contained file with crisp, searchable text. Output is deterministic
(fixed hash salt, no date metadata) so a rebuilt report of the same run is byte-identical.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from curate.goodput.schema import Goodput, LadderPoint, Recipe, as_goodput
from curate.report.card import label
from curate.report.fmt import sci
from curate.report.histograms import Histogram
from curate.report.verdict import nbytes, num

KEPT, REJECTED, THRESH = "#3b6ea8", "#d9822b", "#c0392b"
RC: Any = {
    "svg.fonttype": "none",
    "svg.hashsalt": "curate-report",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.family": "sans-serif",
}


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    # Drop the XML prolog and DOCTYPE (the <svg> element is embedded in HTML) and the RDF metadata
    # block (namespace URLs that are not needed to draw anything).
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text, count=1, flags=re.S)


def funnel_svg(stages: list[dict[str, Any]]) -> str:
    """Documents and bytes after each stage, as two horizontal bar charts side by side."""
    names = [s["name"] for s in stages]
    with plt.rc_context(RC):
        fig, axes = plt.subplots(
            1, 2, figsize=(9, 0.45 * len(names) + 1.0), sharey=True, layout="constrained"
        )
        y = np.arange(len(names))[::-1]
        for ax, key, title in ((axes[0], "docs", "documents"), (axes[1], "bytes", "text bytes")):
            din = np.array([s[f"{key}_in"] for s in stages], dtype=float)
            dout = np.array([s[f"{key}_out"] for s in stages], dtype=float)
            ax.barh(y, din, color="#dfe6ee", label="in")
            ax.barh(y, dout, color=KEPT, label="out")
            ax.set_title(f"{title} in → out per stage", fontsize=9)
            ax.set_yticks(y, names)
            top = max(din.max(initial=0), 1.0)
            for yi, v in zip(y, dout, strict=True):
                ax.text(
                    v + top * 0.01, yi, f"{v:,.0f}" if key == "docs" else nbytes(v), va="center", fontsize=8
                )
            ax.set_xlim(0, top * 1.25)
            ax.xaxis.set_visible(False)
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        return _svg(fig)


def histogram_svg(h: Histogram) -> str:
    """Kept and rejected values of one score column, stacked, over the data's range only: a select
    threshold inside it is a dashed line, one beyond it is named in the legend (the axis is not stretched
    to reach it). A column of one value is one bar at that value, titled ``all <value>``."""
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(4.2, 2.4), layout="constrained")
        # One value: a narrow bar centred on it, the value its only tick.
        left, widths = (
            (h.edges[:1] - 0.2, np.full(1, 0.4)) if h.constant else (h.edges[:-1], np.diff(h.edges))
        )
        ax.bar(left, h.kept, width=widths, align="edge", color=KEPT, label=f"kept ({h.n_kept:,} documents)")
        if h.n_rejected:
            ax.bar(
                left,
                h.rejected,
                width=widths,
                align="edge",
                bottom=h.kept,
                color=REJECTED,
                label=f"rejected ({h.n_rejected:,} documents)",
            )
        for th in h.thresholds:
            if not h.inside(th):
                side = "above" if th.value > h.hi else "below"
                ax.plot([], [], " ", label=f"{th.kind} {th.value:g}: {side} every value")
                continue
            ax.axvline(th.value, color=THRESH, linestyle="--", linewidth=1.2)
            ax.annotate(
                f"{th.kind} {th.value:g}",
                xy=(th.value, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -10),
                textcoords="offset points",
                color=THRESH,
                fontsize=8,
            )
        if h.constant:
            ax.set_xlim(h.lo - 1, h.hi + 1)
            ax.set_xticks([h.lo], [num(h.lo)])
        ax.set_title(f"{h.column}: all {num(h.lo)}" if h.constant else h.column, fontsize=9)
        ax.set_ylabel("documents")
        ax.margins(y=0.35)  # room above the bars for the legend
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: "every value" in labels[i])  # bars first
        ax.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            fontsize=7,
            frameon=False,
            loc="upper right",
        )
        return _svg(fig)


def loss_curves_svg(goodput: Goodput | Mapping[str, Any]) -> str | None:
    """Eval bpb against training tokens per recipe, one panel per eval set, with the CI band over seeds."""
    g = as_goodput(goodput)
    recipes = g.recipes
    sets = sorted({s for rec in recipes.values() for s in rec.curves})
    if not sets:
        return None
    colors = [f"C{i}" for i in range(10)]  # the default colour cycle
    order = sorted(recipes, key=lambda r: (r != g.baseline, r))
    with plt.rc_context(RC):
        ncol = min(len(sets), 3)
        nrow = math.ceil(len(sets) / ncol)
        fig, axes = plt.subplots(
            nrow, ncol, figsize=(4.3 * ncol, 3.0 * nrow), squeeze=False, layout="constrained"
        )
        for k, name in enumerate(sets):
            ax = axes[k // ncol][k % ncol]
            for i, r in enumerate(order):
                c = recipes[r].curves.get(name)
                if c is None or not c.tokens:
                    continue
                t = np.asarray(c.tokens, dtype=float)
                color = colors[i % len(colors)]
                ax.plot(t, _arr(c.bpb_mean), marker="o", markersize=3, color=color, label=r)
                lo, hi = _arr(c.bpb_ci_low), _arr(c.bpb_ci_high)
                if len(lo) == len(t) and len(hi) == len(t):
                    ax.fill_between(t, lo, hi, color=color, alpha=0.2, linewidth=0)
            ax.set_xscale("log")
            ticks = _eval_points(recipes, name)
            if ticks:
                labels = [_short_count(x) for x in ticks]
                keep = thin_ticks(ticks, labels, ax.get_xlim(), axis_in=3.2, log=True, must=ticks[-1])
                ax.set_xticks([ticks[k] for k in keep], [labels[k] for k in keep])
                ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel("training tokens")
            ax.set_ylabel("eval bits per byte")
            ax.set_title(name, fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, frameon=False)
        for k in range(len(sets), nrow * ncol):
            axes[k // ncol][k % ncol].set_visible(False)
        return _svg(fig)


def thin_ticks(
    values: list[float],
    labels: list[str],
    lim: tuple[float, float],
    *,
    axis_in: float,
    log: bool = False,
    must: float | None = None,
    fontsize: float = 9.0,
) -> list[int]:
    """The indices of the ticks to label so that no two labels collide on an axis ``axis_in`` inches long
    over ``lim``: ``must`` (e.g. 1x) first, then left to right, each kept only when it clears every kept
    label by a gap (a label's width estimated generously, as a browser's font may be wider than
    matplotlib's)."""
    f = (lambda v: math.log(v)) if log else (lambda v: v)
    lo, hi = f(lim[0]), f(lim[1])
    span = (hi - lo) or 1.0
    pos = [(f(v) - lo) / span * axis_in for v in values]
    half = [0.5 * len(t) * 0.68 * fontsize / 72 for t in labels]
    order = sorted(range(len(values)), key=lambda i: (values[i] != must, values[i]))
    kept: list[int] = []
    for i in order:
        if all(abs(pos[i] - pos[j]) >= half[i] + half[j] + 0.1 for j in kept):
            kept.append(i)
    return sorted(kept)


def _eval_points(recipes: dict[str, Recipe], name: str) -> list[float]:
    for rec in recipes.values():
        c = rec.curves.get(name)
        if c is not None and c.tokens:
            return [float(x) for x in c.tokens]
    return []


def _short_count(x: float) -> str:
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:g}"


def _within(t: float, lim: tuple[float, float]) -> bool:
    return min(lim) <= t <= max(lim)


def _arr(v: Any) -> np.ndarray:
    return np.asarray([np.nan if x is None else x for x in (v or [])], dtype=float)


def _accuracy_panel(ax: Any, pts: list[LadderPoint], ceiling: float | None, chance: float) -> None:
    """Decision accuracy against the reference point (every pair, weighted by the reference's confidence
    in its sign), with its cluster-bootstrap interval, at each cheaper point; the noise ceiling (dashed)
    and chance (dotted) drawn across."""
    xs = [float(p.compute_flops_per_run or 0.0) for p in pts]
    accs = [p.decision_accuracy.all_pairs_weighted for p in pts]
    ys = [float(a.value or 0.0) for a in accs]
    cis = [[y if x is None else x for x in a.ci or [y, y]] for a, y in zip(accs, ys, strict=True)]
    err = [[y - c[0] for y, c in zip(ys, cis, strict=True)], [c[1] - y for y, c in zip(ys, cis, strict=True)]]
    ax.errorbar(
        xs, ys, yerr=err, marker="s", markersize=4, capsize=3, color="#333", label="weighted, all pairs"
    )
    if ceiling is not None:
        ax.axhline(ceiling, color="#2a7", linewidth=1, linestyle="--", label="noise ceiling")
    ax.axhline(chance, color="#888", linewidth=1, linestyle=":", label="chance")
    ax.set_ylim(-0.05, 1.05)
    ax.set_yticks([0, 0.5, 1.0], ["0%", "50%", "100%"])
    ax.set_ylabel("decision accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="lower right")


LEGEND_INSIDE = 8  # recipes a ladder chart's legend holds inside its axes; more go beside it, in columns
MARKERS = ("o", "s", "^", "D", "v", "P")


def series_style(i: int) -> dict[str, Any]:
    """The ``i``-th line's colour, marker and dash: ten colours, then the next marker and dash, so no two of
    sixty lines look alike."""
    return {
        "color": f"C{i % 10}",
        "marker": MARKERS[(i // 10) % len(MARKERS)],
        "linestyle": ("-", "--", ":")[(i // 10) % 3],
    }


def dodge(i: int, n: int) -> float:
    """The factor that moves the ``i``-th of ``n`` series sideways on a log axis (at most about 18% either
    way), so intervals at one point do not hide each other; its order is the legend's."""
    return float(10 ** (0.006 * (i - (n - 1) / 2))) if n > 1 else 1.0


def legend_placement(n: int) -> dict[str, Any]:
    """Where a ladder chart's legend of ``n`` lines goes: inside up to :data:`LEGEND_INSIDE`, else beside
    the axes in columns of at most 14, smaller."""
    if n <= LEGEND_INSIDE:
        return {"fontsize": 8, "frameon": False}
    return {
        "fontsize": 6,
        "frameon": False,
        "loc": "upper left",
        "bbox_to_anchor": (1.01, 1.0),
        "ncol": -(-n // 14),
    }


def ladder_svg(goodput: Goodput | Mapping[str, Any]) -> str | None:
    """Multiplier (with its paired CI) against compute per run, one line per recipe, over the ladder; below
    it, when a point has one, decision accuracy against the reference point with its interval, the noise
    ceiling and chance."""
    g = as_goodput(goodput)
    pts = sorted(g.ladder.points, key=lambda p: p.compute_flops_per_run or 0)
    recipes = [r for r in g.recipes if r != g.baseline]
    if len(pts) < 2 or not recipes:
        return None
    accs = [p for p in pts if p.decision_accuracy.all_pairs_weighted.value is not None]
    legend = legend_placement(len(recipes))
    width = 6.0 + 1.6 * legend.get("ncol", 0)  # a legend beside the axes widens the figure, not squeezes it
    with plt.rc_context(RC):
        if accs:
            fig, (ax, ax2) = plt.subplots(
                2, 1, figsize=(width, 5.4), layout="constrained", sharex=True, height_ratios=(3, 2)
            )
            ceiling = g.ladder.noise_ceiling.all_pairs_weighted.value
            _accuracy_panel(ax2, accs, ceiling, g.ladder.chance if g.ladder.chance is not None else 0.5)
        else:
            fig, ax = plt.subplots(figsize=(width, 3.4), layout="constrained")
        for i, r in enumerate(recipes):
            xs, ys, lo, hi = [], [], [], []
            for p in pts:
                at = p.recipes.get(r)
                m = at.multiplier if at is not None else None
                if m is None or m.value is None or p.compute_flops_per_run is None:
                    continue  # a point without its compute has no place on the axis
                xs.append(p.compute_flops_per_run * dodge(i, len(recipes)))
                ys.append(m.value)
                lo.append(m.value - (m.ci_low if m.ci_low is not None else m.value))
                hi.append((m.ci_high if m.ci_high is not None else m.value) - m.value)
            if xs:
                ax.errorbar(
                    xs,
                    ys,
                    yerr=[lo, hi],
                    markersize=4,
                    capsize=3,
                    label=label(g, r),
                    **series_style(i),
                )
        ax.axhline(1.0, color="#888", linewidth=1, linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ys = [t for t in (0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0) if _within(t, ax.get_ylim())]
        keep = thin_ticks(ys, [f"{t:g}x" for t in ys], ax.get_ylim(), axis_in=2.6, log=True, must=1.0)
        if len(keep) >= 2:  # else matplotlib's own log ticks (a range beyond these)
            ax.set_yticks([ys[k] for k in keep], [f"{ys[k]:g}x" for k in keep])
            ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        xt = [float(p.compute_flops_per_run) for p in pts if p.compute_flops_per_run]
        xl = [sci(x) for x in xt]
        keep = thin_ticks(xt, xl, ax.get_xlim(), axis_in=4.6, log=True)
        ax.set_xticks([xt[k] for k in keep], [xl[k] for k in keep])  # the ladder's points, labelled
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        (ax2 if accs else ax).set_xlabel("compute per run (FLOPs)")
        if accs:
            ax.tick_params(labelbottom=False)
            ax2.tick_params(labelbottom=True)
        ax.set_ylabel(f"multiplier vs {g.baseline}")
        ax.grid(alpha=0.3)
        ax.legend(**legend)
        return _svg(fig)
