"""semantic_dedup_v1's default thresholds, one per embedder: the curve they are read from.

    python benchmarks/semantic_calibration.py [--model all-MiniLM-L6-v2|DIR] [--pairs N]

Calibration set (``_reuse.hppt_pairs``, never evaluation data): ACL abstracts and their
ChatGPT/LLaMA-polished versions (positives), and the distinct human abstracts, all from one field
(negatives: same topic, different documents). Per threshold: *caught* = polished versions whose cosine
with their original is >= the threshold; *same-topic removed* = distinct abstracts whose cosine with an
earlier abstract is >= it (what the stage would remove from them). The default is the highest
threshold on the 0.05 grid that still catches >= 97% of the positives (``RULE``): as far above the
same-topic cosines as the positives allow. Prints the curve as a markdown table.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _common import CORPORA, machine  # noqa: E402
from _reuse import hppt_pairs  # noqa: E402

from curate.dedup import _embed  # noqa: E402

RULE = 0.97
GRID = np.round(np.arange(0.30, 0.99, 0.05), 2)


def embedder(model: str | None) -> object:
    if model:
        import torch

        torch.set_num_threads(1)
    return _embed.embedder(model=model, dim=256, buckets=16384, seed=0)


def earliest_max(x: np.ndarray, block: int = 1024) -> np.ndarray:
    """Per row: its highest cosine with an earlier row (-1 for the first)."""
    out = np.full(len(x), -1.0, np.float32)
    for lo in range(0, len(x), block):
        sims = x[lo : lo + block] @ x.T
        rows = np.arange(lo, min(len(x), lo + block))
        sims[np.arange(len(x))[None, :] >= rows[:, None]] = -1
        out[lo : lo + len(rows)] = sims.max(axis=1)
    return out


def curve(model: str | None, pairs: int | None) -> float:
    pos_pairs, humans = hppt_pairs(CORPORA)
    pos_pairs, humans = pos_pairs[:pairs], humans[: pairs and 2 * pairs]
    emb = embedder(model)
    t0 = time.process_time()
    a = emb(pa.array([p[0] for p in pos_pairs]))  # type: ignore[operator]
    b = emb(pa.array([p[1] for p in pos_pairs]))  # type: ignore[operator]
    h = emb(pa.array(humans))  # type: ignore[operator]
    cpu = time.process_time() - t0
    pos, neg = (a * b).sum(axis=1), earliest_max(h)
    name = model or "hashed"
    print(
        f"\n{name}: {len(pos)} polished pairs, {len(h)} distinct abstracts; embedded {len(pos) * 2 + len(h)} "
        f"texts in {cpu:.1f} CPU s; positive cosines p5/p50 {np.percentile(pos, 5):.3f}/{np.median(pos):.3f}; "
        f"same-topic nearest-earlier p99/max {np.percentile(neg, 99):.3f}/{neg.max():.3f}"
    )
    print("| threshold | polished caught | same-topic removed |\n| --- | --- | --- |")
    best = float(GRID[0])
    for t in GRID:
        caught, removed = (pos >= t).mean(), (neg >= t).mean()
        if caught >= RULE:
            best = float(t)
        print(f"| {t:.2f} | {caught:.1%} | {removed:.2%} |")
    print(f"{name}: default by the rule (highest threshold catching >= {RULE:.1%}): {best:.2f}")
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--model", default=None, help="a local encoder directory or a packaged name; unset: hashed"
    )
    ap.add_argument("--pairs", type=int, default=None, help="use the first N pairs (default: all)")
    args = ap.parse_args()
    print(f"machine: {machine()}; load before: {os.getloadavg()}")
    best = curve(args.model, args.pairs)
    shipped = _embed.default_threshold(args.model)
    print(
        f"shipped default: {shipped}; {'matches' if abs(best - shipped) < 1e-9 else 'DIFFERS from'} the rule"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
