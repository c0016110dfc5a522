"""How the web recipe's cost grows: docs/s and peak memory at 1x / 4x / 16x input, inline (one core) and
on embedded Ray with 1 and 2 CPUs, beside ``curate plan``'s projection for the same sizes.

The input grows by repeating the base files with new ids: copy ``k`` (k >= 1) of a document gets the id
``<id>#<k>`` and its text prefixed by ``c<k> `` (one word), so exact dedup does not collapse the copies
before the filters and every stage works on the grown input, as it would on a larger crawl; MinHash
then removes the copies as near-duplicates at the end. Each copy is its own gzip file (a work unit).

Every run is ``curate run pipelines/web.yaml`` in a subprocess (``bench_pipeline.run_curate``): wall
of the whole process (start-up included), CPU seconds of the process tree, peak RSS of the tree (Ray's
raylet and workers included). Two projections per run: ``curate plan`` with its built-in rates
for the engine of the run (``plan_default_s``) and calibrated by the 1x run of the same engine (``plan --from-run``,
``plan_pilot_s``); ``err`` is projection / measured wall - 1. On a shared machine the wall is
stretched by other processes, so the calibrated plan's core-seconds are also compared with the CPU
seconds measured (``plan_pilot_cpu_err``).

    .venv/bin/python benchmarks/bench_scale.py [--glob '../shared/corpora/web/news.jsonl.gz'] \\
        [--factors 1,4,16] [--engines inline,ray1,ray2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import CORPORA, ROOT, machine
from benchmarks.bench_pipeline import load, run_curate
from curate.pipeline.config import load_pipeline
from curate.plan.model import pilot_from_manifest, pipeline_stage_names, project

PIPELINE = ROOT / "pipelines" / "web.yaml"
ENGINES = {
    "inline": ("inline", ()),
    "ray1": ("ray", ("engine.num_cpus=1",)),
    "ray2": ("ray", ("engine.num_cpus=2",)),
}
CORES = {"inline": 1, "ray1": 1, "ray2": 2}


def grow(files: list[Path], factor: int, out: Path) -> Path:
    """``factor`` copies of every file in ``out`` (copy 0 as it is, copy k with new ids and a marked
    text); returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        with gzip.open(f, "rt", encoding="utf-8") as r:
            lines = r.read().split("\n")  # not splitlines(): U+2028 and friends sit inside JSON strings
        stem = f.name.split(".")[0]
        for k in range(factor):
            with gzip.open(out / f"{stem}-{k:02d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as w:
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:  # a bad line stays bad in every copy (quarantined)
                        w.write(line + "\n")
                        continue
                    if k:
                        rec["id"] = f"{rec.get('id')}#{k}"
                        if isinstance(rec.get("text"), str):
                            rec["text"] = f"c{k} {rec['text']}"
                    w.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default=str(CORPORA / "web" / "*.jsonl.gz"))
    ap.add_argument("--factors", default="1,4,16")
    ap.add_argument("--engines", default="inline,ray1,ray2")
    args = ap.parse_args()
    files = sorted(Path(args.glob).parent.glob(Path(args.glob).name))
    if not files:
        print(f"skip: no files match {args.glob} (../shared/corpora absent)")
        return 0
    names, _ = pipeline_stage_names(load_pipeline(PIPELINE))
    factors = [int(x) for x in args.factors.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    print(f"machine: {machine()}; base: {', '.join(f.name for f in files)}; {load()}", flush=True)
    rows: list[dict[str, Any]] = []
    try:
        inputs = {f: grow(files, f, tmp / f"in-{f}x") for f in factors}
        for engine in args.engines.split(","):
            kind, sets = ENGINES[engine]
            pilot = None
            for f in factors:
                out = tmp / f"run-{engine}-{f}x"
                r = run_curate(ROOT, str(inputs[f] / "*.jsonl.gz"), out, engine=kind, sets=sets)
                m = r["manifest"]
                docs, nbytes = m["accounting"]["input"], m["stages"][0]["bytes_out"]
                if pilot is None:  # the smallest size of this engine calibrates the plan
                    pilot = pilot_from_manifest(m, names, where=f"{engine} {f}x run")
                plan = dict(docs=docs, nbytes=nbytes, nodes=1, cores=CORES[engine], engine=kind)
                default, calibrated = project(names, **plan), project(names, **plan, pilot=pilot)
                default_s, pilot_s = default.wall_s, calibrated.wall_s
                pilot_cpu = sum(s.core_s for s in calibrated.stages)
                row = {
                    "engine": engine,
                    "factor": f,
                    "docs": docs,
                    "MB": round(nbytes / 1e6, 1),
                    "wall_s": round(r["wall_s"], 1),
                    "cpu_s": round(r["cpu_s"], 1),
                    "docs_per_s": round(docs / r["wall_s"]),
                    "docs_per_cpu_s": round(docs / r["cpu_s"]),
                    "peak_rss_MiB": round(r["peak_rss_MiB"]),
                    "kept": m["accounting"]["kept"],
                    "plan_default_s": round(default_s, 1),
                    "plan_default_err": round(default_s / r["wall_s"] - 1, 3),
                    "plan_pilot_s": round(pilot_s, 1),
                    "plan_pilot_err": round(pilot_s / r["wall_s"] - 1, 3),
                    "plan_pilot_cpu_s": round(pilot_cpu, 1),
                    "plan_pilot_cpu_err": round(pilot_cpu / r["cpu_s"] - 1, 3),
                    # the global stages' own rates at this size (MB of text in per CPU-s)
                    "dedup_mb_per_cpu_s": {
                        name: round(rate.mb_per_core_s, 1)
                        for name, rate in pilot_from_manifest(m, names).rates.items()
                        if name in ("exact_dedup_v1", "minhash_dedup_v1")
                    },
                    "load_after": load(),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
