"""The decision gate's error rates, measured: fresh, independent draws of the controls on a finished run.

Each draw trains raw, the recipe the controls control (``--controlled``, default the run's plain kept/
recipe), the null and the planted control on seeds of its own that no setting was ever chosen on, with the
run's proxy settings but for two that cannot change a number the gate reads: ``curve: [1]`` (raw's bpb at
T is then a run of T, which equals the cool-down branch at T of the usual trunk bit for bit:
tests/instrument/test_train.py) and ``train.n_evals: 1`` (the eval points before T are never read). It
records every seed's headline bpb at T for the four, and the CPU the draw cost. ``--broken MODE`` draws
with a deliberately broken instrument (``train.broken``: ``shuffle_tokens``, ``unpaired``), to measure how
often the gate catches one. The gate's decision on every draw is made afterwards from the recorded values
(``--summary``), so every rate can be recomputed from the committed file.

Resumable: a draw whose report exists under ``RUN/proxy/gate/`` is read back, not retrained.

    python benchmarks/gate_draws.py runs/demo --point demo --draws 40 --first-seed 3000 \\
        --out benchmarks/results/gate-demo.json
    python benchmarks/gate_draws.py runs/demo --point demo --draws 10 --first-seed 3500 --broken shuffle_tokens \\
        --out benchmarks/results/gate-demo.json
    python benchmarks/gate_draws.py runs/demo --point demo --summary pipelines/demo.yaml --calibration 12 \\
        --out benchmarks/results/gate-demo.json
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import commit, cpu_model  # noqa: E402


def _cpu_name() -> str:
    return f"{cpu_model()}, {os.cpu_count()} cores"


def save(path: Path, results: dict[str, Any]) -> None:
    """Write the results file whole or not at all (a new file renamed over the old): it holds every draw."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    tmp.replace(path)


def draw_section(section: dict[str, Any], seeds: list[int], controlled: str, broken: str) -> dict[str, Any]:
    """The run's ``proxy:`` section for one draw: raw, the controlled recipe, the null and the planted
    control on ``seeds``, finished at T only, no ladder or follow-ups."""
    out = copy.deepcopy(section)
    recipes = out.get("recipes") or {"raw": {"from": "raw"}, "curated": {"from": "kept"}}
    baseline = out.get("baseline", "raw")
    out["recipes"] = {baseline: recipes[baseline], controlled: recipes[controlled]}
    out.update(seeds=list(seeds), curve=[1], controls=["null", "planted"], controls_for=controlled, ladder=[])
    for key in ("search", "mix", "ablate"):
        out.pop(key, None)
    out["train"] = {**(out.get("train") or {}), "n_evals": 1, **({"broken": broken} if broken else {})}
    return out


def run_draw(ctx: Any, section: dict[str, Any], tag: str) -> dict[str, Any]:
    """Measure one draw (finished runs reused) and keep what the gate reads."""
    from curate.proxy.design.measure import Experiment, measure
    from curate.proxy.spec.config import parse_section

    cfg = parse_section(section)
    t0 = time.process_time()
    m = measure(ctx, Experiment(cfg, report=f"proxy/gate/{tag}.json", runs_dir=f"gate/{tag}"))
    point = m.report["ladder"]["points"][0]
    return {
        "seeds": list(cfg.seeds),
        "per_seed_bpb": {r: v["per_seed_bpb_at_T"] for r, v in point["recipes"].items()},
        "device_s": round(sum(x["device_s"] for x in m.finished.results), 2),
        "driver_cpu_s": round(time.process_time() - t0, 2),
    }


def gate_of(per_seed: dict[str, list[float]], section: dict[str, Any], controlled: str) -> dict[str, Any]:
    """The decision gate on one draw's per-seed headline bpb at T, exactly as a run applies it (the control
    kinds' checks and :func:`curate.proxy.assembly.controls.decision`), with ``section``'s settings."""
    import numpy as np

    from curate.proxy.assembly.controls import controls_block
    from curate.proxy.kinds import kind
    from curate.proxy.kinds.base import Evidence
    from curate.proxy.spec.config import parse_section
    from curate.proxy.statistics.analysis import Baseline

    cfg = parse_section({**section, "recipes": {"raw": {"from": "raw"}, controlled: {"from": "kept"}}})
    heads = {r: np.asarray(v, dtype=np.float64)[:, None] for r, v in per_seed.items()}
    budget = float(cfg.budget)
    base = Baseline(np.array([budget]), heads[cfg.baseline][:, -1:], budget)  # multipliers: bounds only
    ev = Evidence(base, heads, cfg.baseline, controlled, {}, {}, cfg)
    block = controls_block(ev, [kind(c)(c) for c in ("null", "planted")], {})
    return {
        "supported": block["decision"]["supported"],
        "inconclusive": bool(block["decision"].get("inconclusive")),
        "null_passed": block["null"]["passed"],
        "null_separates": not block["null"]["contains_1"],
        "planted_called": block["planted"]["called_worse"],
        "reasons": block["decision"]["reasons"],
    }


def _rate(k: int, n: int) -> dict[str, Any]:
    """A rate with its Clopper-Pearson 95% interval (scipy.stats.binomtest)."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
    return {"k": k, "n": n, "value": k / n if n else None, "ci95": [ci.low, ci.high] if ci else None}


def _pooled_diff(draws: list[dict[str, Any]], recipe: str, baseline: str = "raw") -> dict[str, Any]:
    """``recipe - baseline`` over every seed of ``draws`` (independent fresh seeds), its mean and 95% t-interval."""
    import numpy as np

    from curate.proxy.stats import paired_interval

    d = np.concatenate(
        [np.asarray(x["per_seed_bpb"][recipe]) - np.asarray(x["per_seed_bpb"][baseline]) for x in draws]
    )
    return paired_interval(d).as_dict()


def _planted_noise(draws: list[dict[str, Any]]) -> dict[str, Any] | None:
    """planted - null's per-seed spread pooled over ``draws`` (their seeds), with its degrees of freedom."""
    import numpy as np

    diffs = [np.asarray(d["per_seed_bpb"]["planted"]) - np.asarray(d["per_seed_bpb"]["null"]) for d in draws]
    dof = sum(len(x) - 1 for x in diffs)
    if not dof:
        return None
    ss = sum(float(((x - x.mean()) ** 2).sum()) for x in diffs)
    return {
        "sd": (ss / dof) ** 0.5,
        "dof": dof,
        "effect": float(np.concatenate(diffs).mean()),  # the dose in bpb: the run states its power from it
        "source": f"planted - null on {len(draws)} fresh draws",
    }


def stop_seeds(draw: dict[str, Any], section: dict[str, Any]) -> int:
    """The seeds at which a run with ``section``'s sequential design (``proxy.sequential``) stops on this
    draw: the first look at which the controlled recipe's pair against the baseline is decided (its z on
    the spread pooled with ``proxy.noise``) and the gate is not inconclusive there (a planted control missed
    at a stated power below 0.95 makes the run go on), else the last look; the run's gate is read there
    (:func:`curate.proxy.design.sequential.measure_until_decided`). ``section`` carries the planted
    control's calibrated spread the gate is judged with. The design is the pipeline's, for its
    whole family of recipes; the draws hold one of them, so the stop is that recipe's."""
    import numpy as np

    from curate.proxy.spec.config import parse_section
    from curate.proxy.statistics.gate import pooled, z_stat

    cfg = parse_section(section)
    if cfg.sequential is None or cfg.noise is None:
        raise ValueError("--sequential: the pipeline has no proxy.sequential (and proxy.noise) to stop by")
    family = [r.name for r in cfg.recipes if r.name != cfg.baseline]
    design = cfg.sequential.design(cfg.noise.sd, len(family))
    base = np.asarray(draw["per_seed_bpb"][cfg.baseline], dtype=np.float64)
    rec = np.asarray(draw["per_seed_bpb"][draw["controlled"]], dtype=np.float64)
    decided = False
    for k, n in enumerate(design.looks):
        if n > len(base):
            break
        d = rec[:n] - base[:n]
        decided = decided or design.decide(k, z_stat(d, pooled(d, cfg.noise).sd)) is not None
        if decided:
            cut = {r: v[:n] for r, v in draw["per_seed_bpb"].items()}
            if not gate_of(cut, section, draw["controlled"])["inconclusive"]:
                return n  # decided, and the gate decided too: the run stops here
    return min(design.looks[-1], len(base))


def summary(
    point: dict[str, Any],
    section: dict[str, Any],
    calibration: int | str,
    at_seeds: int | None = None,
    sequential: bool = False,
) -> dict[str, Any]:
    """The gate's error rates on a point's draws. The planted control is judged on a calibrated spread
    (planted - null, seeds pooled): with ``calibration`` a count, the first that many healthy draws set it
    and are left out of the rates; with ``"loo"``, each healthy draw is judged on the spread of every
    other healthy draw (leave one out, so no draw calibrates its own judgement) and every healthy draw
    counts, a broken one on the spread of all of them. ``at_seeds``: each draw judged on its first
    ``at_seeds`` seeds only (a sequential design's first look), else on all of them. ``sequential``: each
    draw judged at the seeds the pipeline's sequential design stops at on it (:func:`stop_seeds`), as the
    run applies the gate (the planted control's spread then calibrated on the seeds each draw is judged on)."""
    stops: list[int | None] = [at_seeds] * len(point["draws"])
    if sequential:  # each draw's stop found with the spread the run would carry: every other healthy draw's
        healthy = [d for d in point["draws"] if not d["broken"]]
        stops = []
        for d in point["draws"]:
            calib = _planted_noise([o for o in healthy if o is not d])
            stops.append(stop_seeds(d, {**section, **({"planted_noise": calib} if calib else {})}))
    if any(n is not None for n in stops):
        point = {
            **point,
            "draws": [
                {
                    **d,
                    "seeds": d["seeds"][:n],
                    "per_seed_bpb": {r: v[:n] for r, v in d["per_seed_bpb"].items()},
                }
                for d, n in zip(point["draws"], stops, strict=True)
            ],
        }
    from curate.proxy.statistics.gate import power_z

    ok = [d for d in point["draws"] if not d["broken"]]
    broken = [d for d in point["draws"] if d["broken"]]
    if calibration == "loo":
        calib, rest = ok, ok
        planted_noise = _planted_noise(ok)
        for i, d in enumerate(ok):
            own = _planted_noise(ok[:i] + ok[i + 1 :])
            d["gate"] = gate_of(
                d["per_seed_bpb"], {**section, **({"planted_noise": own} if own else {})}, d["controlled"]
            )
        how = f"leave one out over the {len(ok)} healthy draws"
    else:
        calib, rest = ok[: int(calibration)], ok[int(calibration) :]
        planted_noise = _planted_noise(calib)
        for d in rest:
            d["gate"] = gate_of(
                d["per_seed_bpb"],
                {**section, **({"planted_noise": planted_noise} if planted_noise else {})},
                d["controlled"],
            )
        how = f"the first {len(calib)} healthy draws, left out of the rates"
    if planted_noise:
        seeds = sorted(s for d in calib for s in d["seeds"])
        planted_noise["source"] += f" (seeds {seeds[0]}-{seeds[-1]})"
    for d in broken:
        d["gate"] = gate_of(
            d["per_seed_bpb"],
            {**section, **({"planted_noise": planted_noise} if planted_noise else {})},
            d["controlled"],
        )
    return {
        "draws": len(rest),
        "seeds_judged": len(rest[0]["seeds"]) if rest and not sequential else None,
        # where the sequential design stopped: {seeds: healthy draws judged there}
        **(
            {
                "stopped_at": {
                    str(n): sum(len(d["seeds"]) == n for d in rest)
                    for n in sorted({len(d["seeds"]) for d in rest})
                }
            }
            if sequential
            else {}
        ),
        "calibration": how,
        "calibration_draws": len(calib),
        "planted_noise": planted_noise,
        "null_margin": section.get("null_margin"),
        "noise": section.get("noise"),
        "false_alarm_rate": _rate(sum(not d["gate"]["supported"] for d in rest), len(rest)),
        "broken_catch_rate": _rate(sum(not d["gate"]["supported"] for d in broken), len(broken)),
        # how the refusals read: "inconclusive" (a control missed at a stated power below 0.95) or the
        # instrument shown blind or biased; a healthy draw shown blind is the false alarm that misleads
        "false_alarm_inconclusive": _rate(
            sum(not d["gate"]["supported"] and d["gate"]["inconclusive"] for d in rest), len(rest)
        ),
        "false_alarm_shown_blind": _rate(
            sum(not d["gate"]["supported"] and not d["gate"]["inconclusive"] for d in rest), len(rest)
        ),
        "broken_shown_blind": _rate(
            sum(not d["gate"]["supported"] and not d["gate"]["inconclusive"] for d in broken), len(broken)
        ),
        "broken_by_mode": {
            m: _rate(
                sum(not d["gate"]["supported"] for d in broken if d["broken"] == m),
                sum(d["broken"] == m for d in broken),
            )
            for m in sorted({d["broken"] for d in broken})
        },
        "planted_power": _rate(sum(d["gate"]["planted_called"] for d in rest), len(rest)),
        # the same power from the calibrated dose and spread (the z test at the judged seeds): what the run
        # states; the rate above is its check on few draws
        "planted_power_by_design": (
            sum(power_z(planted_noise["effect"], planted_noise["sd"], len(d["seeds"])) for d in rest)
            / len(rest)
            if planted_noise and rest
            else None
        ),
        "null_false_fail": _rate(sum(not d["gate"]["null_passed"] for d in rest), len(rest)),
        # every healthy seed's null - raw, pooled: the null's bias at this point with the evidence of all draws
        "null_minus_raw_pooled": _pooled_diff(rest, "null") if rest else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a finished run directory (kept/, rejected/, manifest.json)")
    ap.add_argument("--point", required=True, help="the point's name in the output (demo, web)")
    ap.add_argument("--draws", type=int, default=0)
    ap.add_argument("--first-seed", type=int, default=0, help="draw k uses the next `seeds` seeds from here")
    ap.add_argument("--seeds", type=int, help="seeds per draw (default: the run's proxy.seeds)")
    ap.add_argument("--controlled", default="curated", help="the recipe the controls control")
    ap.add_argument("--broken", default="", choices=["", "shuffle_tokens", "unpaired"])
    ap.add_argument(
        "--planted", type=float, help="the planted control's share (default: the run's proxy.planted)"
    )
    ap.add_argument(
        "--planted-corruption",
        choices=["words", "letters"],
        help="the planted control's corruption (default: the run's proxy.planted_corruption)",
    )
    ap.add_argument("--engine", default="ray", choices=["ray", "inline"])
    ap.add_argument("--out", type=Path, required=True, help="the results JSON (draws are added to it)")
    ap.add_argument(
        "--summary",
        type=Path,
        metavar="PIPELINE",
        help="do not draw: decide every recorded draw of --point by the gate with PIPELINE's proxy settings "
        "and write the rates into --out",
    )
    ap.add_argument(
        "--calibration",
        default="0",
        help="with --summary: healthy draws that set planted_noise (left out of the rates), or 'loo': each "
        "healthy draw judged on the spread of all the others",
    )
    ap.add_argument(
        "--at-seeds",
        type=int,
        help="with --summary: judge each draw on its first N seeds (a sequential design's first look); "
        "written as summary_at_N",
    )
    ap.add_argument(
        "--sequential",
        action="store_true",
        help="with --summary: judge each draw at the seeds the pipeline's sequential design stops at on it "
        "(as the run applies the gate); written as summary_sequential",
    )
    args = ap.parse_args(argv)
    if args.summary:
        import yaml

        results = json.loads(args.out.read_text())
        section = (yaml.safe_load(args.summary.read_text()) or {}).get("proxy") or {}
        section.pop("planted_noise", None)  # measured here, from the calibration draws
        point = results[args.point]
        key = (
            "summary_sequential"
            if args.sequential
            else "summary"
            if args.at_seeds is None
            else f"summary_at_{args.at_seeds}"
        )
        point[key] = {
            "pipeline": str(args.summary),
            "commit": commit(),
            "command": "python benchmarks/gate_draws.py " + " ".join(sys.argv[1:]),
            **summary(
                point,
                section,
                args.calibration if args.calibration == "loo" else int(args.calibration),
                args.at_seeds,
                args.sequential,
            ),
        }
        save(args.out, results)
        print(json.dumps(point[key], indent=1))
        return 0

    from curate.core.engine import make_engine
    from curate.runtime.context import RunContext, load_manifest

    manifest = load_manifest(args.run)
    config = manifest.get("config") or {}
    section = dict(config.get("proxy") or {})
    if args.planted is not None:
        section["planted"] = args.planted
    if args.planted_corruption is not None:
        section["planted_corruption"] = args.planted_corruption
    n = args.seeds or (
        section.get("seeds") if isinstance(section.get("seeds"), int) else len(section["seeds"])
    )
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    point = results.setdefault(args.point, {"draws": []})
    point.update(
        {
            "run": str(args.run),
            "pipeline": manifest.get("pipeline"),
            "model": section.get("model"),
            "budget": section.get("budget"),
            "seeds_per_draw": n,
            "planted": section.get("planted", 0.4),
            "planted_corruption": section.get("planted_corruption", "words"),
            "settings": "the run's proxy settings; curve [1], train.n_evals 1 (neither changes bpb at T)",
        }
    )
    done = {(d["broken"], tuple(d["seeds"])) for d in point["draws"]}
    engine = make_engine(args.engine, progress=True)
    try:
        for k in range(args.draws):
            seeds = list(range(args.first_seed + k * n, args.first_seed + (k + 1) * n))
            if (args.broken, tuple(seeds)) in done:
                continue
            tag = f"{args.broken or 'ok'}/s{seeds[0]}"
            ctx = RunContext(
                run_dir=args.run,
                config=config,
                engine=engine,
                manifest=manifest,
                section=None,
                pipeline_path=manifest.get("pipeline"),
            )
            rec = run_draw(ctx, draw_section(section, seeds, args.controlled, args.broken), tag)
            rec = {"broken": args.broken, "controlled": args.controlled, **rec}
            point["draws"].append(rec)
            point.setdefault("log", []).append(
                {
                    "date": datetime.date.today().isoformat(),
                    "commit": commit(),
                    "cpu": _cpu_name(),
                    "load": os.getloadavg()[0],
                    "seeds": seeds,
                    "broken": args.broken,
                }
            )
            point["command"] = "python benchmarks/gate_draws.py " + " ".join(sys.argv[1:])
            save(args.out, results)
            print(
                f"{args.point} draw seeds {seeds} broken={args.broken or 'no'}: {rec['device_s']} device-s",
                flush=True,
            )
    finally:
        engine.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
