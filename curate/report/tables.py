"""The report's tables as plain rows of (key, value, text), shared by the HTML and Markdown renderers.

Every goodput cell carries a stable metric key ``<recipe>.<metric>`` (``curated.multiplier``,
``curated.goodput.ci_low``, ...) and the exact value from ``goodput.json``, so the HTML can expose
``data-metric``/``data-value`` and a test can compare what is shown with the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from curate.goodput.schema import Goodput, Recipe, as_goodput
from curate.report.histograms import Histogram
from curate.report.verdict import count, num, pct, ratio

GoodputLike = Goodput | Mapping[str, Any]


@dataclass
class Cell:
    """One shown number: its metric key, the exact value and the text shown."""

    key: str
    value: Any
    text: str


@dataclass(frozen=True)
class Metric:
    """One number of a recipe's row: its metric key (after ``<recipe>.``), how it is read from the
    recipe, how it is written, and for a multiplier's or goodput's number its bound mark (``>``/``<``)."""

    suffix: str
    value: Callable[[Recipe], Any]
    fmt: Callable[[Any], str]
    mark: Callable[[Recipe], str | None] = lambda r: None


def _bpb(x: Any) -> str:
    return "—" if x is None else f"{x:.4f}"


# (column header, its metrics): value first, then CI bounds. A multiplier or goodput number at the end
# of the baseline's measured range is a bound: it carries its mark.
GOODPUT_COLUMNS: list[tuple[str, list[Metric]]] = [
    (
        "multiplier",
        [
            Metric("multiplier", lambda r: r.multiplier.value, ratio, lambda r: r.multiplier.bounds.value),
            Metric(
                "multiplier.ci_low",
                lambda r: r.multiplier.ci_low,
                ratio,
                lambda r: r.multiplier.bounds.ci_low,
            ),
            Metric(
                "multiplier.ci_high",
                lambda r: r.multiplier.ci_high,
                ratio,
                lambda r: r.multiplier.bounds.ci_high,
            ),
        ],
    ),
    ("yield (tokens)", [Metric("yield", lambda r: r.yield_, pct)]),
    (
        "data goodput",
        [
            Metric("goodput", lambda r: r.goodput.value, ratio, lambda r: r.goodput.bounds.value),
            Metric("goodput.ci_low", lambda r: r.goodput.ci_low, ratio, lambda r: r.goodput.bounds.ci_low),
            Metric("goodput.ci_high", lambda r: r.goodput.ci_high, ratio, lambda r: r.goodput.bounds.ci_high),
        ],
    ),
    ("effective tokens", [Metric("effective_tokens", lambda r: r.effective_tokens, count)]),
    (
        "tokens in → kept",
        [
            Metric("tokens_in", lambda r: r.tokens_in, count),
            Metric("tokens_kept", lambda r: r.tokens_kept, count),
        ],
    ),
    (
        "eval bpb at T",
        [
            Metric("bpb_at_T", lambda r: r.bpb_at_T.value, _bpb),
            Metric("bpb_at_T.ci_low", lambda r: r.bpb_at_T.ci_low, _bpb),
            Metric("bpb_at_T.ci_high", lambda r: r.bpb_at_T.ci_high, _bpb),
        ],
    ),
    (
        "learning signal (bpb / token)",
        [Metric("learning_signal_per_token", lambda r: r.learning_signal_per_token, num)],
    ),
    ("proxy device-s", [Metric("costs.proxy_device_s", lambda r: r.costs.proxy_device_s, num)]),
]


def goodput_columns(goodput: GoodputLike) -> list[tuple[str, list[Metric]]]:
    """The goodput table's columns (the same for every file: a schema-1 file's effective tokens per
    device-hour came from un-cooled checkpoints and is not shown)."""
    return GOODPUT_COLUMNS


def recipe_order(goodput: GoodputLike) -> list[str]:
    """Baseline first, then the others by name."""
    g = as_goodput(goodput)
    return sorted(g.recipes, key=lambda r: (r != g.baseline, r))


def goodput_rows(goodput: GoodputLike) -> list[tuple[str, list[list[Cell]]]]:
    """Per recipe, per column, the cells (value first, then CI bounds when the column has them). A
    multiplier or goodput beyond the baseline's measured range reads as a bound (``>2.00``, ``<0.25``)."""
    g = as_goodput(goodput)
    rows = []
    for r in recipe_order(g):
        rec = g.recipes[r]
        cols = []
        for _, metrics in goodput_columns(g):
            cells = []
            for m in metrics:
                value, side = m.value(rec), m.mark(rec)
                text = m.fmt(value)
                cells.append(
                    Cell(f"{r}.{m.suffix}", value, f"{side}{text}" if side and value is not None else text)
                )
            cols.append(cells)
        rows.append((r, cols))
    return rows


def bounded(goodput: GoodputLike, recipe: str) -> bool:
    """Whether any number of the recipe's multiplier is a bound (beyond the baseline's measured range)."""
    b = as_goodput(goodput).recipes[recipe].multiplier.bounds
    return any((b.value, b.ci_low, b.ci_high))


def extrapolated(goodput: GoodputLike, recipe: str) -> bool:
    """Whether any number of the recipe's multiplier (value or a CI bound) is extrapolated."""
    return any(extrapolated_parts(goodput, recipe).values())


def extrapolated_parts(goodput: GoodputLike, recipe: str) -> dict[str, bool]:
    """Which of the multiplier's ``value``, ``ci_low``, ``ci_high`` lie beyond the baseline's measured
    curve (``m * T`` outside the tokens it was evaluated at), so a report marks only those.

    ``multiplier.extrapolated`` says that one of them is (files of schema 1); the baseline's curves say
    which. Without curves, the flag is taken to be the value's.
    """
    g = as_goodput(goodput)
    m = g.recipes[recipe].multiplier
    none = {"value": False, "ci_low": False, "ci_high": False}
    if not m.extrapolated:
        return none
    base = g.recipes.get(g.baseline or "")
    tokens = [t for c in base.curves.values() for t in c.tokens] if base is not None else []
    if not tokens or not g.budget:
        return {**none, "value": True}
    lo, hi = min(tokens) / g.budget, max(tokens) / g.budget
    nums = {"value": m.value, "ci_low": m.ci_low, "ci_high": m.ci_high}
    out = {k: x is not None and not (lo * (1 - 1e-9) <= x <= hi * (1 + 1e-9)) for k, x in nums.items()}
    return out if any(out.values()) else {**none, "value": True}


def funnel_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's per-stage accounting, with the removed count and removal reasons sorted by count."""
    out = []
    for s in manifest.get("stages") or []:
        removed = s.get("removed") or {}
        out.append(
            {
                "name": s.get("name", "?"),
                "docs_in": int(s.get("docs_in", 0)),
                "docs_out": int(s.get("docs_out", 0)),
                "bytes_in": int(s.get("bytes_in", 0)),
                "bytes_out": int(s.get("bytes_out", 0)),
                "tokens_in": s.get("tokens_in"),
                "tokens_out": s.get("tokens_out"),
                "tokens_unit": manifest.get("tokens_unit"),
                "removed": sum(removed.values()),
                "reasons": sorted(removed.items(), key=lambda kv: (-kv[1], kv[0])),
                "counts": dict(s.get("counts") or {}),  # a stage's own totals (e.g. pii_v1 spans per type)
                "wall_s": float(s.get("wall_s", 0.0)),
                "cpu_s": float(s.get("cpu_s", 0.0)),
            }
        )
    return out


def score_range(h: Histogram) -> str:
    """A score column's range as the data has it: ``min … max`` of its finite values, or ``all <v>``
    when every value is the same (never widened to a threshold, never a made-up span around one value)."""
    return f"all {num(h.lo)}" if h.constant else f"{num(h.lo)} … {num(h.hi)}"


def score_thresholds(h: Histogram, *, stage: bool = False) -> str:
    """A column's select thresholds, each marked when it lies beyond the data (``max 100000 (above
    every value)``), so a reader of the table sees what the chart shows; ``—`` when none."""
    out = []
    for t in h.thresholds:
        notes = [t.stage] if stage else []
        if not h.inside(t):
            notes.append(f"{'above' if t.value > h.hi else 'below'} every value")
        out.append(f"{t.kind} {t.value:g}" + (f" ({'; '.join(notes)})" if notes else ""))
    return ", ".join(out) or "—"


def counted(counts: dict[str, int]) -> str:
    """A stage's own totals as one line, by name: ``email 5, ssn 1``."""
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))


def export_summary(export: dict[str, Any]) -> dict[str, Any]:
    """Splits, per-format file counts and bytes, token shards, tokenizer and checksum coverage."""
    files = export.get("files") or []
    formats: dict[str, dict[str, int]] = {}
    seen: set[tuple[Any, ...]] = set()
    for f in files:
        fmt = str(f.get("format", "?"))
        d = formats.setdefault(fmt, {"files": 0, "bytes": 0, "docs": 0, "tokens": 0})
        d["files"] += 1
        d["bytes"] += int(f.get("bytes") or 0)
        # A Megatron shard is two files (.bin + .idx) carrying the same counts: count each shard once.
        shard = (fmt, f.get("split"), f.get("shard", f.get("path")))
        if shard not in seen:
            seen.add(shard)
            d["docs"] += int(f.get("docs") or 0)
            d["tokens"] += int(f.get("tokens") or 0)
    tok = export.get("tokenizer") or {}
    return {
        "splits": export.get("splits") or {},
        "formats": formats,
        "shards": [f for f in files if f.get("format") in ("megatron", "memmap", "parquet")],
        "n_files": len(files),
        "n_checksummed": sum(1 for f in files if f.get("sha256")),
        "tokenizer": tok if isinstance(tok, dict) else {"name": str(tok)},
        "seed": export.get("seed"),
        "val_fraction": export.get("val_fraction"),
    }


def attempts_note(m: dict[str, Any]) -> str:
    """`` over N attempts`` when the run was resumed (its wall time is the sum of the attempts)."""
    n = len(m.get("attempts_wall_s") or [])
    return f" over {n} attempts" if n > 1 else ""
