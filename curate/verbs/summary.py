"""Terminal summaries of a run: the per-stage funnel and ``curate inspect``'s samples per reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from curate.core import schema
from curate.filters.pii import masker
from curate.io import runfiles
from curate.report import sources
from curate.report.verdict import nbytes
from curate.runtime.context import load_manifest
from curate.runtime.manifest import deciding_columns
from curate.runtime.tokens import unit_label


def stage_table(manifest: dict[str, Any]) -> str:
    """A fixed-width table: stage, docs in/out, bytes out, tokens out in the run's unit, named in the
    header (when the manifest counts them), wall and CPU seconds (its workers' included), top removal
    reasons."""
    tokens = any("tokens_out" in s for s in manifest["stages"])
    unit = manifest.get("tokens_unit")
    named = f"tokens out ({unit_label(unit)})" if unit else "tokens out"
    head = ["stage", "docs in", "docs out", "removed", "bytes out"] + ([named] if tokens else [])
    rows = [tuple([*head, "wall s", "cpu s", "top reasons"])]
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
        lines.insert(2, tokens_line(manifest))
    cost = cost_line(manifest)
    if cost:
        lines.append(cost)
    by_source = sources.terminal(manifest)  # a run of several sources
    if by_source:
        lines.append(by_source)
    card: list[str] = []
    for name, result in (manifest.get("phases") or {}).items():
        headline = result.get("headline") if isinstance(result, dict) else None
        if name == "report" and headline and "proxy" in manifest["phases"]:  # the verdict card opens it
            card, headline = str(headline).splitlines(), "built"
        lines.append(f"{name}: {headline or 'done'} ({result.get('wall_s', 0):.1f} s)")
    if card:
        lines[0:0] = [*card, ""]
    from curate.io.stage import show_url
    from curate.io.storage import is_remote

    if is_remote(str(out)):  # name the bucket, never the local mirror the phases worked in
        if "report" in (manifest.get("phases") or {}):
            lines.append(f"report: {str(out).rstrip('/')}/report.html")
        return show_url("\n".join(lines), str(out))
    report = Path(out) / "report.html"
    if report.exists():
        lines.append(f"report: {report}")
    return "\n".join(lines)


def tokens_line(manifest: dict[str, Any]) -> str:
    """What the run's token counts are (``tokens_unit``) and, for a run with proxy runs whose tokenizer
    is another, that the verdict's yields count the proxy tokenizer's tokens."""
    unit = manifest["tokens_unit"]
    line = f"tokens counted as {unit}"
    proxy = (manifest.get("config") or {}).get("proxy")
    if proxy is not None and "proxy" in (manifest.get("phases") or {}):
        fixed = ((proxy.get("tokenizer") or {}) if isinstance(proxy, dict) else {}).get("path")
        if not (fixed and unit == f"tokenizer:{Path(str(fixed)).name}"):
            line += (
                "; yield and goodput count the proxy tokenizer's tokens (its multiplier is measured in them)"
            )
    return line


def cost_line(manifest: dict[str, Any]) -> str | None:
    """The run's CPU-seconds wherever they ran (the driver and every worker): the curation's, by part,
    and each phase's."""
    cpu = manifest.get("cpu")
    if not cpu:
        return None
    parts = f"stages {cpu['stages_s']:,.1f}, part I/O {cpu['io_s']:,.1f}"
    if cpu.get("target_s"):
        parts += f", target {cpu['target_s']:,.1f}"
    phases = [
        f"{name} {r['cpu_s']:,.1f}"
        for name, r in (manifest.get("phases") or {}).items()
        if isinstance(r, dict) and "cpu_s" in r
    ]
    after = f"; {', '.join(phases)}" if phases else ""
    return f"cost: curation {cpu['total_s']:,.1f} CPU-s ({parts}){after}; workers' CPU included"


def resolve_reasons(query: str, by_reason: dict[str, int]) -> list[str]:
    """The removal reasons ``query`` names: a full reason (``gopher_quality_v1:short_doc``), its short
    form (``short_doc``), or a prefix (a stage such as ``gopher_quality_v1``, or ``quarantine``)."""
    if query in by_reason:
        return [query]
    prefixed = [r for r in by_reason if r.startswith(query + ":")]
    short = [r for r in by_reason if r.split(":", 1)[-1] == query]
    found = sorted(set(prefixed + short), key=lambda r: (-by_reason[r], r))
    if found:
        return found
    shorts = sorted({r.split(":", 1)[-1] for r in by_reason})
    stages = sorted({r.split(":", 1)[0] for r in by_reason if ":" in r})
    raise FileNotFoundError(
        f"no documents were removed with reason {query!r}; give a reason ({', '.join(shorts) or 'none'}), "
        f"a stage ({', '.join(stages) or 'none'}) or kept"
    )


def _sample_rows(
    files: list[Path], reasons: list[str] | None, n: int, seed: int
) -> dict[str | None, list[dict]]:
    """``n`` rows per reason (None: kept rows), drawn at random with ``seed`` and spread over sources."""
    rng = np.random.default_rng(seed)
    cand: dict[str | None, list[tuple[str, int, int]]] = {}
    for fi, f in enumerate(files):
        cols = [schema.SOURCE] + ([schema.REASON] if reasons is not None else [])
        t = runfiles.read_table(f, columns=cols)
        src = t.column(schema.SOURCE).to_pylist()
        rs = t.column(schema.REASON).to_pylist() if reasons is not None else [None] * t.num_rows
        for row, (r, so) in enumerate(zip(rs, src, strict=True)):
            if reasons is None or r in reasons:
                cand.setdefault(r, []).append((so or "", fi, row))
    out: dict[str | None, list[dict]] = {}
    cache: dict[Path, Any] = {}
    for r, rows in cand.items():
        by_source: dict[str, list[tuple[int, int]]] = {}
        for so, fi, row in rows:
            by_source.setdefault(so, []).append((fi, row))
        queues = [[v[i] for i in rng.permutation(len(v))] for _, v in sorted(by_source.items())]
        picked: list[tuple[int, int]] = []
        while len(picked) < n and any(queues):  # round-robin over sources, in random order within each
            for q in queues:
                if q and len(picked) < n:
                    picked.append(q.pop(0))
        out[r] = [_table(files[fi], cache).slice(row, 1).to_pylist()[0] for fi, row in picked]
    return out


def _table(path: Path, cache: dict[Path, Any]) -> Any:
    if path not in cache:
        cache[path] = runfiles.read_table(path)
    return cache[path]


def inspect_run(
    run_dir: Path, *, reason: str | None = None, n: int = 2, width: int = 300, seed: int = 0
) -> str:
    """Stages and reasons with counts, then ``n`` random sample documents per reason (and kept samples).

    ``reason`` may be a full reason, its short form, a stage, ``quarantine`` or ``kept``. Samples are
    drawn with ``seed`` and spread across sources; a rejected sample shows the score that decided.
    """
    manifest = load_manifest(run_dir)
    lines = [stage_table(manifest), ""]
    by_reason = manifest.get("removed_by_reason", {})
    wanted = (
        []
        if reason == "kept"
        else resolve_reasons(reason, by_reason)
        if reason
        else sorted(by_reason, key=lambda r: (-by_reason[r], r))
    )
    deciding = deciding_columns(manifest)
    # a run with pii_v1 shows what that stage masks masked, whatever its mode (reject keeps raw values)
    mask = masker(manifest.get("stages_resolved") or []) or (lambda t: t)
    if wanted:
        samples = _sample_rows(runfiles.parts(run_dir, "rejected"), wanted, n, seed)
    for r in wanted:
        lines.append(f"== {r}  ({by_reason[r]:,} documents)")
        for row in samples.get(r, []):
            extra = f"  duplicate_of={row['duplicate_of']}" if row.get(schema.DUPLICATE_OF) else ""
            detail = f"  detail={mask(row['detail'])}" if row.get("detail") else ""
            col = deciding.get(r)
            score = f"  {col}={_value(row.get(col))}" if col else ""
            lines.append(f"  [{row[schema.ID]}] source={row[schema.SOURCE]}{score}{extra}{detail}")
            lines.append(
                "    " + _snippet(mask((row.get(schema.TEXT) or "")[: 4 * width + 200]) or "", width)
            )
    if reason is None or reason == "kept":
        kept_files = runfiles.parts(run_dir, "kept")
        lines.append(f"== kept  ({manifest['accounting']['kept']:,} documents)")
        for row in _sample_rows(kept_files, None, n, seed).get(None, []):
            lines.append(f"  [{row[schema.ID]}] source={row[schema.SOURCE]}")
            lines.append("    " + _snippet(mask(row[schema.TEXT][: 4 * width + 200]) or "", width))
    return "\n".join(lines)


def _value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _snippet(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
