"""Terminal summaries of a run: the per-stage funnel and ``curate inspect``'s samples per reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate import schema
from curate.context import load_manifest
from curate.report.verdict import nbytes


def stage_table(manifest: dict[str, Any]) -> str:
    """A fixed-width table: stage, docs in/out, bytes out, tokens out (when the manifest counts them),
    wall and CPU seconds, top removal reasons."""
    tokens = any("tokens_out" in s for s in manifest["stages"])
    head = ["stage", "docs in", "docs out", "removed", "bytes out"] + (["tokens out"] if tokens else [])
    rows = [tuple(head + ["wall s", "cpu s", "top reasons"])]
    for s in manifest["stages"]:
        removed = sum(s["removed"].values())
        top = sorted(s["removed"].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        cells = [s["name"], f"{s['docs_in']:,}", f"{s['docs_out']:,}", f"{removed:,}", nbytes(s["bytes_out"])]
        if tokens:
            cells.append(f"{s.get('tokens_out', 0):,}")
        cells += [
            f"{s['wall_s']:.1f}",
            f"{s['cpu_s']:.1f}",
            ", ".join(f"{r.split(':', 1)[-1]} {c:,}" for r, c in top),
        ]
        rows.append(tuple(cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        cells = (
            [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:-1], widths[1:], strict=True)] + [r[-1]]
        )
        lines.append("  ".join(cells))
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def format_run_summary(manifest: dict[str, Any], out: str | Path) -> str:
    a = manifest["accounting"]
    lines = [
        f"run {manifest['name']} -> {out}",
        stage_table(manifest),
        f"input {a['input']:,} = kept {a['kept']:,} + rejected {a['rejected']:,} + quarantined {a['quarantined']:,}"
        f"  ({'balanced' if a['balanced'] else 'NOT BALANCED'}); wall {manifest['wall_s']:.1f} s",
    ]
    if manifest.get("tokens_unit"):
        lines.insert(2, f"tokens counted as {manifest['tokens_unit']}")
    for name, result in (manifest.get("phases") or {}).items():
        headline = result.get("headline") if isinstance(result, dict) else None
        lines.append(f"{name}: {headline or 'done'} ({result.get('wall_s', 0):.1f} s)")
    report = Path(out) / "report.html"
    if report.exists():
        lines.append(f"report: {report}")
    return "\n".join(lines)


def inspect_run(run_dir: Path, *, reason: str | None = None, n: int = 2, width: int = 300) -> str:
    """Stages and reasons with counts, then ``n`` sample documents per reason (and kept samples)."""
    manifest = load_manifest(run_dir)
    lines = [stage_table(manifest), ""]
    by_reason = manifest.get("removed_by_reason", {})
    if reason is not None and reason not in by_reason:
        raise FileNotFoundError(
            f"no documents were removed with reason {reason!r}; reasons: {', '.join(by_reason) or '(none)'}"
        )
    wanted = [reason] if reason else sorted(by_reason, key=lambda r: (-by_reason[r], r))
    samples: dict[str, list[dict[str, Any]]] = {r: [] for r in wanted}
    for f in sorted((Path(run_dir) / "rejected").glob("part-*.parquet")):
        if all(len(v) >= n for v in samples.values()):
            break
        t = pq.read_table(f)
        for r in wanted:
            need = n - len(samples[r])
            if need > 0:
                sel = t.filter(pc.equal(t.column(schema.REASON), r)).slice(0, need)
                samples[r].extend(sel.to_pylist())
    for r in wanted:
        lines.append(f"== {r}  ({by_reason[r]:,} documents)")
        for row in samples[r]:
            extra = f"  duplicate_of={row['duplicate_of']}" if row.get(schema.DUPLICATE_OF) else ""
            detail = f"  detail={row['detail']}" if row.get("detail") else ""
            lines.append(f"  [{row[schema.ID]}] source={row[schema.SOURCE]}{extra}{detail}")
            lines.append("    " + _snippet(row.get(schema.TEXT) or "", width))
    if reason is None:
        kept = sorted((Path(run_dir) / "kept").glob("part-*.parquet"))
        if kept:
            head: pa.Table = pq.read_table(kept[0]).slice(0, n)
            lines.append(f"== kept  ({manifest['accounting']['kept']:,} documents)")
            for row in head.to_pylist():
                lines.append(f"  [{row[schema.ID]}] source={row[schema.SOURCE]}")
                lines.append("    " + _snippet(row[schema.TEXT], width))
    return "\n".join(lines)


def _snippet(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
