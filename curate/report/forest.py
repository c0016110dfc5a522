"""The forest plot under the verdict card: every recipe's and control's multiplier with its interval.

One row per recipe (best first) and then per control, on a log axis: the point, its 95% interval, the 1x
line and the band of effects the run cannot detect (``power.mde_multiplier``: worse..better) shaded. An
interval end that is a bound (beyond the baseline's measured range) is drawn as an arrow pointing the way
the true end may lie. Tick labels are thinned so no two collide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt

from curate.goodput.schema import Goodput, Multiplier, as_goodput
from curate.report.card import compared, control_names
from curate.report.charts import RC, _svg, thin_ticks

NICE = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)
CONTROL = "#7a7a7a"
POINT = "#3b6ea8"


def forest_rows(goodput: Goodput | Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{"name", "control", "value", "lo", "hi", "bounds"}`` per row: compared recipes by multiplier
    (highest first), then the controls; a control absent from ``recipes`` reads ``controls.<name>``."""
    g = as_goodput(goodput)
    recs, ctl = g.recipes, g.controls.checks

    def row(name: str, block: Multiplier, control: bool) -> dict[str, Any]:
        return {
            "name": name,
            "control": control,
            "value": block.value,
            "lo": block.ci_low,
            "hi": block.ci_high,
            "bounds": block.bounds,
        }

    names = compared(g)
    value = {r: recs[r].multiplier.value for r in names}
    names.sort(key=lambda r: (value[r] is None, -(value[r] or 0.0), r))
    rows = [row(r, recs[r].multiplier, False) for r in names]
    for c in sorted(control_names(g)):
        found = [x.multiplier for x in (recs.get(c), ctl.get(c)) if x is not None and x.multiplier.to_json()]
        if found:
            rows.append(row(c, found[0], True))
    return rows


def _range(rows: list[dict[str, Any]], band: tuple[Any, Any]) -> tuple[float, float]:
    xs = [1.0] + [float(x) for r in rows for x in (r["value"], r["lo"], r["hi"]) if x is not None]
    xs += [float(x) for x in band if x is not None]
    xs = [x for x in xs if math.isfinite(x) and x > 0]
    return min(xs) / 1.25, max(xs) * 1.25


def forest_svg(goodput: Goodput | Mapping[str, Any]) -> str | None:
    """The forest plot as SVG; None when no row has a multiplier."""
    g = as_goodput(goodput)
    rows = forest_rows(g)
    if not any(r["value"] is not None for r in rows):
        return None
    mm = g.power.mde_multiplier
    band = (mm.worse, mm.better)
    lo_x, hi_x = _range(rows, band)
    base = g.baseline or "raw"
    width = 7.5
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(width, 0.34 * len(rows) + 1.0), layout="constrained")
        if band[0] is not None and band[1] is not None:
            ax.axvspan(band[0], band[1], color="#e9edf2", linewidth=0, label="not detectable (MDE band)")
        ax.axvline(1.0, color="#555", linewidth=1, linestyle="--")
        for i, r in enumerate(rows):
            y = len(rows) - 1 - i
            color = CONTROL if r["control"] else POINT
            _draw_row(ax, r, y, color, (lo_x, hi_x))
        ax.set_xscale("log")
        ax.set_xlim(lo_x, hi_x)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_yticks(
            range(len(rows)),
            [f"{r['name']} (control)" if r["control"] else r["name"] for r in reversed(rows)],
        )
        for tick, r in zip(ax.get_yticklabels(), reversed(rows), strict=True):
            if r["control"]:
                tick.set_color(CONTROL)
                tick.set_fontstyle("italic")
        ticks = [t for t in NICE if lo_x <= t <= hi_x]
        labels = [f"{t:g}x" for t in ticks]
        keep = thin_ticks(ticks, labels, (lo_x, hi_x), axis_in=width * 0.7, log=True, must=1.0)
        ax.set_xticks([ticks[k] for k in keep], [labels[k] for k in keep])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_xlabel(f"multiplier vs {base} (log scale; 1x = no difference; arrow = a bound)")
        ax.grid(axis="x", alpha=0.3)
        if band[0] is not None and band[1] is not None:
            ax.legend(fontsize=8, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0))
        return _svg(fig)


def _draw_row(ax: Any, r: dict[str, Any], y: float, color: str, xlim: tuple[float, float]) -> None:
    """One row: the interval as a line (an arrow at an end that is a bound), the point on it."""
    if r["value"] is None:
        ax.text(1.0, y, "  not measured", va="center", fontsize=8, color=color)
        return
    lo = r["lo"] if r["lo"] is not None else r["value"]
    hi = r["hi"] if r["hi"] is not None else r["value"]
    ax.plot([lo, hi], [y, y], color=color, linewidth=2, solid_capstyle="butt")
    b = r["bounds"]
    for end, side, towards in ((hi, b.ci_high, xlim[1]), (lo, b.ci_low, xlim[0])):
        if (side == ">" and towards > end) or (side == "<" and towards < end):
            tip = end * (1.2 if side == ">" else 1 / 1.2)
            ax.annotate(
                "",
                xy=(tip, y),
                xytext=(end, y),
                arrowprops={"arrowstyle": "-|>", "color": color, "linewidth": 2, "shrinkA": 0, "shrinkB": 0},
            )
    marker = "D" if r["control"] else "o"
    ax.plot([r["value"]], [y], marker=marker, color=color, markersize=6, linestyle="none")
