"""Which proxy point has the most power per CPU-second? A recorded sweep over model, budget, learning rate
and batch size on one finished run.

    python benchmarks/goodput_sweep.py RUN_DIR \
        --point a:model=proxy_1m,budget=294912 \
        --point b:model=proxy_1m,budget=294912,train.lr=0.001 [--recipes raw curated] [--planted 0.4]

Each ``--point NAME:KEY=VALUE,...`` overrides keys of the run's own ``proxy:`` section (dotted paths into
it, values parsed as YAML) and runs the proxy phase with them: the baseline's trunk and branches, the listed
recipes and the planted control (controls null and rejected are off: they cost a run each and do not
measure power), every run in ``proxy/sweep/<NAME>/`` beside the run's own (shards, tokenizer and eval sets
are shared; finished runs are reused). The reports go to ``proxy/sweep/<NAME>.json`` (a ``goodput.json``
each); the table of the sweep, as JSON, to ``proxy/sweep/summary.json`` and stdout.

Per point: the seconds its runs trained (the sum of every run's training time; one run = one core; wall
time, so it is inflated by the machine's load) and the tokens they trained (a trunk's cool-down branches
included),
the pooled sd of a paired difference (df), the minimum detectable multiplier on each side at the run's
seeds, the slope of the baseline's measured curve (bpb gained per doubling of tokens between T and 2T,
mean over seeds), each recipe's paired difference and call, and the planted control's. The comparison
across points at equal CPU: ``sd_doublings = sd / slope`` is the noise of one paired difference in units
of "doublings of raw's data"; multiplied by ``sqrt(train_tokens)`` it compares points of one model at equal
compute (seeds scale sd by 1/sqrt(n)), lower is better; across models, weigh tokens by each model's
measured cost per token (BENCHMARKS.md, trainer speed).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml


def _set(section: dict[str, Any], dotted: str, value: Any) -> None:
    node = section
    *path, last = dotted.split(".")
    for k in path:
        node = node.setdefault(k, {})
    node[last] = value


def parse_point(spec: str) -> tuple[str, dict[str, Any]]:
    """``name:key=value,key=value`` -> (name, {dotted key: value parsed as YAML})."""
    name, _, rest = spec.partition(":")
    if not name or not rest:
        raise SystemExit(f"--point {spec!r}: expected NAME:KEY=VALUE[,KEY=VALUE...]")
    sets = {}
    for kv in rest.split(","):
        k, eq, v = kv.partition("=")
        if not eq:
            raise SystemExit(f"--point {spec!r}: {kv!r} is not KEY=VALUE")
        sets[k.strip()] = yaml.safe_load(v)
    return name, sets


def _cost(run_root: Path) -> tuple[float, int]:
    """(seconds its runs trained, tokens they trained): one run is one core; a trunk's tokens include its
    cool-down branches (``decay_frac`` of each branch budget)."""
    secs, toks = 0.0, 0
    for res in run_root.glob("*/seed*/result.json"):
        r = json.loads(res.read_text())
        cfg = json.loads((res.parent / "config.json").read_text())
        secs += float(r.get("device_s") or 0.0)
        branches = [int(b) for b in (r.get("branches") or {}) if int(b) != int(r["tokens"])]
        toks += int(r["tokens"]) + int(sum(float(cfg.get("decay_frac", 0.2)) * b for b in branches))
    return secs, toks


def _crn_gain(rep: dict[str, Any]) -> dict[str, Any]:
    """What pairing buys: the sd of a recipe-minus-raw difference between runs of the same seed (shared
    initialisation, coupled streams) against the sd the same difference has between independent runs
    (``sqrt(var_r + var_raw)`` over seeds), pooled over the non-control recipes."""
    curve = rep["baseline_curve"]
    raw = np.array([c[curve["budgets"].index(rep["budget"])] for c in curve["per_seed"]])
    paired, unpaired = [], []
    for v in rep["recipes"].values():
        d = np.array((v.get("paired") or {}).get("per_seed_diff") or [], dtype=np.float64)
        if len(d) != len(raw) or len(d) < 2:
            continue
        paired.append(float(np.var(d, ddof=1)))
        unpaired.append(float(np.var(raw + d, ddof=1) + np.var(raw, ddof=1)))
    if not paired:
        return {}
    return {
        "sd_paired_same_seed": math.sqrt(float(np.mean(paired))),
        "sd_independent_runs": math.sqrt(float(np.mean(unpaired))),
        "raw_sd_at_T": float(np.std(raw, ddof=1)),
    }


def summarize(
    name: str, sets: dict[str, Any], rep: dict[str, Any], cost: tuple[float, int]
) -> dict[str, Any]:
    train_wall_s, train_tokens = cost
    pw = rep["power"]
    curve = rep["baseline_curve"]
    budgets, mean = curve["budgets"], curve["bpb_mean"]
    t = rep["budget"]
    slope = None
    if t in budgets and 2 * t in budgets:
        slope = mean[budgets.index(t)] - mean[budgets.index(2 * t)]
    sd = pw.get("sd_diff_bpb")
    row: dict[str, Any] = {
        "point": name,
        "sets": sets,
        "model": rep["model"]["name"],
        "budget": t,
        "seeds": rep["seeds"],
        "train_wall_s": round(train_wall_s, 1),  # wall seconds summed over runs: inflated by load, not CPU
        "train_tokens": train_tokens,
        "sd_diff_bpb": sd,
        "sd_dof": pw.get("sd_dof"),
        "mde_bpb": pw.get("mde_bpb"),
        "mde_multiplier": pw.get("mde_multiplier"),
        "slope_per_doubling": slope,
        "baseline_curve": {"budgets": budgets, "bpb_mean": mean},
    }
    if sd is not None and slope:
        row["sd_doublings"] = sd / slope
        row["sd_doublings_at_equal_tokens"] = sd / slope * math.sqrt(train_tokens) if slope > 0 else None
    row.update(_crn_gain(rep))
    row["recipes"] = {
        r: {
            "diff_bpb": v["paired"]["diff_bpb"]["value"],
            "ci": [v["paired"]["diff_bpb"]["ci_low"], v["paired"]["diff_bpb"]["ci_high"]],
            "per_seed_diff": v["paired"]["per_seed_diff"],
            "call": v["paired"]["call"],
        }
        for r, v in rep["recipes"].items()
        if "paired" in v
    }
    row["controls"] = {
        c: {
            "diff_bpb": v["diff_bpb"]["value"],
            "ci": [v["diff_bpb"]["ci_low"], v["diff_bpb"]["ci_high"]],
            "called_worse": v.get("called_worse"),
            "contains_1": v.get("contains_1"),
        }
        for c, v in (rep.get("controls") or {}).items()
        if isinstance(v, dict) and "diff_bpb" in v
    }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--point", action="append", required=True, help="NAME:KEY=VALUE[,KEY=VALUE...]")
    ap.add_argument("--recipes", nargs="*", default=None, help="recipes to train (default: all of the run's)")
    ap.add_argument("--planted", type=float, default=0.4, help="the planted control's rate (0: no control)")
    ap.add_argument("--engine", default="ray", choices=["inline", "ray"])
    args = ap.parse_args()

    from curate.core.engine import make_engine
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext, load_manifest

    manifest = load_manifest(args.run_dir)
    base = dict((manifest.get("config") or {}).get("proxy") or {})
    base.pop("search", None)
    base["ablate"] = False
    if args.recipes:
        base["recipes"] = {k: v for k, v in base["recipes"].items() if k in set(args.recipes)}
    base["controls"] = ["planted"] if args.planted else []
    if args.planted:
        base["planted"] = args.planted
    engine = make_engine(args.engine, progress=False)
    sweep = args.run_dir / "proxy" / "sweep"
    sweep.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for spec in args.point:
            name, sets = parse_point(spec)
            section = json.loads(json.dumps(base))
            for k, v in sets.items():
                _set(section, k, v)
            ctx = RunContext(
                run_dir=args.run_dir,
                config=manifest.get("config") or {},
                engine=engine,
                manifest=manifest,
                section=parse_section(section),
            )
            t0 = time.perf_counter()
            run_phase(ctx, report_name=f"proxy/sweep/{name}.json", runs_dir=f"sweep/{name}")
            rep = json.loads((sweep / f"{name}.json").read_text())
            row = summarize(name, sets, rep, _cost(sweep / name))
            row["wall_s"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        engine.shutdown()
    old = json.loads((sweep / "summary.json").read_text()) if (sweep / "summary.json").exists() else []
    keep = [r for r in old if r["point"] not in {r2["point"] for r2 in rows}]
    (sweep / "summary.json").write_text(json.dumps(keep + rows, indent=1))


if __name__ == "__main__":
    main()
