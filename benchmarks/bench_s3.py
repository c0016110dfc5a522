"""Object storage vs local disk: the foundation pipeline (read + normalize + exact dedup + write) over
../shared/corpora/web/*.jsonl.gz, with input and run directory on a loopback S3 endpoint (moto's
server, in this process) or on the local disk, in the same benchmark run.

Each run is ``python -m curate run`` as a user types it: the Ray engine runs embedded inside the private
network namespace, and S3 traffic goes through its egress helper; ``--engine inline`` is measured too
(one process, no namespace). The outputs' digests must be equal.

    .venv/bin/python benchmarks/bench_s3.py [--glob '../shared/corpora/web/*.jsonl.gz'] [--engines inline,ray]
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import CORPORA, machine  # noqa: E402

PIPELINE = """
name: bench_s3
input: {{path: '{glob}', format: jsonl}}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
"""


def run(pipeline: Path, out: str, engine: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "curate", "run", str(pipeline), "--output", out, "--engine", engine, "-q"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=3600,
    )
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default=str(CORPORA / "web" / "*.jsonl.gz"))
    ap.add_argument("--engines", default="inline,ray")
    args = ap.parse_args()
    files = sorted(glob.glob(args.glob))
    if not files:
        print(f"skip: no files match {args.glob} (../shared/corpora absent)")
        return 0
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=endpoint,
        CURATE_STAGE=str(tmp / "stage"),
        RAY_USAGE_STATS_ENABLED="0",
    )
    env.pop("RAY_ADDRESS", None)
    fs = s3fs.S3FileSystem(key="bench", secret="bench", endpoint_url=endpoint)
    fs.mkdir("corpus")
    for f in files:
        fs.put_file(f, f"corpus/web/{Path(f).name}")
    (tmp / "local.yaml").write_text(PIPELINE.format(glob=args.glob))
    (tmp / "s3.yaml").write_text(PIPELINE.format(glob="s3://corpus/web/*.jsonl.gz"))
    rows = []
    try:
        for engine in args.engines.split(","):
            for where in ("local", "s3"):
                out = str(tmp / f"{engine}-run") if where == "local" else f"s3://corpus/runs/{engine}"
                load0 = os.getloadavg()[0]
                wall = run(tmp / f"{where}.yaml", out, engine, env)
                if where == "local":
                    m = json.loads(Path(out, "manifest.json").read_text())
                else:
                    m = json.loads(fs.cat_file(f"corpus/runs/{engine}/manifest.json"))
                docs = m["accounting"]["input"]
                rows.append(
                    {
                        "engine": engine,
                        "storage": where,
                        "docs": docs,
                        "wall_s": round(wall, 2),
                        "docs_per_s": round(docs / wall),
                        "load_avg_1m": [round(load0, 1), round(os.getloadavg()[0], 1)],
                        "kept_sha256": m["outputs"]["kept_sha256"][:12],
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"machine: {machine()}")
    print(json.dumps(rows, indent=1))
    same = {r["kept_sha256"] for r in rows}
    print("identical outputs:", len(same) == 1)
    return 0 if len(same) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
