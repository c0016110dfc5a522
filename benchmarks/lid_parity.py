"""language_v1: the numpy engine against fastText's own predict, on real text.

Both engines score the same batches (2,000 documents, as the pipeline's parts), alternating which goes
first; CPU seconds are this process's, per engine. Reported per corpus: documents, labels that differ,
the largest |score difference|, keep/drop decisions that differ under the reference rule
(``languages: [en]``, ``threshold: 0.65``) and, with ``threshold: 0.3`` (every label's probability
is needed), the largest difference of ``languages_score``.

    .venv/bin/python benchmarks/lid_parity.py [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from curate.filters.lang import LanguageId, LanguageParams

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
SETS = {
    "web": sorted((CORPORA / "web").glob("*.jsonl.gz")),
    "udhr (multilingual)": [CORPORA / "lang" / "udhr.jsonl.gz"],
    "python_docs": [CORPORA / "clean" / "python_docs.jsonl.gz"],
    "wikipedia": [CORPORA / "clean" / "wikipedia.jsonl.gz"],
}
BATCH = 2000


def texts_of(paths: list[Path], limit: int) -> list[str]:
    out: list[str] = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                out.append(json.loads(line).get("text") or "")
                if limit and len(out) >= limit:
                    return out
    return out


def stage(engine: str, threshold: float) -> LanguageId:
    s = LanguageId(LanguageParams(languages=["en"], threshold=threshold, engine=engine), label="language_v1")
    s.ensure_setup()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="at most this many documents per corpus (0: all)")
    args = ap.parse_args()
    if not CORPORA.exists():
        raise SystemExit(f"needs {CORPORA} (the shared corpora)")
    engines = {e: stage(e, 0.65) for e in ("fasttext", "numpy")}
    low = {e: stage(e, 0.3) for e in ("fasttext", "numpy")}
    print(
        "| corpus | docs | labels differ | max abs score diff | decisions differ (en > 0.65) | "
        "max abs languages_score diff (threshold 0.3) | MB | fastText CPU-s | numpy CPU-s | ratio | numpy MB/CPU-s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    total = {"fasttext": 0.0, "numpy": 0.0}
    for name, paths in SETS.items():
        texts = texts_of(paths, args.limit)
        cpu = {"fasttext": 0.0, "numpy": 0.0}
        n_lab = n_dec = 0
        d_score = d_low = 0.0
        for b, start in enumerate(range(0, len(texts), BATCH)):
            table = pa.table({"text": texts[start : start + BATCH]})
            out = {}
            for e in ("fasttext", "numpy") if b % 2 == 0 else ("numpy", "fasttext"):
                t0 = time.process_time()
                out[e] = engines[e].score(table)
                cpu[e] += time.process_time() - t0
            ft, nx = out["fasttext"], out["numpy"]
            n_lab += sum(
                a != c for a, c in zip(ft["language"].to_pylist(), nx["language"].to_pylist(), strict=True)
            )
            fs, ns = ft["language_score"].to_numpy(), nx["language_score"].to_numpy()
            d_score = max(d_score, float(np.abs(fs - ns).max(initial=0.0)))
            fk = ft["languages_score"].to_numpy() > 0.65
            nk = nx["languages_score"].to_numpy() > 0.65
            n_dec += int((fk != nk).sum())
            lo_f = low["fasttext"].score(table)["languages_score"].to_numpy()
            lo_n = low["numpy"].score(table)["languages_score"].to_numpy()
            d_low = max(d_low, float(np.abs(lo_f - lo_n).max(initial=0.0)))
        for e in cpu:
            total[e] += cpu[e]
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        print(
            f"| {name} | {len(texts):,} | {n_lab} | {d_score:.2e} | {n_dec} | {d_low:.2e} | {mb:.1f} | "
            f"{cpu['fasttext']:.2f} | {cpu['numpy']:.2f} | {cpu['fasttext'] / max(cpu['numpy'], 1e-9):.2f}x | "
            f"{mb / max(cpu['numpy'], 1e-9):.2f} |"
        )
    print(
        f"\nall: fastText {total['fasttext']:.2f} CPU-s, numpy {total['numpy']:.2f} CPU-s, "
        f"{total['fasttext'] / total['numpy']:.2f}x less CPU"
    )


if __name__ == "__main__":
    main()
