"""How wide will the transfer study's headline interval be? The study's power by design, from two points
already finished.

    python benchmarks/transfer_design.py RUN_DIR --cheap proxy_1m@294912 --ref proxy_1m@1179648 \\
        [--json benchmarks/results/transfer_design-web-DATE.json]

The study (benchmarks/transfer_ladder.py, :mod:`curate.proxy.statistics.transfer`) reads a cheap point's
decision accuracy against the reference with a cluster bootstrap that resamples the recipes as well as the
seeds, so that the number of pairs is in the width. How wide that interval comes out depends on how many
recipes there are, how many seeds each point runs, how far apart the recipes are and how noisy a seed is.
This script measures the last two on two finished points of a ladder run and simulates the rest.

Each point's per-seed headline bpb (the mean over every eval set but the held-out ones, at the point's
budget: a run's final evaluation, or the baseline's branch at that budget) is fitted as ``recipe + seed +
noise`` (two-way, additive): the seed effect (initialisation and stream order, shared by every recipe at a
seed) and the residual noise are each one normal spread. A simulated study draws ``K`` recipes' means at both
points (``K`` equal to the measured recipes: the measured means themselves; otherwise a draw from the
bivariate normal of the measured recipe means at the two points, their mean and covariance), adds seed
effects and noise for ``n_cheap`` and ``n_ref`` seeds, and computes the study's own
:func:`~curate.proxy.statistics.transfer.decision_accuracy`. Per design it reports the mean interval width
of the weighted accuracy over the simulated studies, the share of them no wider than the floor, the mean
estimate, and the mean number of pairs the reference calls after Holm.

What it does not do: it does not know the top point's spread (a point with more compute may separate the
recipes more, or less); the ``ref`` read here is a stand-in for it, said in the output. The recipe means'
covariance includes their seed noise (it is read from means over a few seeds), which widens the spread of
simulated recipes a little.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import commit, machine
from curate.proxy.statistics import transfer

CONTROLS = ("null", "planted")  # the control runs' folders: not members of the ranking
FLOOR = 0.25  # the widest headline interval the study may have
RECIPE_COUNTS = (11, 15, 20, 25, 30, 40)
SEED_DESIGNS = ((4, 4), (4, 6), (8, 6), (16, 6), (4, 12))


def headline_at_budget(run: Path) -> float:
    """A finished run's headline bpb at its point's budget: the mean over every eval set but ``heldout``,
    of its final evaluation, or of its branch at the budget where it ran on beyond it (the baseline)."""
    cfg = json.loads((run / "config.json").read_text())
    res = json.loads((run / "result.json").read_text())
    budget = cfg.get("eval_budget") or cfg["tokens"]
    ev = res["final_bpb"] if budget == res["tokens"] else res["branches"][str(budget)]
    sets = sorted(k for k in ev if k != "heldout")
    return float(np.mean([ev[k] for k in sets]))


def point_folder(run_dir: Path, point: str, main: str) -> Path:
    """Where ``point``'s runs are: ``proxy/`` for the main point, ``proxy/ladder/<point>/`` for another."""
    return run_dir / "proxy" if point == main else run_dir / "proxy" / "ladder" / point


def read_point(folder: Path, exclude: tuple[str, ...] = CONTROLS) -> dict[str, dict[int, float]]:
    """Every finished run (``result.json`` present) under ``folder``: recipe -> seed -> headline bpb. Folders
    that hold no ``seed<k>`` run (data, eval, ladder) and the ``exclude``d recipes are skipped."""
    out: dict[str, dict[int, float]] = {}
    for run in sorted(folder.glob("*/seed*/result.json")):
        recipe, seed = run.parent.parent.name, run.parent.name
        if recipe in exclude or not seed[4:].isdigit():
            continue
        out.setdefault(recipe, {})[int(seed[4:])] = headline_at_budget(run.parent)
    return out


def complete(
    values: dict[str, dict[int, float]], only: list[int] | None = None
) -> tuple[list[str], list[int], np.ndarray]:
    """The recipes that ran every seed any recipe ran (or every seed of ``only``), and their ``(recipes,
    seeds)`` matrix."""
    seeds = sorted(only) if only else sorted({s for v in values.values() for s in v})
    recipes = sorted(r for r, v in values.items() if set(seeds) <= set(v))
    return recipes, seeds, np.array([[values[r][s] for s in seeds] for r in recipes])


@dataclass(frozen=True)
class Fit:
    """A point's ``recipe + seed + noise`` fit: the recipes' means, the seed effects' sd, the residual sd."""

    means: np.ndarray
    seed_sd: float
    noise_sd: float


def fit(m: np.ndarray) -> Fit:
    """The additive two-way fit of a ``(recipes, seeds)`` matrix (least squares; sds with their degrees of
    freedom: ``seeds - 1`` and ``(recipes - 1)(seeds - 1)``)."""
    k, n = m.shape
    seed = m.mean(axis=0) - m.mean()
    res = m - m.mean(axis=1, keepdims=True) - seed[None, :]
    return Fit(m.mean(axis=1), float(seed.std(ddof=1)), float(np.sqrt((res**2).sum() / ((k - 1) * (n - 1)))))


def _draw(rng: np.random.Generator, f: Fit, means: np.ndarray, n: int) -> np.ndarray:
    return means[:, None] + rng.normal(0, f.seed_sd, n)[None, :] + rng.normal(0, f.noise_sd, (len(means), n))


def simulate(
    cheap: Fit, ref: Fit, k: int, n_cheap: int, n_ref: int, *, reps: int, draws: int, seed: int
) -> dict[str, Any]:
    """``reps`` simulated studies of ``k`` recipes at ``n_cheap`` / ``n_ref`` seeds, each through the study's
    own decision accuracy (``draws`` bootstrap draws)."""
    rng = np.random.default_rng(seed)
    both = np.stack([cheap.means, ref.means], axis=1)
    widths, values, called = [], [], []
    for i in range(reps):
        if k == len(both):
            mu = both
        else:
            mu = rng.multivariate_normal(both.mean(axis=0), np.cov(both, rowvar=False), size=k)
        names = [f"r{j}" for j in range(k)]
        pts = [
            transfer.Point(
                name, tuple(range(n)), 1.0, dict(zip(names, _draw(rng, f, mu[:, col], n), strict=True))
            )
            for name, f, col, n in (("cheap", cheap, 0, n_cheap), ("ref", ref, 1, n_ref))
        ]
        acc = transfer.decision_accuracy(pts[0], pts[1], names, draws=draws, seed=seed + i)
        w = acc["all_pairs_weighted"]
        if w["ci"] is not None:
            widths.append(w["ci"][1] - w["ci"][0])
            values.append(w["value"])
        called.append(acc["called"]["pairs"])
    width = np.array(widths)
    return {
        "recipes": k,
        "pairs": k * (k - 1) // 2,
        "seeds_cheap": n_cheap,
        "seeds_ref": n_ref,
        "studies": reps,
        "width_mean": round(float(width.mean()), 4),
        "width_at_most_floor": round(float((width <= FLOOR).mean()), 4),
        "accuracy_mean": round(float(np.mean(values)), 4),
        "called_pairs_mean": round(float(np.mean(called)), 2),
    }


def design(
    cheap: Fit,
    ref: Fit,
    *,
    counts: tuple[int, ...] = RECIPE_COUNTS,
    seeds: tuple[tuple[int, int], ...] = SEED_DESIGNS,
    reps: int = 20,
    draws: int = 500,
) -> list[dict[str, Any]]:
    """Every (recipes, seeds) design of ``counts`` x ``seeds``, simulated."""
    return [
        simulate(cheap, ref, k, nc, nr, reps=reps, draws=draws, seed=1000 * k + 10 * nc + nr)
        for k in counts
        for nc, nr in seeds
    ]


def smallest_meeting(rows: list[dict[str, Any]], n_cheap: int, n_ref: int) -> int | None:
    """The fewest recipes whose mean width is within the floor at those seeds; None if none simulated is."""
    ok = [
        r["recipes"]
        for r in rows
        if (r["seeds_cheap"], r["seeds_ref"]) == (n_cheap, n_ref) and r["width_mean"] <= FLOOR
    ]
    return min(ok) if ok else None


def check_point(name: str, recipes: list[str], seeds: list[int], folder: Path) -> None:
    """Refuse, saying why, a point the fit cannot be read from: no finished run in ``folder``, or fewer
    than two recipes or two seeds that every one of them ran."""
    if not folder.is_dir():
        raise SystemExit(f"transfer_design: no point {name}: {folder} does not exist")
    if len(recipes) < 2 or len(seeds) < 2:
        raise SystemExit(
            f"transfer_design: point {name} has {len(recipes)} recipe(s) finished on every one of its "
            f"{len(seeds)} seed(s) {seeds} in {folder}; the fit needs at least two of each"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--main", default=None, help="the main point's name (default: --cheap)")
    ap.add_argument("--cheap", required=True, help="the cheap point, e.g. proxy_1m@294912")
    ap.add_argument("--ref", required=True, help="the stand-in for the reference, e.g. proxy_1m@1179648")
    ap.add_argument("--cheap-seeds", default=None, help="read only these seeds of --cheap, e.g. 0,1,2,3")
    ap.add_argument("--ref-seeds", default=None, help="read only these seeds of --ref")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    main_point = args.main or args.cheap
    observed, fits = {}, {}
    for role, name, only in (("cheap", args.cheap, args.cheap_seeds), ("ref", args.ref, args.ref_seeds)):
        picked = [int(x) for x in only.split(",")] if only else None
        recipes, seeds, m = complete(read_point(point_folder(args.run_dir, name, main_point)), picked)
        check_point(name, recipes, seeds, point_folder(args.run_dir, name, main_point))
        observed[role] = {
            "point": name,
            "seeds": seeds,
            "per_seed_bpb": {r: [round(float(v), 6) for v in row] for r, row in zip(recipes, m, strict=True)},
        }
        fits[role] = fit(m)
    cheap_r, ref_r = list(observed["cheap"]["per_seed_bpb"]), list(observed["ref"]["per_seed_bpb"])
    if cheap_r != ref_r:
        raise SystemExit(
            f"transfer_design: the two points hold different finished recipes: {len(cheap_r)} at {args.cheap}, "
            f"{len(ref_r)} at {args.ref}; only at {args.cheap}: {sorted(set(cheap_r) - set(ref_r))}, only at "
            f"{args.ref}: {sorted(set(ref_r) - set(cheap_r))}"
        )
    rows = design(fits["cheap"], fits["ref"], reps=args.reps)
    k = len(observed["cheap"]["per_seed_bpb"])
    measured = {
        role: {
            "seed_sd": round(f.seed_sd, 5),
            "noise_sd": round(f.noise_sd, 5),
            "recipe_means_sd": round(float(f.means.std(ddof=1)), 5),
        }
        for role, f in fits.items()
    }
    out = {
        "date": dt.date.today().isoformat(),
        "commit": commit(),
        "cpu": machine(),
        "load": list(os.getloadavg()),
        "command": "python benchmarks/transfer_design.py " + shlex.join(sys.argv[1:]),
        "floor": FLOOR,
        "observed": observed,
        "measured": measured,
        "designs": rows,
        "fewest_recipes_within_floor": {
            f"{nc}x{nr}": smallest_meeting(rows, nc, nr) for nc, nr in SEED_DESIGNS
        },
        "method": "per point a recipe + seed + noise fit of the per-seed headline bpb; K recipes' means at "
        f"the two points drawn from the bivariate normal of the measured means ({k} recipes: the measured "
        "means), seed effects and noise added, the study's decision_accuracy (cluster bootstrap over recipes "
        "and seeds) per simulated study; the ref point stands in for the top point",
    }
    print(f"measured: {json.dumps(measured)}")
    print(
        "| recipes | pairs | seeds cheap x ref | mean width | share within 0.25 | mean accuracy | pairs called |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['recipes']} | {r['pairs']} | {r['seeds_cheap']} x {r['seeds_ref']} | {r['width_mean']:.2f} | "
            f"{r['width_at_most_floor']:.0%} | {r['accuracy_mean']:.2f} | {r['called_pairs_mean']:.1f} |"
        )
    print(f"fewest recipes within the floor: {out['fewest_recipes_within_floor']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
