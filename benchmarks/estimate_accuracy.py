"""How close the estimate ``curate run`` prints before a run came to what the run cost.

    (while true; do echo "$(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done > load.log &)
    curate run pipelines/demo.yaml --output runs/demo 2> runs/demo.err
    python benchmarks/estimate_accuracy.py runs/demo --log runs/demo.err --load-log load.log \\
        --name demo --json benchmarks/results/estimate-accuracy-2026-12-07.json

Reads the estimate from the run's stderr (the lines before the first bar: the curation's and the proxy
phase's CPU-seconds and wall time, the load when it was made) and what the run measured from its
``manifest.json`` (the ``cpu`` block, ``phases.proxy.cpu_s`` and ``wall_s``, the engine calls' CPU), and
the load average over the proxy phase from a log of ``/proc/loadavg`` samples (``HH:MM:SS load1 load5
load15``, UTC; the phase ends when ``goodput.json`` is written). CPU-seconds are the check that load moves
least; the wall times are printed with the load they ran under. Adds one entry under ``--name`` to the
JSON file (created when absent).
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NUM = r"([\d,.]+)"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _dur(text: str) -> float:
    """``4.6 min`` / ``56 s`` / ``1.2 h`` in seconds."""
    value, unit = text.split()
    return _num(value) * {"s": 1, "min": 60, "h": 3600}[unit]


def estimate_from_log(text: str) -> dict[str, Any]:
    """The figures of the estimate printed before the run."""
    lines = re.split(r"[\r\n]", text)
    head = next(line for line in lines if line.startswith("estimate on this machine"))
    out: dict[str, Any] = {"load": _num(re.search(r"load " + NUM, head).group(1))}  # type: ignore[union-attr]
    for line in lines:
        if m := re.match(rf"  curation: ~{NUM} CPU-s, ~([\d.]+ (?:s|min|h)) wall", line):
            out["curation_cpu_s"], out["curation_wall_s"] = _num(m.group(1)), _dur(m.group(2))
        if m := re.match(
            rf"  proxy phase: ~{NUM} CPU-s, ~([\d.]+ (?:s|min|h)) wall \({NUM} CPU-s in (\d+) runs, {NUM} "
            rf"preparing data, {NUM} starting workers\)",
            line,
        ):
            out["proxy_cpu_s"], out["proxy_wall_s"] = _num(m.group(1)), _dur(m.group(2))
            out["proxy_runs_cpu_s"], out["runs"] = _num(m.group(3)), int(m.group(4))
            out["proxy_prep_cpu_s"], out["proxy_start_cpu_s"] = _num(m.group(5)), _num(m.group(6))
        if m := re.search(r"expect the wall times up to ~([\d.]+)x longer", line):
            out["load_factor"] = float(m.group(1))
    return out


def _clock(text: str) -> int:
    parts = [int(x) for x in text.split(":")]
    return sum(v * 60**i for i, v in enumerate(reversed(parts)))


def eta_trace(text: str, points: int = 10) -> list[dict[str, Any]]:
    """The proxy runs' bar at ``points`` moments: elapsed, tokens done, the ETA shown and the time that
    was in fact left (the bar's last elapsed time minus this one)."""
    pat = re.compile(r"proxy runs: .*?(\d+)/(\d+) done, (\S+)/(\S+) tokens, ([\d:]+) elapsed, ETA ([\d:]+)")
    seen = [m for m in pat.finditer(text)]
    if not seen:
        return []
    end = _clock(seen[-1].group(5))
    picks = [seen[round(i * (len(seen) - 1) / max(1, points - 1))] for i in range(points)]
    return [
        {
            "elapsed_s": _clock(m.group(5)),
            "runs_done": int(m.group(1)),
            "tokens": m.group(3),
            "eta_s": _clock(m.group(6)),
            "left_s": end - _clock(m.group(5)),
        }
        for m in picks
    ]


def load_over(log: Path, start: datetime, end: datetime) -> dict[str, float]:
    """Mean, min and max of the 1-minute load average sampled between ``start`` and ``end`` (UTC)."""
    day = start.date()
    values = []
    for line in log.read_text().splitlines():
        t, load1, *_ = line.split()
        when = datetime.combine(day, datetime.strptime(t, "%H:%M:%S").time(), tzinfo=UTC)
        if start <= when <= end:
            values.append(float(load1))
    if not values:
        return {}
    return {
        "mean": round(sum(values) / len(values), 1),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def measured(run: Path, load_log: Path | None) -> dict[str, Any]:
    m = json.loads((run / "manifest.json").read_text())
    proxy = m["phases"]["proxy"]
    end = datetime.fromtimestamp((run / "goodput.json").stat().st_mtime, tz=UTC)
    start = datetime.fromtimestamp(end.timestamp() - proxy["wall_s"], tz=UTC)
    out = {
        "curation_cpu_s": m["cpu"]["total_s"],
        "curation_cpu": m["cpu"],
        "curation_wall_s": m["wall_s"],
        "proxy_cpu_s": proxy["cpu_s"],
        "proxy_wall_s": proxy["wall_s"],
        "proxy_cpu_s_by_call": proxy.get("cpu_s_by_call", {}),
        "runs": proxy.get("runs"),
        "proxy_start_utc": start.strftime("%H:%M:%S"),
        "proxy_end_utc": end.strftime("%H:%M:%S"),
    }
    out["proxy_cores_used"] = round(proxy["cpu_s"] / proxy["wall_s"], 3)
    if load_log is not None:
        out["proxy_load"] = load_over(load_log, start, end)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--log", type=Path, required=True, help="the run's stderr (the estimate, then the bars)")
    ap.add_argument("--load-log", type=Path, help="samples of /proc/loadavg during the run")
    ap.add_argument("--name", required=True)
    ap.add_argument("--command", default="", help="the command that made the run, recorded as given")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()
    est = estimate_from_log(args.log.read_text(errors="replace"))
    got = measured(args.run_dir, args.load_log)
    entry = {
        "command": args.command,
        "estimate": est,
        "measured": got,
        "eta": eta_trace(args.log.read_text(errors="replace")),
        "proxy_cpu_error": round(est["proxy_cpu_s"] / got["proxy_cpu_s"] - 1, 4),
        "curation_cpu_error": round(est["curation_cpu_s"] / got["curation_cpu_s"] - 1, 4),
    }
    results = json.loads(args.json.read_text()) if args.json.exists() else {}
    results[args.name] = entry
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(entry, indent=1))


if __name__ == "__main__":
    main()
