"""Does this project's mixture regression reproduce RegMix on RegMix's own runs? RegMix (Liu et al. 2024,
github.com/sail-sg/regmix, MIT licence) trained 512 1M-parameter models on Dirichlet mixtures of 17 Pile
domains and 256 more on held-out mixtures, and published every mixture with its validation losses
(``data/train_mixture_1m.csv``, ``train_pile_loss_1m.csv``, ``test_mixture_1m.csv``,
``test_pile_loss_1m.csv``). Its notebook ranks the held-out runs' Pile-CC loss at Spearman 0.989 from the
512 with LightGBM. Here every fit goes through :mod:`curate.proxy.mixfit`, as ``curate mix`` fits:

    git clone https://github.com/sail-sg/regmix /tmp/regmix       # or any copy of its data/ folder
    python benchmarks/regmix_check.py --data /tmp/regmix/data --json benchmarks/results/regmix_check-2026-12-07.json
    python benchmarks/regmix_check.py --data tests/proxy/data/regmix --draws 2     # the committed subset

Records: the held-out Spearman (Pile-CC) of each model fitted on the first 256 training runs (the
headline, ``heldout_spearman``: LightGBM) and on all 512, the model ``auto`` picks by 10-fold held-out
error on the training runs, and the learning curve: the held-out Spearman against the number of training
runs (the first ``n``, and ``--draws`` random subsets of ``n``), per domain too, whose 0.95 crossing sets
``curate mix``'s default run count (``mixfit.RUNS_PER_SOURCE``).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import commit, cpu_model  # noqa: E402
from curate.proxy import mixfit  # noqa: E402

FILES = ("train_mixture_1m.csv", "train_pile_loss_1m.csv", "test_mixture_1m.csv", "test_pile_loss_1m.csv")
TARGET = "metric/the_pile_pile_cc_val_loss"
PREFIX = "train_the_pile_"
SIZES = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
MODELS = ("gbm", "loglinear", "linear")
THRESHOLD = 0.95  # the learning curve's crossing that sets the default run count
REGMIX_COMMIT = "b004d3a3f39846dcec6b3740da22bcd1ba95a5d0"  # its data/ files, unchanged since 2024-10-03


def _table(path: Path) -> tuple[list[str], np.ndarray]:
    """A RegMix CSV: its header (the ``index`` column dropped) and its rows as floats, in ``index`` order."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    if not head or head[0] != "index":
        raise ValueError(f"{path}: expected RegMix's first column 'index', got {head[:1]}")
    data = np.array([[float(x) for x in r] for r in body], dtype=np.float64)
    data = data[np.argsort(data[:, 0], kind="stable")]
    return head[1:], data[:, 1:]


def load(data: Path, target: str = TARGET) -> dict[str, Any]:
    """RegMix's 1M-model runs from ``data`` (its ``data/`` folder, or a subset with the same files):
    domains, training mixtures and losses, held-out mixtures and losses (column ``target``)."""
    missing = [f for f in FILES if not (data / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{data}: missing {', '.join(missing)} (RegMix's data/ folder)")
    domains, x_train = _table(data / FILES[0])
    loss_head, y_train = _table(data / FILES[1])
    test_domains, x_test = _table(data / FILES[2])
    test_loss_head, y_test = _table(data / FILES[3])
    if test_domains != domains or target not in loss_head or target not in test_loss_head:
        raise ValueError(f"{data}: the mixture files' domains differ, or a loss file has no {target!r}")
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError(f"{data}: a mixture file and its loss file have different row counts")
    return {
        "domains": [d.removeprefix(PREFIX) for d in domains],
        "x_train": x_train,
        "y_train": y_train[:, loss_head.index(target)],
        "x_test": x_test,
        "y_test": y_test[:, test_loss_head.index(target)],
    }


def heldout(d: dict[str, Any], model: str, idx: np.ndarray) -> float | None:
    """Spearman of the model fitted on training runs ``idx`` against every held-out run's loss."""
    f = mixfit.fit(d["x_train"][idx], d["y_train"][idx], model)
    return mixfit.spearman(f(d["x_test"]), d["y_test"])


def curve(d: dict[str, Any], model: str, draws: int, seed: int) -> list[dict[str, Any]]:
    """Held-out Spearman against the number of training runs: the first ``n`` and ``draws`` random
    subsets of ``n`` (their mean, sd, min and max)."""
    rng = np.random.default_rng(seed)
    total, k = len(d["y_train"]), len(d["domains"])
    out = []
    for n in (s for s in SIZES if s <= total):
        sub = [heldout(d, model, rng.choice(total, n, replace=False)) for _ in range(draws)]
        vals = np.array([v for v in sub if v is not None])
        out.append(
            {
                "runs": n,
                "runs_per_domain": round(n / k, 3),
                "first": heldout(d, model, np.arange(n)),
                "mean": float(vals.mean()) if len(vals) else None,
                "sd": float(vals.std(ddof=1)) if len(vals) > 1 else None,
                "min": float(vals.min()) if len(vals) else None,
                "max": float(vals.max()) if len(vals) else None,
                "draws": len(vals),
            }
        )
    return out


def crossing(points: list[dict[str, Any]], k: int) -> dict[str, Any] | None:
    """The fewest runs whose mean held-out Spearman reaches :data:`THRESHOLD`, and per domain."""
    hit = next((p for p in points if p["mean"] is not None and p["mean"] >= THRESHOLD), None)
    return None if hit is None else {"runs": hit["runs"], "per_domain": round(hit["runs"] / k, 2)}


def check(data: Path, *, train: int = 256, draws: int = 20, seed: int = 0) -> dict[str, Any]:
    """The full check (module docstring)."""
    d = load(data)
    n = min(train, len(d["y_train"]))
    first, every = np.arange(n), np.arange(len(d["y_train"]))
    proc = mixfit.Procedure("auto")
    picked, errors, _ = proc.run(d["x_train"][first], d["y_train"][first])
    curves = {m: curve(d, m, draws, seed) for m in MODELS}
    k = len(d["domains"])
    return {
        "target": TARGET,
        "domains": d["domains"],
        "train_runs": len(d["y_train"]),
        "test_runs": len(d["y_test"]),
        "zero_weight_share": round(float((d["x_train"] == 0).mean()), 4),
        "fitted_on_first": n,
        "heldout_spearman": heldout(d, "gbm", first),
        "heldout_spearman_by_model": {m: heldout(d, m, first) for m in MODELS},
        "heldout_spearman_all_train_by_model": {m: heldout(d, m, every) for m in MODELS},
        "auto": {"model": picked, "cv_rmse": errors, "heldout_spearman": heldout(d, picked, first)},
        "learning_curve": curves,
        "crossing": {m: crossing(c, k) for m, c in curves.items()},
        "threshold": THRESHOLD,
        "regmix_notebook": {"lightgbm_512": 0.9892, "note": "regression_fitting/regression.ipynb, Pile-CC"},
        "method": f"LightGBM at mixfit.GBM_PARAMS ({mixfit.GBM_ROUNDS} rounds, no early stopping), the "
        f"log-linear law {mixfit.LOGLINEAR_FORM} and linear least squares, fitted by curate.proxy.mixfit on "
        "RegMix's training runs, Spearman (scipy.stats.spearmanr) of the predictions against the 256 "
        "held-out runs' Pile-CC validation loss",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data", type=Path, required=True, help="RegMix's data/ folder (or the committed subset)"
    )
    ap.add_argument("--train", type=int, default=256, help="fit on the first N training runs (default 256)")
    ap.add_argument("--draws", type=int, default=20, help="random subsets per learning-curve point")
    ap.add_argument("--json", type=Path, help="write the result here")
    args = ap.parse_args(argv)
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    result = check(args.data, train=args.train, draws=args.draws)
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "cpu": cpu_model(),
        "command": "python benchmarks/regmix_check.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "data": f"{args.data}: RegMix's data/ (github.com/sail-sg/regmix, checked at {REGMIX_COMMIT}; MIT licence, "
        "Copyright (c) 2024 Sea AI Lab)",
        "cpu_s": round((c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime), 1),
        "wall_s": round(time.perf_counter() - t0, 1),
        **result,
    }
    for m, c in result["learning_curve"].items():
        print(f"{m}: held-out Spearman against training runs (first n; mean [min, max] of random subsets)")
        for p in c:
            print(
                f"  {p['runs']:>4} runs ({p['runs_per_domain']:>5.2f}/domain): first {p['first']:.3f}  "
                f"mean {p['mean']:.3f} [{p['min']:.3f}, {p['max']:.3f}]"
            )
    print(
        f"heldout_spearman (LightGBM, first {result['fitted_on_first']} runs -> {result['test_runs']} "
        f"held out): {result['heldout_spearman']:.4f}; by model {result['heldout_spearman_by_model']}; "
        f"auto picks {result['auto']['model']}; crossing {THRESHOLD}: {result['crossing']}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
