"""pii_v1 vs datatrove's PIIFormatter per core, interleaved in one run, on PII-dense and on plain web text.

    python benchmarks/pii_speed.py [--repeats 5] [--docs-per-file 600] [--baseline-tree ../main]

The documents are ``bench_pii.py``'s held-out labelled set (documents 600-1,199 of ``web/c4_en``,
``web/webtext``, ``web/news``, planting seed 1): ``planted`` (every document holds PII or a decoy, the
stress set) and ``original`` (the same documents before planting: web text as it comes). Each repeat
times, one after the other, pii_v1 with all seven types on a **fresh stage** (so its validators'
caches start empty: a repeat never reuses a verdict of an earlier one), pii_v1 with datatrove's two
types (e-mail + IP), and datatrove 0.10.1's ``PIIFormatter.format`` per text in its own environment
(``bench-out/dt-venv``, ``pii_peers.py``, one pass per call). Times are CPU seconds
(``time.process_time``) of one pass in one process (one core); with ``--baseline-tree`` the same pass
of pii_v1 as another checkout has it (a child process with that tree on ``PYTHONPATH``) joins each
repeat, so a speed change is measured beside its peer in the same run. Reported: each repeat, the median, and
the median of the per-repeat ratios datatrove / pii_v1 (> 1: pii_v1 faster). The load average is
printed before and after. pii_v1's outputs (text and count columns) are hashed and printed, so a
speed change can be checked to leave them identical (``tests/filters/test_pii_outputs.py`` does so
on a synthetic set).

    python3 -m venv bench-out/dt-venv && bench-out/dt-venv/bin/pip install datatrove==0.10.1 regex
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if "--one-pass" not in sys.argv:  # a one-pass child times the curate its PYTHONPATH names
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from curate.filters.pii import Pii, PiiParams  # noqa: E402

OUT = ROOT / "bench-out" / "pii"
DATATROVE = ROOT / "bench-out" / "dt-venv" / "bin" / "python"


def ours_once(texts: list[str], types: list[str] | None, batch: int = 2000) -> tuple[float, str]:
    """CPU seconds of one pass of a fresh pii_v1 stage over ``texts`` in batches, and the sha256 of its
    output columns. A throwaway stage first makes one pass, so what a long-running worker has loaded
    once (``phonenumbers``' metadata of each region, ``re``'s cache) is loaded, as datatrove's timed pass
    follows an untimed one; the timed stage is new, so its own verdict caches start empty."""
    tables = [
        pa.table({"id": [str(i) for i in range(len(chunk))], "text": chunk, "source": ["b"] * len(chunk)})
        for chunk in (texts[j : j + batch] for j in range(0, len(texts), batch))
    ]
    params = PiiParams(types=types) if types else PiiParams()
    for t in tables:
        Pii(params).process(t)
    stage = Pii(params)
    stage.setup()
    c0 = time.process_time()
    outs = [stage.process(t) for t in tables]
    cpu = time.process_time() - c0
    h = hashlib.sha256()
    for o in outs:
        for c in o.column_names:
            if c not in ("id", "source"):
                h.update(json.dumps([c, o.column(c).to_pylist()]).encode())
    return cpu, h.hexdigest()


def tree_once(tree: Path, src: Path) -> float:
    """CPU seconds of one pass of pii_v1 (all types, fresh stage) as the checkout ``tree`` has it."""
    out = subprocess.run(
        [sys.executable, str(HERE / "pii_speed.py"), "--one-pass", str(src)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"},
    )
    return float(out.stdout.split()[-1])


def one_pass(src: Path) -> int:
    import curate.filters.pii

    texts = [json.loads(line)["text"] for line in src.read_text().splitlines()]
    print(f"# {curate.filters.pii.__file__}", file=sys.stderr)
    print(ours_once(texts, None)[0])
    return 0


def datatrove_once(src: Path) -> float:
    python = DATATROVE
    dst = OUT / f"speed-datatrove.{src.stem}.jsonl"
    subprocess.run(
        [str(python), str(HERE / "pii_peers.py"), "datatrove", str(src), str(dst), "1"],
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return float(json.loads(dst.read_text().splitlines()[-1])["cpu_s"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--docs-per-file", type=int, default=600)
    ap.add_argument("--skip", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--baseline-tree", type=Path, help="also time pii_v1 of this checkout (e.g. main), interleaved"
    )
    ap.add_argument("--one-pass", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one_pass:
        return one_pass(args.one_pass)
    # bench_pii puts this checkout first on sys.path: imported here, never in a --one-pass child
    import pii_labelled
    from _common import machine
    from bench_pii import load

    if not DATATROVE.exists():
        print("datatrove's environment is missing: see this script's docstring")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    src = [
        d
        for f in ("web/c4_en.jsonl.gz", "web/webtext.jsonl.gz", "web/news.jsonl.gz")
        for d in load(f, args.docs_per_file, args.skip)
    ]
    docs = pii_labelled.build(src, seed=args.seed)
    print(f"machine: {machine()}; load before: {os.getloadavg()}")
    result = {}
    for name, texts in (("planted", [d.text for d in docs]), ("original", [d.original for d in docs])):
        path = OUT / f"speed.{name}.jsonl"
        path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
        mb = sum(len(t.encode()) for t in texts) / 1e6
        rows: dict[str, list[float]] = {"pii_v1_all": [], "pii_v1_email_ip": [], "datatrove": []}
        if args.baseline_tree:
            rows["baseline_tree_all"] = []
        digests = set()
        for _ in range(args.repeats):  # interleaved: each repeat runs all three back to back
            cpu, digest = ours_once(texts, None)
            rows["pii_v1_all"].append(cpu)
            digests.add(digest)
            rows["pii_v1_email_ip"].append(ours_once(texts, ["email", "ip"])[0])
            rows["datatrove"].append(datatrove_once(path))
            if args.baseline_tree:
                rows["baseline_tree_all"].append(tree_once(args.baseline_tree, path))
        ratio = [d / o for d, o in zip(rows["datatrove"], rows["pii_v1_all"], strict=True)]
        print(f"\n{name}: {len(texts):,} docs, {mb:.2f} MB; CPU s per pass, one core, {args.repeats} repeats")
        for k, v in rows.items():
            med = statistics.median(v)
            print(
                f"  {k:16s} median {med:.3f} s ({len(texts) / med:8,.0f} docs/s)  each {[round(x, 3) for x in v]}"
            )
        print(
            f"  datatrove / pii_v1 (all 7 types), per repeat: {[round(r, 2) for r in ratio]}; "
            f"median {statistics.median(ratio):.2f}x"
        )
        print(f"  pii_v1 output sha256: {sorted(digests)}")
        result[name] = {
            "docs": len(texts),
            "mb": mb,
            **rows,
            "ratio_datatrove_over_pii_v1_all": ratio,
            "output_sha256": sorted(digests),
        }
    print(f"\nload after: {os.getloadavg()}")
    (OUT / "speed.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
