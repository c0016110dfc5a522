"""Pipeline throughput over ../shared/corpora/web/*.jsonl.gz.

Default: read + normalize + exact dedup + write on the inline engine (one process, one core) and on
the embedded Ray engine (all cores): docs/s, MB/s (UTF-8 text read) and the peak RSS of the process tree.

    .venv/bin/python benchmarks/bench_pipeline.py [--glob '../shared/corpora/web/*.jsonl.gz']

``--compare OLD_TREE``: the web recipe (``pipelines/web.yaml``) as ``curate run`` in a subprocess, once
with this checkout's code and once with the code in ``OLD_TREE`` (e.g. ``git archive ca2cb90`` unpacked
somewhere), interleaved (old, new, old, new, ...) ``--reps`` times, inline with one polars thread (one
core); per run wall, CPU seconds of the process tree, docs/s and docs per CPU-s, and the ``kept/`` and
``rejected/`` digests of the manifest, and a digest of the decisions (kept ids, rejected ids and reasons),
which must be equal between old and new (only speed changed; a score computed in another float order
changes the files' digests, not the decisions).

    .venv/bin/python benchmarks/bench_pipeline.py --compare /tmp/old --reps 3 [--glob ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import CORPORA, ROOT, PeakMemory, machine, tree_rss_bytes
from curate.core import schema
from curate.core.engine import make_engine
from curate.pipeline.config import parse_pipeline
from curate.runtime.runner import run_pipeline

PIPELINE = """
name: bench_foundation
input: {{path: '{glob}', format: jsonl}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
"""


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_curate(
    tree: Path,
    glob: str,
    out: Path,
    *,
    pipeline: Path | None = None,
    engine: str = "inline",
    sets: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``curate run`` of ``pipeline`` (default: the tree's ``pipelines/web.yaml``) over ``glob`` with the
    code of ``tree``, in a subprocess (phases off; inline runs with one polars thread): wall, CPU
    seconds of the finished process tree, peak RSS of its process tree (sampled every 0.2 s), and the
    run's manifest."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    if engine == "inline":
        env["POLARS_MAX_THREADS"] = "1"
    cmd = [sys.executable, "-m", "curate", "run", str(pipeline or tree / "pipelines" / "web.yaml")]
    cmd += ["--input", glob, "--output", str(out), "--engine", engine, "--no-phases", "-q"]
    for kv in sets:
        cmd += ["--set", kv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:  # the run's own process tree (Ray's processes included), not ours
        peak = max(peak, tree_rss_bytes(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    stderr = proc.stderr.read() if proc.stderr else ""
    if proc.stdout:
        proc.stdout.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    manifest = json.loads((out / "manifest.json").read_text())
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_MiB": peak / 2**20, "manifest": manifest}


def decisions_digest(run: Path) -> str:
    """sha256 of the sorted kept ids and the sorted (id, reason) of the rejected rows: equal when two runs
    decide alike even if a score column differs in its last bits (the files' digests would not be)."""
    import pyarrow.parquet as pq

    h = hashlib.sha256()
    for sub, cols in (("kept", [schema.ID]), ("rejected", [schema.ID, "reason"])):
        files = sorted((run / sub).glob("part-*.parquet"))
        rows = sorted(
            tuple(str(v) for v in row)
            for f in files
            for row in zip(*(pq.read_table(f, columns=cols).column(c).to_pylist() for c in cols), strict=True)
        )
        h.update(f"{sub}:{len(rows)}\n".encode())
        for row in rows:
            h.update(("\t".join(row) + "\n").encode())
    return h.hexdigest()[:16]


def summarize(r: dict[str, Any]) -> dict[str, Any]:
    m = r["manifest"]
    docs = m["accounting"]["input"]
    return {
        "docs": docs,
        "wall_s": round(r["wall_s"], 1),
        "cpu_s": round(r["cpu_s"], 1),
        "docs_per_s": round(docs / r["wall_s"]),
        "docs_per_cpu_s": round(docs / r["cpu_s"]),
        "peak_rss_MiB": round(r["peak_rss_MiB"]),
        "kept": m["accounting"]["kept"],
        "kept_sha256": m["outputs"]["kept_sha256"][:16],
        "rejected_sha256": m["outputs"]["rejected_sha256"][:16],
        "stage_cpu_s": {s["name"]: round(s["cpu_s"], 2) for s in m["stages"]},
    }


def compare(old: Path, glob: str, reps: int) -> int:
    """Old and new code interleaved on the web recipe; medians and the ratio; digests must agree."""
    print(f"machine: {machine()}; {load()}", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for rep in range(reps):
        for name, tree in (("old", old), ("new", ROOT)):
            out = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
            row = summarize(run_curate(tree, glob, out / "run"))
            row["decisions_sha256"] = decisions_digest(out / "run")
            shutil.rmtree(out, ignore_errors=True)
            row |= {"rep": rep, "load_after": load()}
            rows[name].append(row)
            print(name, json.dumps(row), flush=True)
    med = {
        k: {
            f: statistics.median(r[f] for r in v) for f in ("wall_s", "cpu_s", "docs_per_s", "docs_per_cpu_s")
        }
        for k, v in rows.items()
    }
    digests = {(r["kept_sha256"], r["rejected_sha256"]) for v in rows.values() for r in v}
    decisions = {r["decisions_sha256"] for v in rows.values() for r in v}
    print(json.dumps({"median": med}, indent=1))
    print(
        f"new/old docs per CPU-s {med['new']['docs_per_cpu_s'] / med['old']['docs_per_cpu_s']:.2f}x, "
        f"docs/s (wall) {med['new']['docs_per_s'] / med['old']['docs_per_s']:.2f}x; "
        f"decisions {'identical' if len(decisions) == 1 else 'DIFFERENT: ' + str(decisions)}; "
        f"output files {'identical' if len(digests) == 1 else 'differ: ' + str(digests)}; {load()}"
    )
    return 0 if len(decisions) == 1 else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default=str(CORPORA / "web" / "*.jsonl.gz"))
    ap.add_argument("--engines", default="inline,ray")
    ap.add_argument("--compare", type=Path, help="a checkout of the old code: old vs new on the web recipe")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if not list(Path(args.glob).parent.glob(Path(args.glob).name)):
        print(f"skip: no files match {args.glob} (../shared/corpora absent)")
        return 0
    if args.compare:
        return compare(args.compare.resolve(), str(Path(args.glob).resolve()), args.reps)
    cfg = parse_pipeline(PIPELINE.format(glob=args.glob))
    rows = []
    for kind in args.engines.split(","):
        out = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
        with PeakMemory() as mem:
            engine = make_engine(kind, progress=False)
            t0 = time.perf_counter()
            m = run_pipeline(cfg, out / "run", engine=engine, phases=False)
            wall = time.perf_counter() - t0
            engine.shutdown()
        read = next(s for s in m["stages"] if s["name"] == "read")
        docs, mb = read["docs_in"], read["bytes_out"] / 1e6
        rows.append(
            {
                "engine": kind,
                "workers": m["engine"]["num_workers"],
                "docs": docs,
                "MB": round(mb, 1),
                "wall_s": round(wall, 2),
                "docs_per_s": round(docs / wall),
                "MB_per_s": round(mb / wall, 2),
                "peak_rss_MiB": round(mem.peak / 2**20),
                "kept": m["accounting"]["kept"],
                "exact_duplicates": m["removed_by_reason"].get("exact_dedup_v1:duplicate", 0),
            }
        )
        shutil.rmtree(out, ignore_errors=True)
    print(f"machine: {machine()}")
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
