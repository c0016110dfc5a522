"""The report's tables as plain rows of (key, value, text), shared by the HTML and Markdown renderers.

Every goodput cell carries a stable metric key ``<recipe>.<metric>`` (``curated.multiplier``,
``curated.goodput.ci_low``, ...) and the exact value from ``goodput.json``, so the HTML can expose
``data-metric``/``data-value`` and a test can compare what is shown with the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from curate.report.histograms import Histogram
from curate.report.verdict import count, num, pct, ratio


@dataclass
class Cell:
    """One shown number: its metric key, the exact value and the text shown."""

    key: str
    value: Any
    text: str


def _get(rec: dict[str, Any], path: str) -> Any:
    cur: Any = rec
    for part in path.split("."):
        if isinstance(cur, list):
            cur = cur[int(part)] if part.isdigit() and int(part) < len(cur) else None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
    return cur


def _bpb(x: Any) -> str:
    return "—" if x is None else f"{x:.4f}"


# (column header, [(metric suffix, path in the recipe record, formatter)]): value first, then CI bounds.
GOODPUT_COLUMNS: list[tuple[str, list[tuple[str, str, Callable[[Any], str]]]]] = [
    (
        "multiplier",
        [
            ("multiplier", "multiplier.value", ratio),
            ("multiplier.ci_low", "multiplier.ci_low", ratio),
            ("multiplier.ci_high", "multiplier.ci_high", ratio),
        ],
    ),
    ("yield (tokens)", [("yield", "yield", pct)]),
    (
        "data goodput",
        [
            ("goodput", "goodput.value", ratio),
            ("goodput.ci_low", "goodput.ci.0", ratio),
            ("goodput.ci_high", "goodput.ci.1", ratio),
        ],
    ),
    ("effective tokens", [("effective_tokens", "effective_tokens", count)]),
    ("tokens in → kept", [("tokens_in", "tokens_in", count), ("tokens_kept", "tokens_kept", count)]),
    (
        "eval bpb at T",
        [
            ("bpb_at_T", "bpb_at_T.value", _bpb),
            ("bpb_at_T.ci_low", "bpb_at_T.ci_low", _bpb),
            ("bpb_at_T.ci_high", "bpb_at_T.ci_high", _bpb),
        ],
    ),
    (
        "learning signal (bpb / token)",
        [("learning_signal_per_token", "learning_signal_per_token", num)],
    ),
    ("proxy device-s", [("costs.proxy_device_s", "costs.proxy_device_s", num)]),
    (
        "effective tokens / device-h",
        [("costs.effective_tokens_per_device_hour", "costs.effective_tokens_per_device_hour", count)],
    ),
]


def goodput_columns(goodput: dict[str, Any]) -> list[tuple[str, list[tuple[str, str, Callable[[Any], str]]]]]:
    """The goodput table's columns for this file: effective tokens per device-hour only where goodput.json
    says how it was computed from finished runs (``costs.method``); older files derived it otherwise."""
    recs = (goodput.get("recipes") or {}).values()
    has = any(isinstance(r, dict) and (r.get("costs") or {}).get("method") for r in recs)
    return [c for c in GOODPUT_COLUMNS if has or c[0] != "effective tokens / device-h"]


def recipe_order(goodput: dict[str, Any]) -> list[str]:
    """Baseline first, then the others by name."""
    base = goodput.get("baseline")
    return sorted(goodput.get("recipes") or {}, key=lambda r: (r != base, r))


# A multiplier or goodput number at the end of the baseline's measured range is a bound: its side.
_BOUND_OF = {
    "multiplier.value": "multiplier.bounds.value",
    "multiplier.ci_low": "multiplier.bounds.ci_low",
    "multiplier.ci_high": "multiplier.bounds.ci_high",
    "goodput.value": "goodput.bounds.value",
    "goodput.ci.0": "goodput.bounds.ci.0",
    "goodput.ci.1": "goodput.bounds.ci.1",
}


def goodput_rows(goodput: dict[str, Any]) -> list[tuple[str, list[list[Cell]]]]:
    """Per recipe, per column, the cells (value first, then CI bounds when the column has them). A
    multiplier or goodput beyond the baseline's measured range reads as a bound (``>2.00``, ``<0.25``)."""
    rows = []
    for r in recipe_order(goodput):
        rec = goodput["recipes"][r]
        cols = []
        for _, metrics in goodput_columns(goodput):
            cells = []
            for suffix, path, fmt in metrics:
                value = _get(rec, path)
                side = _get(rec, _BOUND_OF[path]) if path in _BOUND_OF else None
                text = fmt(value)
                cells.append(
                    Cell(f"{r}.{suffix}", value, f"{side}{text}" if side and value is not None else text)
                )
            cols.append(cells)
        rows.append((r, cols))
    return rows


def bounded(goodput: dict[str, Any], recipe: str) -> bool:
    """Whether any number of the recipe's multiplier is a bound (beyond the baseline's measured range)."""
    b = _get(goodput["recipes"][recipe], "multiplier.bounds") or {}
    return isinstance(b, dict) and any(b.values())


def extrapolated(goodput: dict[str, Any], recipe: str) -> bool:
    """Whether any number of the recipe's multiplier (value or a CI bound) is extrapolated."""
    return any(extrapolated_parts(goodput, recipe).values())


def extrapolated_parts(goodput: dict[str, Any], recipe: str) -> dict[str, bool]:
    """Which of the multiplier's ``value``, ``ci_low``, ``ci_high`` lie beyond the baseline's measured
    curve (``m * T`` outside the tokens it was evaluated at), so a report marks only those.

    ``multiplier.extrapolated`` says that one of them is; the baseline's curves say which. Without
    curves, the flag is taken to be the value's.
    """
    m = _get(goodput["recipes"][recipe], "multiplier") or {}
    none = {"value": False, "ci_low": False, "ci_high": False}
    if not isinstance(m, dict) or not m.get("extrapolated"):
        return none
    base = (goodput.get("recipes") or {}).get(goodput.get("baseline")) or {}
    tokens = [t for c in (base.get("curves") or {}).values() for t in (c.get("tokens") or [])]
    budget = goodput.get("budget")
    if not tokens or not budget:
        return {**none, "value": True}
    lo, hi = min(tokens) / budget, max(tokens) / budget
    out = {k: m.get(k) is not None and not (lo * (1 - 1e-9) <= m[k] <= hi * (1 + 1e-9)) for k in none}
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
