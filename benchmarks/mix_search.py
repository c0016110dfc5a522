"""Which mixture of the shared web sources trains best toward the built-in web targets? ``curate mix`` on
pipelines/web_mix.yaml (each web file a source), then an export at the chosen weights.

    python benchmarks/mix_search.py --out runs/bench_mix                 # default size (<= 60 CPU-min)
    python benchmarks/mix_search.py --out /tmp/mix_smoke --size tiny     # a few CPU-minutes
    python benchmarks/mix_search.py --out runs/bench_mix --json mix_bench.json

Records: the confirmed mixture's multiplier over the natural mixture and over the best single source
(paired, fresh seeds), the predictor's Spearman on held-out mixtures with its bootstrap interval, the
proxy runs and the CPU-minutes of each step (the pipeline, the search, the export), and the export's
per-source token shares against the weights. Steps run in subprocesses on the inline engine (one
process, so the children's rusage is the whole CPU cost); a finished step in ``--out`` is reused.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipelines" / "web_mix.yaml"

# --size tiny: a smoke run of the same steps (few documents, a short budget, two confirmation seeds)
TINY = {
    "limit": 150,
    "proxy": {"budget": 16384, "seeds": 2, "eval_chars": 4000, "tokenizer": {"vocab_size": 512}},
    "mix": {"dirichlet": 8, "n_boot": 200, "rungs": [{"budget": 16384, "seeds": 1}], "confirm_seeds": 2},
}


def pipeline_for(size: str, out: Path) -> Path:
    """The pipeline to run: web_mix.yaml as it is, or shrunk for ``--size tiny`` (written beside the run)."""
    cfg = yaml.safe_load(PIPELINE.read_text())
    if size == "tiny":
        for e in cfg["input"]:
            e["limit"] = TINY["limit"]
        cfg["proxy"].update(TINY["proxy"])
        cfg["proxy"]["mix"].update(TINY["mix"])
    path = out.parent / f"{out.name}.pipeline.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _step(cmd: list[str]) -> dict[str, float]:
    """Run ``cmd`` (niced) and return its wall seconds and CPU minutes (user + system of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(["nice", "-n", "10", *cmd], check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(time.perf_counter() - t0, 1), "cpu_min": round(cpu / 60, 2)}


def export_at_choice(run: Path) -> dict[str, Any]:
    """``export: {mixture: search}`` with the run's proxy tokenizer; returns the manifest's mixture block."""
    from curate.core.engine import InlineEngine
    from curate.export.options import parse_section
    from curate.export.phase import run_phase
    from curate.runtime.context import RunContext

    manifest = json.loads((run / "manifest.json").read_text())
    section = parse_section({"mixture": "search", "tokenizer": "proxy", "formats": ["parquet", "memmap"]})
    ctx = RunContext(
        run_dir=run,
        config=manifest.get("config", {}),
        engine=InlineEngine(progress=False),
        manifest=manifest,
        section=section,
    )
    run_phase(ctx)
    return json.loads((run / "export" / "manifest.json").read_text())["mixture"]


def figures(mix: dict[str, Any], export: dict[str, Any] | None) -> dict[str, Any]:
    """The benchmark's numbers from ``mix.json`` (and the export's mixture block)."""
    conf = mix["confirmation"]
    sp = mix["regression"]["spearman"]
    out: dict[str, Any] = {
        "sources": {s["name"]: s["natural_weight"] for s in mix["sources"]},
        "chosen": mix["chosen"]["weights"],
        "chosen_max_epochs": mix["chosen"]["max_epochs"],
        "vs_natural": {k: conf["chosen"][k] for k in ("multiplier", "call", "muennighoff_factor")},
        "vs_best_single": conf.get("chosen_vs_best_single"),
        "best_single": (conf.get("best-single") or {}).get("source"),
        "best_single_vs_natural": (conf.get("best-single") or {}).get("multiplier"),
        "null_control": (conf["controls"].get("null") or {}).get("multiplier"),
        "mde_multiplier": conf["power"].get("mde_multiplier"),
        "spearman": {"value": sp["value"], "ci": sp["ci"], "held_out": mix["regression"]["held_out"]},
        # every mixture's weights, measured and held-out predicted bpb: the Spearman recomputes from these
        "mixtures": {
            n: {k: r.get(k) for k in ("weights", "epochs", "measured_bpb", "fitted", "loo_predicted_bpb")}
            for n, r in mix["mixtures"].items()
        },
        "confirmation_per_seed_diff": {
            n: conf[n].get("per_seed_diff") for n in ("chosen", "best-single") if n in conf
        },
        "proxy_runs": mix["cost"]["runs"],
        "proxy_device_s": mix["cost"]["device_s"],
        "verdict": conf["verdict"],
    }
    if export:
        out["export_shares"] = {s: (r["weight"], r["share"]) for s, r in export["sources"].items()}
        out["export_max_rel_error"] = max(
            abs(r["written"] - r["target"]) / r["target"] for r in export["sources"].values() if r["target"]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the run directory (reused when its steps are finished)")
    ap.add_argument("--size", choices=["default", "tiny"], default="default")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    pipe = pipeline_for(args.size, out)
    py = [sys.executable, "-m", "curate"]
    steps = {
        "pipeline": _step(
            [*py, "run", str(pipe), "--output", str(out), "--no-phases", "--engine", "inline", "-q"]
        ),
        "mix": _step([*py, "mix", str(out), "--engine", "inline"]),
    }
    c0 = time.process_time()
    export = export_at_choice(out)
    steps["export"] = {"cpu_min": round((time.process_time() - c0) / 60, 2)}
    mix = json.loads((out / "mix.json").read_text())
    result = {"size": args.size, "steps": steps, **figures(mix, export)}
    result["cpu_min_total"] = round(sum(s["cpu_min"] for s in steps.values()), 2)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
