"""The report's recipe-search section (``search.json`` from ``curate search`` / ``proxy.search``): every
candidate at the last rung it reached, the goodput-vs-yield Pareto front and chart, the winner's
confirmation on fresh seeds. HTML and Markdown render the same rows (:func:`search_rows`)."""

from __future__ import annotations

from html import escape
from typing import Any

from curate.report.verdict import pct

HEADER = ["candidate", "rung", "yield", "multiplier [95% CI]", "goodput [95% CI]", "note"]


def _ci(x: dict[str, Any] | None) -> str:
    if not x or x.get("value") is None:
        return "—"
    lo, hi = x.get("ci_low"), x.get("ci_high")
    if lo is None and isinstance(x.get("ci"), list) and len(x["ci"]) == 2:  # goodput: {"value", "ci"}
        lo, hi = x["ci"]
    band = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{x['value']:.2f}x{band}"


def last_numbers(search: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any]]]:
    """Each candidate's numbers at the last rung it was trained at: ``{name: (rung, numbers)}``."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for h in search.get("history") or []:
        for name, nums in (h.get("numbers") or {}).items():
            out[name] = (int(h["rung"]), nums)
    return out


def search_rows(search: dict[str, Any]) -> list[list[str]]:
    """One row per candidate, the winner first, then by the last rung reached and the objective."""
    last = last_numbers(search)
    front = {p["recipe"] for p in search.get("pareto_last_rung") or []}
    winner = search.get("winner")
    empty = search.get("empty") or {}
    objective = search.get("objective", "multiplier")

    def key(name: str) -> tuple[int, int, float, str]:
        rung, nums = last.get(name, (-1, {}))
        v = (nums.get(objective) or {}).get("value")
        return (name != winner, -rung, -(v if v is not None else float("-inf")), name)

    rows = []
    for name in sorted(search.get("candidates") or {}, key=key):
        rung, nums = last.get(name, (None, {}))
        notes = []
        if name == winner:
            notes.append("winner")
        if name in front:
            notes.append("Pareto front")
        if name in empty:
            notes.append(str(empty[name]))
        rows.append(
            [
                name.removeprefix("search:"),
                "—" if rung is None else str(rung),
                pct(nums["yield"]) if nums.get("yield") is not None else "—",
                _ci(nums.get("multiplier")),
                _ci(nums.get("goodput")),
                "; ".join(notes),
            ]
        )
    return rows


def summary(search: dict[str, Any]) -> str:
    """One sentence: the search's size and shape, the winner and its confirmation on fresh seeds."""
    n = len(search.get("candidates") or {})
    rungs = ", ".join(f"{r['budget']:,} tokens x {len(r['seeds'])} seeds" for r in search.get("rungs") or [])
    s = f"{n} candidates by {search.get('objective', 'multiplier')} vs {search.get('baseline')}, eta {search.get('eta')}; rungs: {rungs}."
    winner, conf = search.get("winner"), search.get("confirmation")
    if winner is None:
        return s + " No candidate could be ranked: there is no winner."
    s += f" Winner {winner.removeprefix('search:')}"
    if conf:
        s += (
            f", confirmed on fresh seeds {conf.get('seeds')}: multiplier {_ci(conf.get('multiplier'))}, "
            f"goodput {_ci(conf.get('goodput'))} (only these runs give its CI: the rungs picked it as the "
            "best of many, which inflates their numbers)"
        )
    return s + "."


def pareto_svg(search: dict[str, Any]) -> str | None:
    """Goodput against yield of every candidate at the last rung (the Pareto front joined), the baseline
    at (1, 1); ``None`` when fewer than one candidate has both numbers."""
    from curate.report.charts import RC, _svg, plt

    rung = max((int(h["rung"]) for h in search.get("history") or []), default=None)
    if rung is None:
        return None
    nums = next(h.get("numbers") or {} for h in search["history"] if int(h["rung"]) == rung)
    pts = {
        n: (v["yield"], v["goodput"]["value"])
        for n, v in nums.items()
        if v.get("yield") is not None and (v.get("goodput") or {}).get("value") is not None
    }
    if not pts:
        return None
    front = [p["recipe"] for p in search.get("pareto_last_rung") or [] if p["recipe"] in pts]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.0, 3.4), layout="constrained")
        ax.scatter(
            [y for y, _ in pts.values()], [g for _, g in pts.values()], s=18, color="C0", label="candidate"
        )
        if front:
            fx, fy = zip(*sorted(pts[n] for n in front), strict=True)
            ax.plot(fx, fy, color="C1", linewidth=1.2, marker="o", markersize=5, label="Pareto front")
        w = search.get("winner")
        if w in pts:
            ax.scatter([pts[w][0]], [pts[w][1]], s=80, facecolors="none", edgecolors="C3", label="winner")
        ax.scatter([1.0], [1.0], marker="s", color="#555", s=24, label=str(search.get("baseline")))
        ax.axhline(1.0, color="#888", linewidth=1, linestyle="--")
        ax.set_xlabel("yield (tokens kept / baseline tokens)")
        ax.set_ylabel("goodput (yield x multiplier)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
        return _svg(fig)


def html_section(search: dict[str, Any] | None) -> str:
    if not search:
        return ""
    head = "".join(f'<th class="{"l" if i in (0, 5) else ""}">{escape(h)}</th>' for i, h in enumerate(HEADER))
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"l" if i in (0, 5) else ""}">{escape(c)}</td>' for i, c in enumerate(r))
        + "</tr>"
        for r in search_rows(search)
    )
    chart = pareto_svg(search)
    return (
        f'<h2 id="search">Recipe search</h2><p>{escape(summary(search))}</p>'
        f"{chart or ''}<table><tr>{head}</tr>{body}</table>"
    )


def markdown_section(search: dict[str, Any] | None) -> list[str]:
    if not search:
        return []
    rows = search_rows(search)
    out = ["## Recipe search", "", summary(search), ""]
    out.append("| " + " | ".join(HEADER) + " |")
    out.append("| :-- | --: | --: | --: | --: | :-- |")
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return [*out, "", "The goodput-vs-yield chart is in report.html.", ""]
