"""Dedup benchmark: near-dup quality, speed vs datatrove's MinHash, decontamination, boilerplate share.

Run from the project root: ``python benchmarks/bench_dedup.py [--quick] [--only quality,speed,decontam,lines]``.
Needs ../shared/corpora (exits with a message when absent). Prints one JSON object per section and a
summary; ``--json PATH`` writes them all. Speed runs each contender in its own subprocess (same
documents, same run) so that peak memory (max RSS) is measured per contender; every subprocess runs with
the allocator settings of a ``curate`` process (``curate.runtime.allocator``; ``CURATE_ALLOCATOR=default`` for the
libraries' defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"

from curate.core.engine import InlineEngine  # noqa: E402
from curate.io.readers import read_table  # noqa: E402
from curate.io.storage import Location, write_parquet  # noqa: E402

WORD = re.compile(r"\w+")
DIGIT = re.compile(r"\d")


def run_global(stage, parts, engine, tmp: Path):
    """collect per part -> key tables on disk -> reduce -> apply, as the runner does."""
    tmp.mkdir(parents=True, exist_ok=True)
    stage.ensure_setup()
    paths = []
    for i, part in enumerate(parts):
        path = tmp / f"keys-{i:05d}.parquet"
        write_parquet(stage.collect(part), Location.of(str(path)), scratch=True)  # as collect_keys
        paths.append(str(path))
    state = stage.reduce(paths, engine)
    return pa.concat_tables([stage.apply(p, state) for p in parts], promote_options="permissive"), state


def chunks(table: pa.Table, size: int) -> list[pa.Table]:
    return [table.slice(i, size) for i in range(0, table.num_rows, size)]


def shingles(text: str, n: int = 5) -> set:
    """Word 5-grams as minhash_dedup_v1 defines them: lower-cased \\w+ runs, digits mapped to 0."""
    w = WORD.findall(DIGIT.sub("0", text.lower()))
    if len(w) < n:
        return {tuple(w)} if w else set()
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


# ---------------------------------------------------------------- perturbations
BOILER_HEAD = "Skip to main content\nHome | News | Sport | Weather | Contact us\nSubscribe to our newsletter"
BOILER_FOOT = "Share this article\nCookie policy | Privacy | Terms of use\n© 2019 Example Media Group. All rights reserved."


def perturb(text: str, kind: str, rate: float, rng: np.random.Generator, vocab: list[str]) -> str:
    if kind == "reorder":
        paras = [p for p in text.split("\n") if p.strip()]
        k = max(1, round(rate * len(paras)))
        idx = rng.choice(len(paras), size=min(k * 2, len(paras)), replace=False)
        for a, b in zip(idx[::2], idx[1::2], strict=False):
            paras[a], paras[b] = paras[b], paras[a]
        return "\n".join(paras)
    if kind == "boilerplate":
        return f"{BOILER_HEAD}\n{text}\n{BOILER_FOOT}"
    if kind == "truncate":
        return text[: int(len(text) * (1 - rate))]
    words = text.split(" ")
    mask = rng.random(len(words)) < rate
    if kind == "delete":
        return " ".join(w for w, m in zip(words, mask, strict=True) if not m)
    if kind == "substitute":
        return " ".join(vocab[rng.integers(len(vocab))] if m else w for w, m in zip(words, mask, strict=True))
    if kind == "insert":
        out = []
        for w, m in zip(words, mask, strict=True):
            out.append(w)
            if m:
                out.append(vocab[rng.integers(len(vocab))])
        return " ".join(out)
    raise ValueError(kind)


KINDS = {
    "delete": [0.005, 0.01, 0.02, 0.04, 0.08, 0.15],
    "insert": [0.005, 0.01, 0.02, 0.04, 0.08, 0.15],
    "substitute": [0.005, 0.01, 0.02, 0.04, 0.08, 0.15],
    "reorder": [0.1, 0.3, 0.6],
    "boilerplate": [0.0],
    "truncate": [0.05, 0.1, 0.2, 0.4, 0.6],
}


def labelled_set(n_orig: int, seed: int = 0) -> tuple[pa.Table, list[tuple[int, int, float, str]]]:
    """Originals from real web text plus one perturbed copy each; (orig, copy, exact J, kind) pairs."""
    src = read_table(str(CORPORA / "web" / "webtext.jsonl.gz"))
    texts = [t for t in src.column("text").to_pylist() if len(t.split()) >= 150][:n_orig]
    rng = np.random.default_rng(seed)
    vocab = sorted({w for t in texts[:200] for w in t.split(" ") if w.isalpha()})
    kinds = [(k, r) for k, rates in KINDS.items() for r in rates]
    copies, pairs = [], []
    for i, t in enumerate(texts):
        kind, rate = kinds[i % len(kinds)]
        c = perturb(t, kind, rate, rng, vocab)
        pairs.append((i, len(texts) + i, jaccard(t, c), f"{kind}:{rate}"))
        copies.append(c)
    order = rng.permutation(len(texts) * 2)  # originals and copies interleaved in random order
    all_texts = texts + copies
    table = pa.table(
        {
            "id": [f"d{j}" for j in order],
            "text": [all_texts[j] for j in order],
            "source": ["bench"] * len(all_texts),
        }
    )
    return table, pairs


def quality(n_orig: int) -> dict:
    from curate.dedup.minhash import MinhashDedup, MinhashParams

    table, pairs = labelled_set(n_orig)
    out: dict = {"docs": table.num_rows, "pairs": len(pairs)}
    js = np.array([p[2] for p in pairs])
    out["pairs_by_jaccard"] = {
        "J>=0.85": int((js >= 0.85).sum()),
        "0.6<J<0.85": int(((js > 0.6) & (js < 0.85)).sum()),
        "J<=0.6": int((js <= 0.6).sum()),
    }
    for name, params in {
        "defaults": MinhashParams(threshold=0.8),
        "pure_lsh": MinhashParams(estimate_margin=None),
        "verify": MinhashParams(threshold=0.8, verify=True),
    }.items():
        with tempfile.TemporaryDirectory() as tmp:
            res, state = run_global(MinhashDedup(params), chunks(table, 500), InlineEngine(), Path(tmp))
        cluster = dict(
            zip(
                res.column("id").to_pylist(),
                res.column("minhash_dedup_v1.cluster_id").to_pylist(),
                strict=True,
            )
        )
        flagged = np.array([cluster[f"d{a}"] == cluster[f"d{b}"] for a, b, _, _ in pairs])
        r = {
            "recall_J>=0.85": float(flagged[js >= 0.85].mean()),
            "flagged_share_J<=0.6": float(flagged[js <= 0.6].mean()),
            "flagged_share_0.6<J<0.8": float(flagged[(js > 0.6) & (js < 0.8)].mean()),
            "recall_0.8<=J<0.85": float(flagged[(js >= 0.8) & (js < 0.85)].mean()),
            "summary": MinhashDedup(params).summary(state),
        }
        by_kind: dict = {}
        for (_, _, j, k), f in zip(pairs, flagged, strict=True):
            by_kind.setdefault(k, []).append((round(j, 3), bool(f)))
        r["by_perturbation"] = {
            k: {
                "mean_J": round(float(np.mean([x[0] for x in v])), 3),
                "flagged": round(float(np.mean([x[1] for x in v])), 3),
            }
            for k, v in by_kind.items()
        }
        if params.verify:  # every removed document is >= threshold from the kept one it duplicates
            text = dict(zip(res.column("id").to_pylist(), res.column("text").to_pylist(), strict=True))
            dup = [
                (i, d)
                for i, d in zip(
                    res.column("id").to_pylist(), res.column("duplicate_of").to_pylist(), strict=True
                )
                if d
            ]
            r["removed_below_threshold"] = sum(jaccard(text[i], text[d]) < 0.8 for i, d in dup)
            r["removed"] = len(dup)
        out[name] = r
    out["hppt"] = hppt()
    return out


def hppt() -> dict:
    from curate.dedup.minhash import MinhashDedup, MinhashParams

    t = read_table(
        str(CORPORA / "neardup" / "hppt_polished_abstracts.jsonl.gz"),
        keep_fields=["url", "fake", "jaccard_distance"],
    )
    rows = t.to_pylist()
    human = {r["url"]: r for r in rows if r["fake"] == "0"}
    pairs = [(human[r["url"]], r) for r in rows if r["fake"] == "1" and r["url"] in human]
    out: dict = {"docs": t.num_rows, "pairs": len(pairs)}
    exact = np.array([jaccard(h["text"], p["text"]) for h, p in pairs])
    dist = np.array([float(p["jaccard_distance"]) for _, p in pairs])
    for name, params in {"defaults": MinhashParams(), "verify": MinhashParams(verify=True)}.items():
        with tempfile.TemporaryDirectory() as tmp:
            res, _ = run_global(MinhashDedup(params), chunks(t, 1000), InlineEngine(), Path(tmp))
        cl = dict(
            zip(
                res.column("id").to_pylist(),
                res.column("minhash_dedup_v1.cluster_id").to_pylist(),
                strict=True,
            )
        )
        flagged = np.array([cl[h["id"]] == cl[p["id"]] for h, p in pairs])
        truth = exact >= 0.8
        buckets = {}
        for lo, hi in [(0, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.3), (0.3, 0.5), (0.5, 1.01)]:
            m = (dist >= lo) & (dist < hi)
            if m.any():
                buckets[f"word_jaccard_distance {lo}-{hi}"] = {
                    "pairs": int(m.sum()),
                    "mean_5gram_J": round(float(exact[m].mean()), 3),
                    "flagged": round(float(flagged[m].mean()), 3),
                    "recall_vs_5gramJ>=0.8": round(float(flagged[m & truth].mean()), 3)
                    if (m & truth).any()
                    else None,
                }
        out[name] = {
            "precision_vs_5gramJ>=0.8": round(float(truth[flagged].mean()), 4) if flagged.any() else None,
            "recall_vs_5gramJ>=0.8": round(float(flagged[truth].mean()), 4) if truth.any() else None,
            "flagged_pairs": int(flagged.sum()),
            "pairs_with_5gramJ>=0.8": int(truth.sum()),
            "by_bucket": buckets,
        }
    return out


# ---------------------------------------------------------------- speed
def speed_corpus(path: Path, n_docs: int) -> None:
    """Real documents (web files) plus perturbed copies of 10% of them, written as one parquet file."""
    tables = [
        read_table(str(CORPORA / "web" / f), limit=n_docs)
        for f in ("blogs.jsonl.gz", "webtext.jsonl.gz", "news.jsonl.gz", "c4_en.jsonl.gz")
    ]
    texts = [t for tb in tables for t in tb.column("text").to_pylist()][:n_docs]
    rng = np.random.default_rng(1)
    vocab = sorted({w for t in texts[:300] for w in t.split(" ") if w.isalpha()})
    kinds = [(k, r) for k, rates in KINDS.items() for r in rates if r <= 0.1]
    for i in rng.choice(len(texts), size=len(texts) // 10, replace=False):
        k, r = kinds[int(i) % len(kinds)]
        texts.append(perturb(texts[int(i)], k, r, rng, vocab))
    pq.write_table(
        pa.table(
            {"id": [f"s{i}" for i in range(len(texts))], "text": texts, "source": ["bench"] * len(texts)}
        ),
        path,
    )


def run_ours(path: str, engine_kind: str, part_docs: int) -> dict:
    from curate.core.engine import make_engine
    from curate.dedup.minhash import MinhashDedup, MinhashParams

    t0 = time.perf_counter()
    table = pq.read_table(path)
    t_read = time.perf_counter() - t0
    engine = make_engine(engine_kind, num_cpus=2, progress=False)
    t1, c1 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        res, state = run_global(
            MinhashDedup(MinhashParams(estimate_margin=None)), chunks(table, part_docs), engine, Path(tmp)
        )
    elapsed, cpu = time.perf_counter() - t1, time.process_time() - c1
    engine.shutdown()
    removed = [
        i
        for i, r in zip(res.column("id").to_pylist(), res.column("__reject__").to_pylist(), strict=True)
        if r
    ]
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,  # this process only: all of the work inline, the driver's share on Ray
        "read_s": t_read,
        "removed": sorted(removed),
        "docs": table.num_rows,
        "summary": state.facts,
    }


def run_datatrove(path: str) -> dict:
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )

    table = pq.read_table(path)
    ids, texts = table.column("id").to_pylist(), table.column("text").to_pylist()

    def docs():
        return (Document(text=t, id=i) for i, t in zip(ids, texts, strict=True))

    cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        sig = MinhashDedupSignature(output_folder=f"{tmp}/sigs", config=cfg)
        if cfg.hash_config.hash_fc == "xxhash" and cfg.hash_config.precision == 64:
            # datatrove 0.10.1 passes str to xxhash, which xxhash>=4 refuses; encode as older xxhash did.
            import xxhash

            sig._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8"))
        sig.run(docs(), rank=0, world_size=1)
        buckets = MinhashDedupBuckets(input_folder=f"{tmp}/sigs", output_folder=f"{tmp}/buckets", config=cfg)
        for b in range(cfg.num_buckets):
            buckets.run(rank=b, world_size=cfg.num_buckets)
        MinhashDedupCluster(input_folder=f"{tmp}/buckets", output_folder=f"{tmp}/remove", config=cfg).run()
        kept = {
            d.id for d in MinhashDedupFilter(input_folder=f"{tmp}/remove").run(docs(), rank=0, world_size=1)
        }
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": elapsed, "cpu_seconds": cpu, "removed": sorted(set(ids) - kept), "docs": len(ids)}


def child(which: str, path: str, part_docs: int) -> None:
    import logging

    logging.disable(logging.WARNING)
    out = run_datatrove(path) if which == "datatrove" else run_ours(path, which.split(":")[1], part_docs)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if which.endswith("ray"):
        out["peak_rss_mb_incl_ray_workers"] = (
            out["peak_rss_mb"] + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        )
    print("RESULT " + json.dumps(out))


def _child_run(which: str, path: str) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", which, path],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(f"{which} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[0][7:])


def speed(
    n_docs: int, runs: tuple[str, ...] = ("ours:inline", "ours:ray", "datatrove"), ours_reps: int = 5
) -> dict:
    """Each tool in its own fresh process. ``ours:inline`` runs ``ours_reps`` times (about half before
    datatrove, the rest after), and its median CPU seconds is the one compared: ours takes ~1.5 s, in which
    this VM's page-fault costs move it by +-20% from one process to the next, while datatrove's ~75 s
    average over such noise."""
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/corpus.parquet"
        speed_corpus(Path(path), n_docs)
        size_mb = os.path.getsize(path) / 1e6
        results = {}
        # ours:inline's first runs where it stands in ``runs``, the rest right after datatrove's run
        after = ours_reps // 2 if "ours:inline" in runs and "datatrove" in runs else 0
        order = []
        for which in runs:
            order += [which] * (ours_reps - after if which == "ours:inline" else 1)
            if which == "datatrove":
                order += ["ours:inline"] * after
        reps: list[dict] = []
        for which in order:
            r = _child_run(which, path)
            if which == "ours:inline":
                reps.append(r)
            else:
                results[which] = r
        if reps:
            cpu = [r["cpu_seconds"] for r in reps]
            med = sorted(range(len(reps)), key=lambda i: cpu[i])[len(reps) // 2]
            results["ours:inline"] = dict(
                reps[med], cpu_seconds_each=cpu, seconds_each=[r["seconds"] for r in reps]
            )
            if any(r["removed"] != reps[0]["removed"] for r in reps):
                raise RuntimeError("ours:inline removed different documents in two of its runs")
    n = results["datatrove"]["docs"]
    dt_removed = set(results["datatrove"]["removed"])
    out = {"docs": n, "parquet_mb": round(size_mb, 1)}
    for which, r in results.items():
        agree = 1 - len(set(r["removed"]) ^ dt_removed) / n
        out[which] = {
            "seconds": round(r["seconds"], 2),
            "cpu_seconds": round(r["cpu_seconds"], 2),
            "docs_per_s": round(n / r["seconds"], 1),
            "removed": len(r["removed"]),
            "keep_drop_agreement_with_datatrove": round(agree, 5),
            "peak_rss_mb": round(r["peak_rss_mb"], 1),
        }
        if "cpu_seconds_each" in r:
            out[which]["runs"] = len(r["cpu_seconds_each"])
            out[which]["cpu_seconds_each"] = [round(x, 2) for x in r["cpu_seconds_each"]]
            out[which]["seconds_each"] = [round(x, 2) for x in r["seconds_each"]]
        if "peak_rss_mb_incl_ray_workers" in r:
            out[which]["peak_rss_mb_incl_ray_workers"] = round(r["peak_rss_mb_incl_ray_workers"], 1)
    for which in (w for w in ("ours:inline", "ours:ray") if w in results):
        out[which]["speedup_vs_datatrove"] = round(
            results["datatrove"]["seconds"] / results[which]["seconds"], 2
        )
    # Per core: CPU seconds of the one process that does all the work (both run inline, one core); on a
    # shared machine this is the figure neighbours do not stretch. Not for Ray (its workers are elsewhere).
    out["ours:inline"]["cpu_speedup_vs_datatrove"] = round(
        results["datatrove"]["cpu_seconds"] / results["ours:inline"]["cpu_seconds"], 2
    )
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


# ---------------------------------------------------------------- decontamination and boilerplate
def decontam(n_plant: int) -> dict:
    from curate.dedup.decontam import Decontaminate, DecontamParams, load_eval_items

    pattern = str(CORPORA / "eval" / "*.jsonl.gz")
    names, fields = load_eval_items([pattern])
    rng = np.random.default_rng(2)
    eligible = [i for i, f in enumerate(fields) if any(len(WORD.findall(x)) >= 13 for x in f)]
    chosen = rng.choice(eligible, size=min(n_plant, len(eligible)), replace=False)
    hosts = read_table(str(CORPORA / "web" / "news.jsonl.gz"), limit=len(chosen)).column("text").to_pylist()
    variants = ["verbatim", "lower", "rewrap", "lower+rewrap"]
    texts, expect = [], []
    for k, (i, host) in enumerate(zip(chosen, hosts, strict=False)):
        field = max(fields[i], key=lambda x: len(x.split()))
        v = variants[k % len(variants)]
        s = field.lower() if "lower" in v else field
        if "rewrap" in v:
            words = s.split()
            s = "\n".join(" ".join(words[j : j + 7]) for j in range(0, len(words), 7))
        mid = len(host) // 2
        texts.append(host[:mid] + " " + s + " " + host[mid:])
        expect.append(names[i])
    table = pa.table(
        {"id": [f"p{k}" for k in range(len(texts))], "text": texts, "source": ["plant"] * len(texts)}
    )
    stage = Decontaminate(DecontamParams(eval_paths=[pattern]))
    with tempfile.TemporaryDirectory() as tmp:
        res, state = run_global(stage, chunks(table, 500), InlineEngine(), Path(tmp))
    caught = np.array([r is not None for r in res.column("__reject__").to_pylist()])
    hits = stage.summary(state)["hits"]
    by_variant = {v: float(caught[k :: len(variants)].mean()) for k, v in enumerate(variants)}
    wiki = read_table(str(CORPORA / "clean" / "wikipedia.jsonl.gz"))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        wres, wstate = run_global(
            Decontaminate(DecontamParams(eval_paths=[pattern])), chunks(wiki, 500), InlineEngine(), Path(tmp)
        )
    wsec = time.perf_counter() - t0
    wf = wstate["facts"]
    non_boolq = {k: v for k, v in wf["hits"].items() if not k.startswith("boolq:")}
    ids = wres.column("id").to_pylist()
    return {
        "planted": len(texts),
        "recall": float(caught.mean()),
        "recall_by_variant": by_variant,
        "planted_items_in_summary": int(sum(1 for e in expect if e in hits)),
        "wikipedia_docs": wiki.num_rows,
        "wikipedia_docs_flagged": wf["docs_contaminated"],
        "wikipedia_flagged_share": wf["docs_contaminated"] / wiki.num_rows,
        "wikipedia_items_hit_by_set": wf["items_hit_by_set"],
        "wikipedia_non_boolq_hits": non_boolq,
        "wikipedia_seconds": round(wsec, 1),
        "wikipedia_docs_checked": len(ids),
    }


def lines() -> dict:
    from curate.dedup.lines import LineDedup

    t = read_table(str(CORPORA / "web" / "commoncrawl_2019.jsonl.gz"))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        res, state = run_global(LineDedup(), chunks(t, 200), InlineEngine(), Path(tmp))
    sec = time.perf_counter() - t0
    total = sum(len(x) for x in t.column("text").to_pylist())
    removed = sum(res.column("line_dedup_v1.chars_removed").to_pylist())
    return {
        "docs": t.num_rows,
        "chars": total,
        "chars_removed": removed,
        "share_removed": removed / total,
        "docs_changed": sum(1 for n in res.column("line_dedup_v1.lines_removed").to_pylist() if n),
        "docs_rejected_too_short": res.column("__reject__").to_pylist().count("line_dedup_v1:too_short"),
        "boilerplate_lines": state.facts["boilerplate_lines"],
        "seconds": round(sec, 2),
    }


def main() -> None:
    from curate.runtime.allocator import configure

    # The allocator settings a `curate` process runs with (curate/runtime/allocator.py), as environment variables
    # that every contender's subprocess reads at its start (datatrove's too); CURATE_ALLOCATOR=default keeps
    # the libraries' defaults (the runs recorded before these settings, 2026-12-05).
    configure()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sets (CI smoke run)")
    ap.add_argument("--only", default="quality,speed,decontam,lines")
    ap.add_argument("--speed-docs", type=int, default=0, help="real documents in the speed corpus (20,000)")
    ap.add_argument(
        "--speed-runs",
        default="ours:inline,ours:ray,datatrove",
        help="which of ours:inline, ours:ray, datatrove the speed section runs (datatrove and ours:inline needed)",
    )
    ap.add_argument(
        "--ours-reps", type=int, default=5, help="fresh-process runs of ours:inline; the median is compared"
    )
    ap.add_argument("--json", default=None, help="also write all results to this file")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--part-docs", type=int, default=2000, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], args.part_docs)
    if not CORPORA.exists():
        sys.exit(f"needs {CORPORA} (../shared/corpora) for real documents")
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    sections = args.only.split(",")
    if "quality" in sections:
        results["quality"] = quality(300 if args.quick else 1500)
        print(json.dumps({"quality": results["quality"]}, indent=1), flush=True)
    if "speed" in sections:
        runs = tuple(args.speed_runs.split(","))
        results["speed"] = speed(args.speed_docs or (3000 if args.quick else 20000), runs, args.ours_reps)
        print(json.dumps({"speed": results["speed"]}, indent=1), flush=True)
    if "decontam" in sections:
        results["decontam"] = decontam(200 if args.quick else 2000)
        print(json.dumps({"decontam": results["decontam"]}, indent=1), flush=True)
    if "lines" in sections:
        results["lines"] = lines()
        print(json.dumps({"lines": results["lines"]}, indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
