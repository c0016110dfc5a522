"""`make bench`: run every benchmarks/bench_*.py in turn (or those named), logging to bench-out/.

    .venv/bin/python benchmarks/run_all.py                 # all
    .venv/bin/python benchmarks/run_all.py pipeline dedup  # bench_pipeline.py and bench_dedup.py

Each script compares against its peer (datatrove, raw fastText, transformers.Trainer) in the same run and
prints its figures; BENCHMARKS.md records them with the machine and date. The load benchmark
(bench_load.py, millions of documents) is left out unless named, since it takes the better part of an hour.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "bench-out"
OPT_IN = {"load"}


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    if not argv:
        names = [n for n in names if n not in OPT_IN]
    OUT.mkdir(exist_ok=True)
    failed = []
    for name in names:
        script = HERE / f"bench_{name}.py"
        if not script.exists():
            print(
                f"no benchmark {script.name}; available: {', '.join(sorted(p.stem for p in HERE.glob('bench_*.py')))}"
            )
            return 2
        log = OUT / f"{name}.log"
        print(f"== {script.name} (log: {log})", flush=True)
        t0 = time.perf_counter()
        with open(log, "w") as f:
            proc = subprocess.run(
                [sys.executable, str(script)], stdout=f, stderr=subprocess.STDOUT, cwd=HERE.parent
            )
        print(f"   exit {proc.returncode} in {time.perf_counter() - t0:.0f} s", flush=True)
        print("   " + "\n   ".join(log.read_text().splitlines()[-25:]))
        if proc.returncode:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
