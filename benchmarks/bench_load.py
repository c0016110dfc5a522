"""Load test: a synthetic corpus of millions of documents through normalize + exact + MinHash dedup on Ray.

The corpus is synthesized from ../shared/corpora/web: each document's length (in characters) is drawn
from the pooled length distribution of the real web files, and its text is 1-3 real text pieces cut at
random offsets from those files and joined. A fixed share of documents are exact copies (5 %) and
near copies (3 %: one word replaced) of earlier documents, so both dedup stages have work to do.

Reported per size: docs/s, MB/s, peak RSS summed over every process of the run (driver, raylet, GCS,
workers: the whole process tree, sampled every 0.5 s), Ray object spilling (bytes spilled/restored),
and the run-directory bytes on disk. The same pipeline runs at N and 2N documents so that the growth
of cost can be read off (the ratio of wall times, reported).

    python benchmarks/bench_load.py --docs 2000000 --scale 2 [--workdir /tmp] [--keep]

The generated data and run directories live under a fresh ``--workdir`` temp folder and are deleted
at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"

from benchmarks._common import PeakMemory, machine  # noqa: E402

PIPELINE = """
name: bench_load
input: {{path: '{glob}', format: jsonl}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
  - dedup: minhash_dedup_v1
"""


# -- corpus synthesis ------------------------------------------------------------------------------------
def load_real(web: Path) -> tuple[str, np.ndarray]:
    """All web texts joined with blank lines (the piece pool) and their lengths (the length distribution)."""
    texts: list[str] = []
    for f in sorted(web.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for line in fh]
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    return "\n\n".join(texts), lengths[lengths > 0]


def generate(out_dir: Path, n_docs: int, *, pool: str, lengths: np.ndarray, files: int, seed: int = 0) -> int:
    """Write ``n_docs`` documents into ``files`` plain JSONL files; returns the total bytes written."""
    rng = np.random.default_rng(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    lens = rng.choice(lengths, size=n_docs)
    n_pieces = rng.integers(1, 4, size=n_docs)
    starts = rng.integers(0, len(pool) - 1, size=(n_docs, 3))
    kind = rng.random(n_docs)  # < 0.05: exact copy of an earlier doc; < 0.08: near copy
    per_file = -(-n_docs // files)
    recent: list[str] = []
    total = 0
    for f in range(files):
        lines = []
        for i in range(f * per_file, min(n_docs, (f + 1) * per_file)):
            if kind[i] < 0.08 and recent:
                base = recent[int(starts[i, 0]) % len(recent)]
                if kind[i] < 0.05:
                    text = base
                else:  # replace one word: a near duplicate (Jaccard of 5-grams stays high for long docs)
                    cut = int(starts[i, 1]) % max(1, len(base))
                    sp = base.find(" ", cut)
                    nxt = base.find(" ", sp + 1) if sp >= 0 else -1
                    text = base[:sp] + " variant" + base[nxt:] if nxt > 0 else base + " variant"
            else:
                k, L = int(n_pieces[i]), int(lens[i])
                bounds = [L * j // k for j in range(k + 1)]
                text = " ".join(
                    pool[int(starts[i, j]) : int(starts[i, j]) + bounds[j + 1] - bounds[j]] for j in range(k)
                )
            if len(recent) < 20000:
                recent.append(text)
            else:
                recent[int(starts[i, 2]) % 20000] = text
            lines.append(
                json.dumps({"id": f"g{i}", "text": text, "source": "synthetic-web"}, ensure_ascii=False)
            )
        data = ("\n".join(lines) + "\n").encode()
        (out_dir / f"part-{f:04d}.jsonl").write_bytes(data)
        total += len(data)
    return total


def spill_stats() -> dict[str, float]:
    """Ray's object-store spill/restore totals from the memory summary (MiB; 0 when nothing spilled)."""
    import re

    import ray
    from ray._private.internal_api import memory_summary

    text = memory_summary(address=ray.get_runtime_context().gcs_address, stats_only=True)
    out = {"spilled_MiB": 0.0, "restored_MiB": 0.0}
    m = re.search(r"Spilled (\d+) MiB", text)
    if m:
        out["spilled_MiB"] = float(m.group(1))
    m = re.search(r"Restored (\d+) MiB", text)
    if m:
        out["restored_MiB"] = float(m.group(1))
    return out


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run_once(data: Path, run_dir: Path, num_cpus: int | None) -> dict:
    from curate.core.engine import RayEngine
    from curate.pipeline.config import parse_pipeline
    from curate.runtime.runner import run_pipeline

    cfg = parse_pipeline(PIPELINE.format(glob=str(data / "*.jsonl")))
    with PeakMemory(interval=0.5) as mem:
        engine = RayEngine(num_cpus=num_cpus, progress=False)
        t0 = time.perf_counter()
        m = run_pipeline(cfg, run_dir, engine=engine, phases=False)
        wall = time.perf_counter() - t0
        try:
            spill = spill_stats()
        except Exception as e:
            spill = {"error": repr(e)}
        engine.shutdown()
    load = os.getloadavg()[1]  # the 5-minute load average at the end: other work sharing the cores
    read = next(s for s in m["stages"] if s["name"] == "read")
    stages = {s["name"]: round(s["wall_s"], 1) for s in m["stages"]}
    cpu = {s["name"]: round(s["cpu_s"], 1) for s in m["stages"]}  # CPU seconds: less sensitive to sharing
    return {
        "docs": read["docs_in"],
        "MB_text": round(read["bytes_out"] / 1e6),
        "wall_s": round(wall, 1),
        "docs_per_s": round(read["docs_in"] / wall),
        "MB_per_s": round(read["bytes_out"] / 1e6 / wall, 2),
        "peak_rss_GiB": round(mem.peak / 2**30, 2),
        "peak_rss_by_process_MiB": {
            k: round(v / 2**20) for k, v in sorted(mem.per_process.items(), key=lambda kv: -kv[1])[:8]
        },
        "spill": spill,
        "run_dir_GB": round(du(run_dir) / 1e9, 2),
        "accounting": m["accounting"],
        "removed_by_reason": m["removed_by_reason"],
        "stage_wall_s": stages,
        "stage_cpu_s": cpu,
        "loadavg_5min_end": round(load, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2_000_000)
    ap.add_argument("--scale", type=int, default=2, help="also run with docs x scale (1: only one size)")
    ap.add_argument("--docs-per-file", type=int, default=50_000)
    ap.add_argument("--workdir", default=tempfile.gettempdir())
    ap.add_argument("--num-cpus", type=int, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    web = CORPORA / "web"
    if not web.exists():
        print(f"skip: {web} is absent")
        return 0
    base = Path(tempfile.mkdtemp(prefix="bench-load-", dir=args.workdir))
    print(
        f"machine: {machine()}\ndate: {datetime.now(UTC).isoformat(timespec='seconds')}\nworkdir: {base}",
        flush=True,
    )
    pool, lengths = load_real(web)
    print(
        f"length distribution from {len(lengths)} real web docs: mean {lengths.mean():.0f}, median "
        f"{np.median(lengths):.0f}, p99 {np.percentile(lengths, 99):.0f} chars",
        flush=True,
    )
    rows = []
    try:
        sizes = [args.docs] + ([args.docs * args.scale] if args.scale > 1 else [])
        for n in sizes:
            data = base / f"data-{n}"
            t0 = time.perf_counter()
            nbytes = generate(data, n, pool=pool, lengths=lengths, files=max(1, -(-n // args.docs_per_file)))
            print(
                f"generated {n} docs, {nbytes / 1e9:.2f} GB JSONL in {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            r = run_once(data, base / f"run-{n}", args.num_cpus)
            r["input_GB"] = round(nbytes / 1e9, 2)
            print(json.dumps(r), flush=True)
            rows.append(r)
            if not args.keep:
                shutil.rmtree(data, ignore_errors=True)
                shutil.rmtree(base / f"run-{n}", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(
        "\n| docs | input GB | wall s | docs/s | MB/s | stage CPU s | peak RSS GiB (all processes) | spilled MiB |"
        " run dir GB |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['docs']:,} | {r['input_GB']} | {r['wall_s']} | {r['docs_per_s']:,} | {r['MB_per_s']} | "
            f"{sum(r['stage_cpu_s'].values()):.0f} | {r['peak_rss_GiB']} | {r['spill'].get('spilled_MiB', '?')} | "
            f"{r['run_dir_GB']} |"
        )
    if len(rows) == 2:
        cpu0, cpu1 = (sum(r["stage_cpu_s"].values()) for r in rows)
        print(
            f"\ncost ratio for {args.scale}x docs: wall {rows[1]['wall_s'] / rows[0]['wall_s']:.2f}x, "
            f"stage CPU {cpu1 / cpu0:.2f}x, peak RSS {rows[1]['peak_rss_GiB'] / rows[0]['peak_rss_GiB']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
