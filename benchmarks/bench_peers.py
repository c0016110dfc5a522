"""Peers side by side: datatrove, NeMo Curator, Data-Juicer and curate on the same web sample, interleaved.

    make bench-peers                       # creates the peer venvs under bench-out/envs/ when missing
    python benchmarks/bench_peers.py [--docs N] [--repeats R] [--stages a,b] [--tools a,b] [--tag T]
    python benchmarks/bench_peers.py --merge T1,T2   # one table from several --tag runs

Input: the first N/8 documents of each ``../shared/corpora/web/*.jsonl.gz`` file (fewer where a file is
shorter), written once to ``bench-out/peers/sample.jsonl`` (``id``, ``text``, ``source``, ``url`` where
the file has one). Each tool runs each stage kind in a subprocess of its own venv
(``benchmarks/peers/<tool>_runner.py``; ours with this interpreter and ``PYTHONPATH`` = this tree,
through ``curate.run``, inline engine). For every stage: datatrove, NeMo Curator, Data-Juicer, curate,
then again, ``--repeats`` times; the median is reported.

Measured per run, by this process (psutil, every 50 ms): CPU seconds (user + system) of the runner's
whole process tree between the runner's ``work.start`` and ``work.end`` marks (after imports; Ray's
workers included), so *docs per CPU-second* is docs/s per core whatever the load; the runner's own wall
time of that work; the peak of the tree's summed RSS over the whole run. Agreement: the survivors of
each peer against ours on the same stage (% of documents with the same keep/drop decision, and the
counts only one side kept), with examples and each side's reason (``explain`` mode of the runners).
Writes ``bench-out/peers/results.json`` and ``bench-out/peers/report.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import machine  # noqa: E402

OUT = ROOT / "bench-out" / "peers"
ENVS = ROOT / "bench-out" / "envs"
RUNNERS = ROOT / "benchmarks" / "peers"
TOOLS = ("datatrove", "nemo-curator", "data-juicer", "curate")
STAGES = ("read", "exact", "minhash", "heuristics", "langid", "recipe")
FILTER_STAGES = ("heuristics", "langid", "recipe")
# Stage kinds a peer has no CPU path for: recorded, not run.
NO_CPU_PATH = {
    ("nemo-curator", "exact"): "GPU only: ExactDuplicateIdentification imports cudf (RAPIDS)",
    ("nemo-curator", "minhash"): "GPU only: MinHashStage / LSHStage import cudf and rmm (RAPIDS)",
}


def sample(n: int) -> Path:
    """The benchmark input: an equal share of every web corpus file, written once per N."""
    files = sorted(glob.glob(str(ROOT.parent / "shared" / "corpora" / "web" / "*.jsonl.gz")))
    if not files:
        sys.exit("needs ../shared/corpora/web/*.jsonl.gz (the shared corpora; see their README)")
    path = OUT / f"sample-{n}.jsonl"
    if path.exists():
        return path
    share = -(-n // len(files))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".tmp"), "w") as out:
        for f in files:
            with gzip.open(f, "rt") as fh:
                for k, line in enumerate(fh):
                    if k >= share:
                        break
                    d = json.loads(line)
                    row = {"id": d["id"], "text": d["text"], "source": d["source"]}
                    if d.get("url"):
                        row["url"] = d["url"]
                    out.write(json.dumps(row) + "\n")
    os.replace(path.with_suffix(".tmp"), path)
    return path


def command(tool: str, args: list[str]) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "RAY_ADDRESS")}
    env.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false"
    )
    if tool == "curate":
        env["PYTHONPATH"] = str(ROOT)
        return [sys.executable, str(RUNNERS / "curate_runner.py"), *args], env
    python = ENVS / tool / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python} is missing: run `make peer-envs`")
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return [str(python), str(RUNNERS / f"{tool.replace('-', '_')}_runner.py"), *args], env


class TreeMonitor(threading.Thread):
    """Samples a process tree: peak summed RSS, and summed CPU seconds (last value seen per process) at the
    moments the runner's ``work.start`` / ``work.end`` marks appear."""

    def __init__(self, pid: int, out: Path, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.root, self.out, self.interval = pid, out, interval
        self.peak_rss = 0
        self.cpu: dict[int, float] = {}
        self.marks: dict[str, float] = {}
        self.done = threading.Event()

    def sample(self) -> None:
        try:
            root = psutil.Process(self.root)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = 0
        for p in procs:
            try:
                with p.oneshot():
                    rss += p.memory_info().rss
                    t = p.cpu_times()
                    self.cpu[p.pid] = t.user + t.system
            except psutil.Error:
                continue
        self.peak_rss = max(self.peak_rss, rss)
        for mark in ("start", "end"):
            if mark not in self.marks and (self.out / f"work.{mark}").exists():
                self.marks[mark] = sum(self.cpu.values())

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            time.sleep(self.interval)


def run_one(tool: str, stage: str, src: Path, out: Path, timeout: float) -> dict:
    for mark in ("work.start", "work.end", "result.json", "kept.txt"):
        (out / mark).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    cmd, env = command(tool, [stage, str(src), str(out)])
    t0 = time.perf_counter()
    with open(out / "log.txt", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
        mon = TreeMonitor(proc.pid, out)
        mon.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The whole tree: a runner's own children (datatrove's, Ray's) would outlive it otherwise.
            try:
                tree = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                tree = []
            proc.kill()
            for child in tree:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            rc = proc.wait()
        mon.done.set()
        mon.join()
    row: dict = {"tool": tool, "stage": stage, "rc": rc, "wall_s": time.perf_counter() - t0}
    row["peak_rss_mib"] = mon.peak_rss / 2**20
    row["cpu_total_s"] = sum(mon.cpu.values())
    if rc != 0 or not (out / "result.json").exists():
        row["error"] = (out / "log.txt").read_text()[-2000:]
        return row
    row.update(json.loads((out / "result.json").read_text()))
    if "start" in mon.marks and "end" in mon.marks:
        row["cpu_work_s"] = mon.marks["end"] - mon.marks["start"]
    return row


def kept_ids(out: Path) -> set[str]:
    return {line.strip() for line in (out / "kept.txt").read_text().splitlines() if line.strip()}


def explain(tool: str, stage: str, src: Path, out: Path, ids: list[str]) -> dict[str, str]:
    """Each side's reason for a few documents (untimed)."""
    if not ids:
        return {}
    if tool == "curate":
        reasons = json.loads((out / "reasons.json").read_text())
        return {i: reasons.get(i, "kept") for i in ids}
    if stage not in FILTER_STAGES:
        return {i: "dropped as a duplicate by the tool's own dedup" for i in ids}
    (out / "explain-ids.txt").write_text("".join(f"{i}\n" for i in ids))
    cmd, env = command(tool, ["explain", stage, str(src), str(out), str(out / "explain-ids.txt")])
    proc = subprocess.run(cmd, env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not (out / "reasons.json").exists():
        return {i: f"explain failed: {proc.stdout[-200:]}{proc.stderr[-300:]}" for i in ids}
    return json.loads((out / "reasons.json").read_text())


def compare(src: Path, stage: str, tool: str, outs: dict[str, Path], n: int, k: int = 3) -> dict:
    ours, theirs = kept_ids(outs["curate"]), kept_ids(outs[tool])
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    texts = {}
    pick = set(only_ours[:k] + only_theirs[:k])
    with open(src) as f:
        for line in f:
            d = json.loads(line)
            if d["id"] in pick:
                texts[d["id"]] = " ".join(d["text"].split())[:100]
    why_ours = explain("curate", stage, src, outs["curate"], only_theirs[:k])
    why_theirs = explain(tool, stage, src, outs[tool], only_ours[:k])
    return {
        "same_decision_pct": 100 * (n - len(only_ours) - len(only_theirs)) / n,
        "kept_only_by_ours": len(only_ours),
        "kept_only_by_peer": len(only_theirs),
        "examples": [
            {"id": i, "kept_by": "curate", "peer_reason": why_theirs.get(i, "?"), "text": texts.get(i, "")}
            for i in only_ours[:k]
        ]
        + [
            {"id": i, "kept_by": tool, "our_reason": why_ours.get(i, "?"), "text": texts.get(i, "")}
            for i in only_theirs[:k]
        ],
    }


def median(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


HEADER = [
    "| stage | tool | run | kept | docs per CPU-s (median) | vs ours, same run | work wall s | peak RSS MiB "
    "| same decision as ours | only ours kept / only peer kept | load during the stage |",
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
]


def stage_rows(results: dict, stage: str, run: str, tools: tuple[str, ...] = TOOLS) -> list[str]:
    """One table row per tool of one stage of one run; "vs ours" against ours in that same run."""
    n, per_tool = results["docs"], results["stages"][stage]
    load = results.get("load_per_stage", {}).get(stage, {})
    load_txt = f"{load.get('before', '?').split()[0]} -> {load.get('after', '?').split()[0]}"
    ours_cpu = median(per_tool.get("curate", {}).get("runs", []), "cpu_work_s")
    lines = []
    for tool in [t for t in tools if t in per_tool]:
        res = per_tool[tool]
        if "skipped" in res:
            lines.append(
                f"| {stage} | {tool} | {run} | - | no CPU path | - | - | - | - | {res['skipped']} | |"
            )
            continue
        runs = [r for r in res["runs"] if "error" not in r]
        if not res["runs"]:
            lines.append(
                f"| {stage} | {tool} | {run} | not run (stopped) | - | - | - | - | - | - | {load_txt} |"
            )
            continue
        if not runs:
            err = res["runs"][0].get("error", "").strip().splitlines()[-1:]
            why = err[0][:120].replace("|", "/") if err else "?"
            if res["runs"][0]["rc"] in (-9, 137):
                why = f"killed at the timeout ({res['runs'][0]['wall_s']:.0f} s wall)"
            lines.append(f"| {stage} | {tool} | {run} | failed | - | - | - | - | - | {why} | {load_txt} |")
            continue
        cpu = median(runs, "cpu_work_s")
        rate = f"{n / cpu:,.0f}" if cpu else "?"
        ratio = f"{cpu / ours_cpu:.1f}x" if cpu and ours_cpu and tool != "curate" else "-"
        agree = res.get("agreement", {})
        same = f"{agree['same_decision_pct']:.2f}%" if agree else "-"
        diff = f"{agree['kept_only_by_ours']} / {agree['kept_only_by_peer']}" if agree else "-"
        lines.append(
            f"| {stage} | {tool} | {run} | {runs[0]['kept']} | {rate} | {ratio} | {median(runs, 'work_s'):.1f} | "
            f"{max(r['peak_rss_mib'] for r in runs):,.0f} | {same} | {diff} | {load_txt} |"
        )
    return lines


FOOTER = [
    "",
    '"vs ours, same run": the peer\'s CPU seconds over ours in the same invocation (above 1: we are faster',
    "per core). docs per CPU-s = documents / CPU seconds of the runner's process tree between its work marks.",
]


def report(results: dict, run: str = "-") -> str:
    n = results["docs"]
    lines = [
        f"machine: {results['machine']}; docs: {n} ({results['mb']:.1f} MB); repeats: {results['repeats']}",
        f"load before: {results['load_before']}; load after: {results.get('load_after', '?')}",
        "",
        *HEADER,
    ]
    for stage in results["stages"]:
        lines += stage_rows(results, stage, run)
    return "\n".join(lines + FOOTER)


def merged(tags: list[str]) -> str:
    """One table from several invocations (``--tag``), stage by stage; each peer's ratio is against ours
    in its own invocation, and ours is listed once per invocation."""
    runs = {
        t: json.loads((OUT / t / "results.json").read_text())
        for t in tags
        if (OUT / t / "results.json").exists()
    }
    lines = [f"- run `{t}`: no results yet" for t in tags if t not in runs]
    for t, r in runs.items():
        lines.append(
            f"- run `{t}`: {r['docs']} docs ({r['mb']:.1f} MB), repeats {r['repeats']}, started {r.get('started')}, "
            f"finished {r.get('finished', '(stopped early)')}, load {r['load_before']} -> {r.get('load_after', '?')}"
        )
    lines += ["", *HEADER]
    for stage in STAGES:
        for t, r in runs.items():
            if stage in r["stages"]:
                lines += stage_rows(r, stage, t)
    return "\n".join(lines + FOOTER)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=6000, help="sample size (an equal share of each web file)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--tag", default="", help="write runs and results under bench-out/peers/TAG/")
    ap.add_argument("--merge", default="", help="only print one table from these tags' results (a,b,...)")
    args = ap.parse_args()
    if args.merge:
        print(merged(args.merge.split(",")))
        return
    dest = OUT / args.tag if args.tag else OUT
    stages, tools = args.stages.split(","), args.tools.split(",")
    if "curate" not in tools:
        tools.append("curate")
    src = sample(args.docs)
    with open(src) as f:
        n = sum(1 for _ in f)
    mb = os.path.getsize(src) / 1e6
    results: dict = {"machine": machine(), "docs": n, "mb": mb, "repeats": args.repeats, "stages": {}}
    results["load_before"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results["started"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"{n} docs, {mb:.1f} MB; load {results['load_before']}", flush=True)
    for stage in stages:
        per_tool: dict = {
            t: ({"skipped": NO_CPU_PATH[(t, stage)]} if (t, stage) in NO_CPU_PATH else {"runs": []})
            for t in tools
        }
        per_tool["_load"] = {"before": " ".join(f"{x:.2f}" for x in os.getloadavg())}
        for rep in range(args.repeats):
            for tool in tools:
                if "skipped" in per_tool[tool]:
                    continue
                row = run_one(tool, stage, src, dest / "runs" / stage / tool, args.timeout)
                row["repeat"] = rep
                kept = kept_ids(dest / "runs" / stage / tool) if "error" not in row else None
                per_tool[tool].setdefault("kept_sets", []).append(sorted(kept) if kept is not None else None)
                per_tool[tool]["runs"].append(row)
                # So far (without agreement), should the run be stopped before the stage ends.
                results["stages"][stage] = {
                    k: {kk: vv for kk, vv in v.items() if kk != "kept_sets"}
                    for k, v in per_tool.items()
                    if k != "_load"
                }
                (dest / "results.json").write_text(json.dumps(results, indent=1))
                print(
                    f"{stage:10s} {tool:13s} rep {rep}: rc {row['rc']} kept {row.get('kept', '-')} "
                    f"cpu {row.get('cpu_work_s', float('nan')):.1f}s wall {row['wall_s']:.1f}s "
                    f"rss {row['peak_rss_mib']:.0f} MiB load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        per_tool["_load"]["after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        outs = {t: dest / "runs" / stage / t for t in tools}
        for tool in tools:
            res = per_tool[tool]
            sets = [s for s in res.pop("kept_sets", []) if s is not None]
            if sets:
                res["same_survivors_every_repeat"] = all(s == sets[0] for s in sets)
            ok = tool != "curate" and "runs" in res and any("error" not in r for r in res["runs"])
            if ok and any("error" not in r for r in per_tool["curate"]["runs"]):
                res["agreement"] = compare(src, stage, tool, outs, n)
        results["stages"][stage] = {k: v for k, v in per_tool.items() if k != "_load"}
        results.setdefault("load_per_stage", {})[stage] = per_tool["_load"]
        (dest / "results.json").write_text(json.dumps(results, indent=1))  # so far, should a later stage fail
    results["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (dest / "results.json").write_text(json.dumps(results, indent=1))
    text = report(results)
    (dest / "report.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
