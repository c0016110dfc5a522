"""Which mixture of the shared web sources trains best toward the built-in web targets? ``curate mix`` on
pipelines/web_mix.yaml (each web file a source), then an export at the chosen weights.

    python benchmarks/mix_search.py --out runs/bench_mix                 # default size (<= 60 CPU-min)
    python benchmarks/mix_search.py --out /tmp/mix_smoke --size tiny     # a few CPU-minutes
    python benchmarks/mix_search.py --out runs/bench_mix --json mix_bench.json

Records: the search's decision (from the confirmation on fresh seeds alone); the confirmed mixture's
multiplier over the natural mixture and over the best single source (paired, fresh seeds) with their
p-values; the predictor's held-out Spearman (``heldout_spearman``) with its refitting bootstrap interval,
its permutation p-value (``permutation_p``) and the split-seed noise ceiling beside it; the design (how
sparse, how far from the natural mixture); every mixture's weights, per-seed bpb and held-out
prediction; the proxy runs and the CPU-minutes of each step (the pipeline, the search, the export), and
the export's per-source token shares against the weights (exported with ``mixture_unconfirmed`` when the
confirmation did not call the choice better, so the export's accuracy is measured either way; the JSON
says which). Steps run in subprocesses on the inline engine (one process, so the children's rusage is the
whole CPU cost); a finished step in ``--out`` is reused.
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import commit, cpu_model  # noqa: E402

PIPELINE = ROOT / "pipelines" / "web_mix.yaml"

# --size tiny: a smoke run of the same steps (few documents, a short budget, two confirmation seeds)
TINY = {
    "limit": 150,
    "proxy": {"budget": 16384, "seeds": 2, "eval_chars": 4000, "tokenizer": {"vocab_size": 512}},
    "mix": {
        "runs": 8,
        "n_boot": 50,
        "n_perm": 50,
        "split": 4,
        "rungs": [{"budget": 16384, "seeds": 1}],
        "confirm_seeds": 2,
    },
}


def pipeline_for(size: str, out: Path, pipeline: Path = PIPELINE) -> Path:
    """The pipeline to run (web_mix.yaml unless ``pipeline`` names another with a list input and a
    ``proxy.mix`` section) as it is, or shrunk for ``--size tiny`` (written beside the run, its relative paths
    resolved against the original's folder by the one path rule, since the copy lives elsewhere)."""
    cfg = yaml.safe_load(pipeline.read_text())
    for e in cfg["input"]:
        p = Path(e["path"])
        if not p.is_absolute() and not (ROOT / p).exists() and (pipeline.parent / p).exists():
            e["path"] = str((pipeline.parent / p).resolve())
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
    """``export: {mixture: search, mixture_unconfirmed: true}`` with the run's proxy tokenizer (the export's
    accuracy is measured whatever the confirmation said); returns the manifest's mixture block."""
    from curate.core.engine import InlineEngine
    from curate.export.options import ExportOptions
    from curate.export.phase import run_phase
    from curate.runtime.context import RunContext

    manifest = json.loads((run / "manifest.json").read_text())
    section = ExportOptions.parse(
        {
            "mixture": "search",
            "mixture_unconfirmed": True,
            "tokenizer": "proxy",
            "formats": ["parquet", "memmap"],
        },
        pipeline_path=manifest.get("pipeline"),
    )
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
    rg = mix["regression"]
    sp = rg["heldout_spearman"]
    fitted = [r for r in mix["mixtures"].values() if r.get("fitted")]
    out: dict[str, Any] = {
        "decision": mix["decision"],
        "sources": {s["name"]: s["natural_weight"] for s in mix["sources"]},
        "chosen": mix["chosen"]["weights"],
        "chosen_max_epochs": mix["chosen"]["max_epochs"],
        "chosen_region": mix["chosen"].get("region"),
        "vs_natural": {k: conf["chosen"][k] for k in ("multiplier", "call", "p_value", "muennighoff_factor")},
        "vs_best_single": conf.get("chosen_vs_best_single"),
        "best_single": (conf.get("best-single") or {}).get("source"),
        "best_single_vs_natural": (conf.get("best-single") or {}).get("multiplier"),
        "null_control": (conf["controls"].get("null") or {}).get("multiplier"),
        "mde_multiplier": conf["power"].get("mde_multiplier"),
        "model": rg["model"],
        "heldout_rmse": rg["heldout_rmse"],
        "heldout_spearman": {"value": sp["value"], "ci": sp["ci"], "held_out": rg["held_out"]},
        "permutation_p": rg["permutation_p"],
        "n_perm": rg["n_perm"],
        "noise_ceiling": rg["noise_ceiling"],
        "design": {
            **mix["design"],
            "fitted": len(fitted),
            "max_tv_from_natural": max(
                0.5 * sum(abs(r["weights"][s["name"]] - s["natural_weight"]) for s in mix["sources"])
                for r in fitted
            ),
        },
        # every mixture's weights, per-seed bpb and held-out prediction: the figures recompute from these
        "mixtures": {
            n: {
                k: r.get(k)
                for k in (
                    "weights",
                    "epochs",
                    "measured_bpb",
                    "per_seed_bpb",
                    "fitted",
                    "heldout_predicted_bpb",
                )
            }
            for n, r in mix["mixtures"].items()
        },
        "confirmation_per_seed_bpb": conf["per_seed_bpb"],
        "confirmation_per_seed_diff": {
            n: conf[n].get("per_seed_diff") for n in ("chosen", "best-single") if n in conf
        },
        "proxy_runs": mix["cost"]["runs"],
        "proxy_device_s": mix["cost"]["device_s"],
        "verdict": conf["verdict"],
    }
    if export:
        out["export_unconfirmed"] = (export.get("search") or {}).get("exported_unconfirmed")
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
    ap.add_argument(
        "--pipeline",
        type=Path,
        default=PIPELINE,
        help="a pipeline with sources as a list input and a proxy.mix section (default: pipelines/web_mix.yaml)",
    )
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    pipe = pipeline_for(args.size, out, args.pipeline.resolve())
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
    result = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "cpu": cpu_model(),
        "command": "python benchmarks/mix_search.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "pipeline": str(args.pipeline.resolve().relative_to(ROOT))
        if args.pipeline.resolve().is_relative_to(ROOT)
        else args.pipeline.name,
        "size": args.size,
        "steps": steps,
        **figures(mix, export),
    }
    result["cpu_min_total"] = round(sum(s["cpu_min"] for s in steps.values()), 2)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
