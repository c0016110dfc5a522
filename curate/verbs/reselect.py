"""``curate select RUN_DIR``: a new kept set from the scores a run stored, without re-running a model.

Score once, select many times. A finished run's rows carry their score columns, in ``kept/`` and in
``rejected/`` (a rejected row keeps every score computed before it was rejected). The *select pool* is
every kept row plus every row a select rule rejected (a ``select:`` stage or a ``filter:``'s
thresholds); rows removed by dedup, transforms or quarantine stay removed as they were. The pool goes
through all the run's select rules again, in pipeline order, with ``--set`` changes: thresholds can be
tightened and loosened. A row whose rule needs a score computed after it was first rejected fails that
rule (a missing score never passes), and is counted as ``missing_score``.

Two limits to know: a re-admitted row skipped the stages after the one that rejected it, so a dedup
stage after that point did not see it: these stages are not run again; the summary counts such rows per
skipped stage (``readmitted_skipped``) and warns. Rules on scores the run never computed need
``curate run``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from curate.core import schema
from curate.core.errors import PhaseError
from curate.core.select import Rule
from curate.io import runfiles
from curate.io.files import atomic_path, atomic_write_json, restore_swapped, staged_dir
from curate.runtime.context import load_manifest
from curate.runtime.versions import __version__

EXAMPLE = """example:
  curate select runs/web                                              # the run's rules, counts only
  curate select runs/web --set gopher_quality_v1.word_count.min=20 --output runs/web-loose
  curate select runs/web --set fasttext_quality_v1.hq_prob.min=0.5 --set language_v1.language.equals=en
A --set is COLUMN.BOUND=VALUE with BOUND one of min, max, equals (VALUE none drops the bound); a column
without a rule gets a new one. It names a rule's bound over a stored score column, not a pipeline key:
curate run's --set KEY=VALUE (a dotted config path) is another language. Without --output nothing is written; with it, --output is a new run
directory (kept/, rejected/, manifest.json) that inspect, report and export read.
"""
BOUNDS = ("min", "max", "equals")


def select_stages(manifest: dict[str, Any]) -> list[tuple[str, list[Rule]]]:
    """The run's select stages in pipeline order: ``(label, rules)``; a label prefixes its reasons."""
    out: list[tuple[str, list[Rule]]] = []
    for s in manifest.get("stages_resolved", []):
        if s.get("kind") == "select":
            out.append((s["label"], [Rule(**r) for r in s["params"]["rules"]]))
    return out


def apply_sets(stages: list[tuple[str, list[Rule]]], sets: list[str]) -> list[tuple[str, list[Rule]]]:
    """Change the bounds named by ``COLUMN.BOUND=VALUE`` items; a column without a rule gets a new one
    in a stage labelled ``select`` at the end."""
    for item in sets:
        key, sep, value = item.partition("=")
        column, _, bound = key.strip().rpartition(".")
        if not sep or bound not in BOUNDS or not column:
            raise PhaseError(
                f"--set {item!r}: expected COLUMN.BOUND=VALUE with BOUND one of {', '.join(BOUNDS)}, "
                "e.g. --set gopher_quality_v1.word_count.min=20"
            )
        parsed = yaml.safe_load(value)
        if isinstance(parsed, str) and parsed.lower() == "none":
            parsed = None
        if bound in ("min", "max") and parsed is not None and not isinstance(parsed, int | float):
            raise PhaseError(f"--set {item!r}: {bound} must be a number or none, got {value!r}")
        rules = [r for _, rs in stages for r in rs if r.column == column]
        if not rules:
            if parsed is None:
                raise PhaseError(f"--set {item!r}: no rule on {column!r} to drop a bound from")
            extra = [rs for label, rs in stages if label == "select"]
            target = extra[0] if extra else None
            if target is None:
                stages.append(("select", []))
                target = stages[-1][1]
            target.append(Rule(column=column, **{bound: parsed}))
            continue
        for r in rules:
            setattr(r, bound, parsed)
            if r.min is None and r.max is None and r.equals is None:
                raise PhaseError(f"--set {item!r}: the rule on {column!r} would have no bound left")
    return stages


def _files(run_dir: Path, sub: str) -> list[Path]:
    return runfiles.parts(run_dir, sub)


def _decide(table: pa.Table, stages: list[tuple[str, list[Rule]]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Per row: its new reason (None = keep) and stage; and how many failed only for a missing score."""
    n = table.num_rows
    reasons = np.full(n, None, dtype=object)
    labels = np.full(n, None, dtype=object)
    undecided = np.ones(n, dtype=bool)
    missing = 0
    for label, rules in stages:
        for rule in rules:
            if rule.column not in table.column_names:
                table = table.append_column(rule.column, pa.nulls(n, pa.float64()))
            failed = undecided & ~rule.passes(table)
            nulls = np.asarray(
                pc.is_null(table.column(rule.column), nan_is_null=True).to_numpy(zero_copy_only=False)
            )
            missing += int((failed & nulls).sum())
            reasons[failed] = f"{label}:{rule.reason or rule.default_reason()}"
            labels[failed] = label
            undecided &= ~failed
    return reasons, labels, missing


def _pool(
    run_dir: Path, select_labels: set[str]
) -> Iterator[tuple[str, pa.Table, pa.Table | None, list[str | None]]]:
    """Per file: ``(name, rows in the select pool, rows carried over unchanged, per pool row the select
    stage that had rejected it (None for a kept row))``."""
    for f in _files(run_dir, "kept"):
        t = runfiles.read_table(f)
        yield f.name, t, None, [None] * t.num_rows
    for f in _files(run_dir, "rejected"):
        t = runfiles.read_table(f)
        in_pool = pc.is_in(t.column(schema.STAGE), pa.array(sorted(select_labels), pa.string()))
        in_pool = pc.fill_null(in_pool, False)
        pool = t.filter(in_pool)
        origin = pool.column(schema.STAGE).to_pylist()
        yield f.name, pool.drop_columns([schema.STAGE, schema.REASON]), t.filter(pc.invert(in_pool)), origin


def stages_after(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """Per select label, the stages after it that change the row set (dedup and transforms): the
    stages a row it rejected never went through."""
    resolved = manifest.get("stages_resolved", [])
    out: dict[str, list[str]] = {}
    for i, s in enumerate(resolved):
        if s.get("kind") == "select":
            later = [t for t in resolved[i + 1 :] if t.get("kind") in ("dedup", "transform")]
            out[s["label"]] = [t.get("label") or t["name"] for t in later]
    return out


def reselect(run_dir: Path, sets: list[str], output: Path | None = None) -> dict[str, Any]:
    """Apply the run's select rules with ``sets`` to the select pool; write ``output`` when given.

    Returns the summary: pool size, kept, removed per reason, re-admitted rows, and the accounting.
    """
    t0 = time.perf_counter()
    manifest = load_manifest(run_dir)
    stages = apply_sets(select_stages(manifest), list(sets))
    stored = {
        n
        for f in _files(run_dir, "kept") + _files(run_dir, "rejected")
        for n in runfiles.read_schema(f).names
    }
    for _, rules in stages:
        for rule in rules:
            if rule.column not in stored:
                raise PhaseError(
                    f"{run_dir} stores no column {rule.column!r}; stored score columns: "
                    + ", ".join(sorted(c for c in stored if "." in c))
                )
    if output is None:
        return _reselect(run_dir, manifest, stages, list(sets), None, t0)
    restore_swapped(output)
    if output.exists() and any(output.iterdir()):
        raise PhaseError(f"{output}: already exists and is not empty; choose a new --output")
    # written beside it and renamed into place once complete: a failure leaves no half run behind
    with staged_dir(output) as stage:
        (stage / "kept").mkdir()
        (stage / "rejected").mkdir()
        return _reselect(run_dir, manifest, stages, list(sets), stage, t0)


def _reselect(
    run_dir: Path,
    manifest: dict[str, Any],
    stages: list[tuple[str, list[Rule]]],
    sets: list[str],
    output: Path | None,
    t0: float,
) -> dict[str, Any]:
    """:func:`reselect`'s pass over the pool, writing the new run into ``output`` (a staging folder)."""
    labels = {label for label, _ in stages}
    after = stages_after(manifest)
    kept = pool = readmitted = missing = pool_bytes = 0
    removed: dict[str, int] = {}
    carried: dict[str, int] = {}
    skipped: dict[str, int] = {}  # later stage -> re-admitted rows that never went through it
    unchecked = 0  # re-admitted rows that skipped at least one later dedup or transform
    for name, table, carry, origin in _pool(run_dir, labels):
        reasons, stage_of, miss = _decide(table, stages)
        missing += miss
        keep = np.array([r is None for r in reasons], dtype=bool)
        pool += table.num_rows
        pool_bytes += schema.text_bytes(table.select([schema.TEXT]))
        kept += int(keep.sum())
        for label in (origin[i] for i in np.flatnonzero(keep)):
            if label is None:
                continue  # a row the run kept
            readmitted += 1
            unchecked += bool(after.get(label))
            for later in after.get(label, []):
                skipped[later] = skipped.get(later, 0) + 1
        for r in reasons[~keep]:
            removed[r] = removed.get(r, 0) + 1
        if carry is not None:
            for r in carry.column(schema.REASON).to_pylist():
                carried[r] = carried.get(r, 0) + 1
        if output is not None:
            _write(output, name, table, keep, reasons, stage_of, carry)
    n_input = manifest["accounting"]["input"]
    quarantined = sum(c for r, c in carried.items() if r.startswith(schema.QUARANTINE_PREFIX))
    accounting = {
        "input": n_input,
        "kept": kept,
        "rejected": sum(removed.values()) + sum(carried.values()) - quarantined,
        "quarantined": quarantined,
    }
    accounting["balanced"] = kept + accounting["rejected"] + quarantined == n_input
    summary = {
        "source_run": str(run_dir),
        "sets": list(sets),
        "rules": [{"label": label, "rules": [r.__dict__ for r in rules]} for label, rules in stages],
        "pool": pool,
        "kept": kept,
        "removed": dict(sorted(removed.items())),
        "carried_over": dict(sorted(carried.items())),
        "readmitted": readmitted,
        "readmitted_unchecked": unchecked,
        "readmitted_skipped": dict(sorted(skipped.items())),
        "pool_bytes": pool_bytes,
        "missing_score": missing,
        "accounting": accounting,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if output is not None:
        _write_manifest(output, manifest, stages, summary)
    return summary


def _write(
    out: Path,
    name: str,
    table: pa.Table,
    keep: np.ndarray,
    reasons: np.ndarray,
    stage_of: np.ndarray,
    carry: pa.Table | None,
) -> None:
    if keep.any():
        with atomic_path(out / "kept" / name) as tmp:
            pq.write_table(table.filter(pa.array(keep)), tmp, compression="zstd")
    rejected = []
    if (~keep).any():
        r = table.filter(pa.array(~keep))
        r = r.append_column(schema.STAGE, pa.array(stage_of[~keep].tolist(), pa.string()))
        rejected.append(r.append_column(schema.REASON, pa.array(reasons[~keep].tolist(), pa.string())))
    if carry is not None and carry.num_rows:
        rejected.append(carry)
    if rejected:
        table = pa.concat_tables(rejected, promote_options="permissive")
        stem = name.removesuffix(".parquet").removeprefix("part-")
        with atomic_path(out / "rejected" / f"part-{stem}.parquet") as tmp:
            pq.write_table(table, tmp, compression="zstd")


def _write_manifest(
    out: Path, source: dict[str, Any], stages: list[tuple[str, list[Rule]]], summary: dict[str, Any]
) -> None:
    """A run manifest for ``out``: the source run's config and stages, the new rules and accounting."""
    a = summary["accounting"]
    resolved = []
    new_rules = dict(stages)
    for s in source.get("stages_resolved", []):
        if s.get("kind") == "select" and s["label"] in new_rules:
            s = dict(s, params={"rules": [r.__dict__ for r in new_rules.pop(s["label"])]})
        resolved.append(s)
    for label, rules in new_rules.items():
        resolved.append(
            {
                "name": "select",
                "label": label,
                "kind": "select",
                "params": {"rules": [r.__dict__ for r in rules]},
            }
        )
    reasons = {**summary["carried_over"]}
    for r, c in summary["removed"].items():
        reasons[r] = reasons.get(r, 0) + c
    funnel = [
        {
            "name": f"pool from {Path(summary['source_run']).name}",
            "docs_in": a["input"],
            "docs_out": summary["pool"],
            "bytes_in": (source.get("stages") or [{}])[0].get("bytes_in", 0),
            "bytes_out": summary["pool_bytes"],
            "removed": summary["carried_over"],
            "wall_s": 0.0,
            "cpu_s": 0.0,
        },
        {
            "name": "select (again)",
            "docs_in": summary["pool"],
            "docs_out": summary["kept"],
            "bytes_in": summary["pool_bytes"],
            "bytes_out": sum(_text_bytes(f) for f in _files(out, "kept")),
            "removed": summary["removed"],
            "wall_s": summary["seconds"],
            "cpu_s": 0.0,
        },
    ]
    manifest = dict(
        source,
        status="complete",
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        curate_version=__version__,
        stages_resolved=resolved,
        accounting=a,
        removed_by_reason=dict(sorted(reasons.items())),
        stages=funnel,
        reselected=summary,
        wall_s=summary["seconds"],
    )
    for key in ("phases", "outputs"):
        manifest.pop(key, None)
    atomic_write_json(out / "manifest.json", manifest, indent=1, sort_keys=True, default=str)


def _text_bytes(path: Path) -> int:
    return schema.text_bytes(runfiles.read_table(path, columns=[schema.TEXT]))


def format_summary(s: dict[str, Any], output: Path | None) -> str:
    a = s["accounting"]
    lines = [f"select pool {s['pool']:,} (kept + rows a select rule rejected) of input {a['input']:,}"]
    for group in s["rules"]:
        for r in group["rules"]:
            bounds = ", ".join(f"{k} {r[k]}" for k in BOUNDS if r[k] is not None)
            lines.append(f"  {group['label']}: {r['column']} {bounds}")
    top = sorted(s["removed"].items(), key=lambda kv: (-kv[1], kv[0]))
    lines.append(
        f"kept {s['kept']:,}; removed {sum(s['removed'].values()):,}: "
        + ", ".join(f"{r} {c:,}" for r, c in top[:6])
    )
    lines.append(
        f"re-admitted {s['readmitted']:,} rows a select rule had rejected; {s['missing_score']:,} failed "
        "for a score computed after their first rejection"
    )
    if s["readmitted_unchecked"]:
        later = ", ".join(f"{k} ({v:,})" for k, v in s["readmitted_skipped"].items())
        lines.append(
            f"warning: {s['readmitted_unchecked']:,} re-admitted rows never went through the stages after "
            f"the select that rejected them: {later}; the new kept set may hold duplicates those stages "
            "would have removed (run `curate run` with the new thresholds for a fully deduplicated set)"
        )
    lines.append(
        f"input {a['input']:,} = kept {a['kept']:,} + rejected {a['rejected']:,} + quarantined {a['quarantined']:,}"
        f"  ({'balanced' if a['balanced'] else 'NOT BALANCED'}); {s['seconds']:.2f} s"
    )
    lines.append(
        f"written: {output}" if output else "nothing written (give --output DIR to write the new kept set)"
    )
    return "\n".join(lines)


def _handler(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else None
    summary = reselect(Path(args.run_dir), args.set or [], output)
    print(format_summary(summary, output))
    return 0 if summary["accounting"]["balanced"] else 3


def register(subparsers: Any) -> None:
    """Add the ``select`` verb to the main CLI."""
    p = subparsers.add_parser(
        "select",
        help="re-threshold a finished run from its stored scores (no model re-run)",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run directory")
    p.add_argument(
        "--set",
        action="append",
        metavar="COLUMN.BOUND=VALUE",
        help="change or add a rule bound over a stored score column (not a pipeline key, as curate run's --set)",
    )
    p.add_argument("--output", metavar="NEW", help="write the new kept set as a run directory here")
    p.set_defaults(func=_handler)
