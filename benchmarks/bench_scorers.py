"""Benchmarks for the model-based scorers (run from the repository root):

    python benchmarks/bench_scorers.py [--quick]

1. machine_text_v1 detector, leave-one-generator-family-out on ../shared/corpora/synthetic: trained
   with ``curate.classify.train_classifier`` on the other families, AUC on the held-out family's
   texts vs their paired human texts, next to a zlib compression-ratio baseline (direction chosen on
   the training split) and to an in-distribution detector (trained with that family);
2. the quality classifier's held-out metrics (from its manifest);
3. fasttext_quality_v1 throughput vs raw fastText ``predict`` on the same texts, same run;
4. degeneration_v1 throughput.
Prints markdown; paste it into benchmarks/RESULTS-scorers.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"

from curate.classify import ClassifierRecipe, LabelledSource, roc_auc, train_classifier  # noqa: E402
from curate.classify.model import load_verified, positive_probability  # noqa: E402

FAMILIES = {
    "openai-chat (GPT-3.5-turbo, GPT-4, GPT-4o)": {"GPT-3-Turbo", "GPT-4o", "gpt-3.5-turbo", "gpt-4"},
    "openai-davinci": {"davinci"},
    "llama-3-70b": {"Llama-3-70B"},
    "gemini-1.5-pro": {"Gemini-1.5-Pro"},
    "eleuther (gpt-neo, gpt-j, neox)": {"gpt-neo-2.7B", "gpt-j-6B", "gpt-neox-20b"},
    "gpt2-xl": {"gpt2-xl"},
    "opt-2.7b": {"opt-2.7b"},
}


def _generator(rec: dict) -> str:
    if "generator" in rec:
        return rec["generator"]
    return rec["source"].rsplit("_", 1)[-1]  # fast-detect-gpt/exp_main__xsum_gpt2-xl -> gpt2-xl


def load_pairs(limit_per_file: int | None) -> list[dict]:
    rows = []
    for name in ("l2r_rewrites.jsonl.gz", "human_vs_machine_continuations.jsonl.gz"):
        with gzip.open(CORPORA / "synthetic" / name, "rt") as f:
            for i, line in enumerate(f):
                if limit_per_file and i >= limit_per_file:
                    break
                r = json.loads(line)
                rows.append(
                    {
                        "text": r["text"],
                        "machine": bool(r["synthetic"]),
                        "pair": f"{name}:{r['pair']}",
                        "generator": _generator(r) if r["synthetic"] else "human",
                    }
                )
    return rows


def _test_pair(pair: str) -> bool:
    return int.from_bytes(hashlib.blake2b(pair.encode(), digest_size=8).digest(), "little") / 2**64 < 0.3


def _train_detector(rows: list[dict], tmp: str, name: str) -> str:
    data = os.path.join(tmp, f"{name}.jsonl.gz")
    with gzip.open(data, "wt") as f:
        for r in rows:
            f.write(
                json.dumps(
                    {
                        "id": f"{r['pair']}:{r['generator']}",
                        "text": r["text"],
                        "label": "machine" if r["machine"] else "human",
                    }
                )
                + "\n"
            )
    recipe = ClassifierRecipe(
        name=name,
        output=os.path.join(tmp, f"{name}.bin"),
        positive_label="machine",
        seed=0,
        holdout=0.0,
        quantize=False,
        fasttext={"epoch": 10},
        sources=[
            LabelledSource(label="machine", path=data, where={"label": "machine"}),
            LabelledSource(label="human", path=data, where={"label": "human"}),
        ],
    )
    train_classifier(recipe)
    return recipe.output


def _predict(model_path: str, texts: list[str]) -> np.ndarray:
    from curate.classify import fasttext_text

    model, _ = load_verified(model_path)
    return positive_probability(model, fasttext_text(texts).to_pylist(), "machine")


def _zlib_ratio(texts: list[str]) -> np.ndarray:
    return np.array([len(t.encode()) / max(1, len(zlib.compress(t.encode(), 6))) for t in texts])


def bench_detector(limit: int | None) -> list[str]:
    rows = load_pairs(limit)
    tmp = tempfile.mkdtemp(prefix="bench-detector-")
    train_pairs = [r for r in rows if not _test_pair(r["pair"])]
    test_pairs = [r for r in rows if _test_pair(r["pair"])]
    t0 = time.time()
    full = _train_detector(train_pairs, tmp, "all")
    out = [
        "| held-out family | test texts (machine / human) | detector AUC (family unseen) | "
        "detector AUC (family seen) | zlib-ratio baseline AUC |",
        "|---|---:|---:|---:|---:|",
    ]
    for fam, gens in FAMILIES.items():
        pairs_with_fam = {r["pair"] for r in test_pairs if r["generator"] in gens}
        test = [
            r
            for r in test_pairs
            if r["pair"] in pairs_with_fam and (r["generator"] in gens or not r["machine"])
        ]
        train = [r for r in train_pairs if r["generator"] not in gens]
        model = _train_detector(train, tmp, "heldout")
        texts = [r["text"] for r in test]
        y = np.array([r["machine"] for r in test])
        auc_unseen = roc_auc(_predict(model, texts), y)
        auc_seen = roc_auc(_predict(full, texts), y)
        ytr = np.array([r["machine"] for r in train])
        sign = 1.0 if roc_auc(_zlib_ratio([r["text"] for r in train]), ytr) >= 0.5 else -1.0
        auc_zlib = roc_auc(sign * _zlib_ratio(texts), y)
        out.append(
            f"| {fam} | {int(y.sum())} / {int((~y).sum())} | {auc_unseen:.3f} | {auc_seen:.3f} | "
            f"{auc_zlib:.3f} |"
        )
    out.append(f"\n({len(train_pairs)} training texts, pair-level 70/30 split; {time.time() - t0:.0f} s)")
    return out


def bench_quality_manifest() -> list[str]:
    m = json.loads((ROOT / "models" / "quality_fasttext.manifest.json").read_text())
    h = m["holdout_metrics"]
    d = json.loads((ROOT / "models" / "machine_text_fasttext.manifest.json").read_text())["holdout_metrics"]
    return [
        "| model | held-out texts | AUC | precision | recall | size |",
        "|---|---:|---:|---:|---:|---:|",
        f"| quality_fasttext.ftz (hq vs raw web) | {sum(m['counts']['holdout'].values())} | {h['auc']:.4f} | "
        f"{h['precision']:.4f} | {h['recall']:.4f} | {m['model_bytes'] / 1e6:.2f} MB |",
        f"| machine_text_fasttext.ftz (all families, pair split) | "
        f"{sum(json.loads((ROOT / 'models' / 'machine_text_fasttext.manifest.json').read_text())['counts']['holdout'].values())}"
        f" | {d['auc']:.4f} | {d['precision']:.4f} | {d['recall']:.4f} | "
        f"{(ROOT / 'models' / 'machine_text_fasttext.ftz').stat().st_size / 1e6:.2f} MB |",
    ]


def bench_throughput(repeats: int) -> list[str]:
    from curate.io.readers import read_table
    from curate.scorers.degeneration import Degeneration
    from curate.scorers.fasttext_quality import FastTextParams, FastTextQuality

    tables = [read_table(str(CORPORA / "web" / f)) for f in ("c4_en.jsonl.gz", "webtext.jsonl.gz")]
    table = pa.concat_tables([t.select(["id", "text", "source"]) for t in tables])
    texts = table.column("text").to_pylist()
    mb = sum(len(t.encode()) for t in texts) / 1e6
    stage = FastTextQuality(FastTextParams(model=str(ROOT / "models" / "quality_fasttext.ftz")))
    stage.ensure_setup()
    model = stage._model
    from curate.classify import fasttext_text

    # Raw predict gets the very strings the scorer builds, prepared outside the timer (its best case).
    clean = fasttext_text(table.column("text")).to_pylist()
    raw_t, ours_t = [], []
    for i in range(repeats):
        # Alternate which goes first, so neither always runs on a warmer cache.
        for which in ("raw", "ours") if i % 2 == 0 else ("ours", "raw"):
            t0 = time.perf_counter()
            if which == "raw":
                model.predict(clean, k=1)
                raw_t.append(time.perf_counter() - t0)
            else:
                stage.process(table)
                ours_t.append(time.perf_counter() - t0)
    raw, ours = min(raw_t), min(ours_t)
    degen = Degeneration()
    dt_ = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        degen.process(table)
        dt_.append(time.perf_counter() - t0)
    n = table.num_rows
    return [
        f"| what | docs | MB | best of {repeats} (s) | docs/s | MB/s |",
        "|---|---:|---:|---:|---:|---:|",
        f"| raw fastText `model.predict(list, k=1)` on pre-cleaned texts | {n} | {mb:.1f} | {raw:.3f} | "
        f"{n / raw:,.0f} | {mb / raw:.1f} |",
        f"| fasttext_quality_v1 `process(table)` (Arrow preprocessing + predict + column) | {n} | {mb:.1f} | "
        f"{ours:.3f} | {n / ours:,.0f} | {mb / ours:.1f} |",
        f"| degeneration_v1 `process(table)` | {n} | {mb:.1f} | {min(dt_):.3f} | {n / min(dt_):,.0f} | "
        f"{mb / min(dt_):.1f} |",
        f"\nfasttext_quality_v1 / raw predict throughput: **{raw / ours:.1%}** (target >= 85%)",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2,000 records per synthetic file, 1 repeat")
    ap.add_argument("--skip-detector", action="store_true")
    args = ap.parse_args()
    if not CORPORA.exists():
        print(f"needs {CORPORA}", file=sys.stderr)
        return 2
    print(
        f"# bench_scorers: {dt.date.today()} on {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()})\n"
    )
    print("## fasttext_quality_v1 throughput\n")
    print("\n".join(bench_throughput(1 if args.quick else 5)))
    print("\n## Classifiers' held-out metrics (from their manifests)\n")
    print("\n".join(bench_quality_manifest()))
    if not args.skip_detector:
        print("\n## machine_text_v1: leave-one-generator-family-out\n")
        print("\n".join(bench_detector(2000 if args.quick else None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
