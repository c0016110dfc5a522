"""semantic_dedup_v1: recall on rewritten documents that minhash_dedup_v1 misses, false positives on
different documents about the same topic, and docs/s per core.

    python benchmarks/bench_semantic.py [--originals N] [--threshold T] [--model M] [--reuse-only]
    python benchmarks/bench_semantic.py --speed [--docs N] [--encoder-docs N] [--json PATH]

Paraphrase set: every distinct document of ``web/news``, ``web/c4_en`` and ``web/webtext`` with at
least 40 words, shuffled, then N (default 1,000) of them rewritten once and appended (so the original
is the earlier row): sentences shuffled and every word found in a built-in table of ~150 common words
replaced by a synonym (``_reuse.SYNONYMS``; about one word in twelve). minhash_dedup_v1
(default parameters) and semantic_dedup_v1 run on it through ``collect`` / ``reduce`` / ``apply`` on
the inline engine. Recall = rewrites rejected with ``duplicate_of`` = their original, among the
rewrites MinHash kept. Also reported: recall on LLM rewrites (``neardup/hppt_polished_abstracts``:
ChatGPT-polished abstracts; ``synthetic/l2r_rewrites``: GPT-4o rewrites), which are harder.

False positives: the share of documents removed from sets of distinct documents about one topic:
``hppt`` human abstracts (all NLP papers), ``l2r`` human texts (20 domains), ``news`` and ``clean/
wikipedia`` (first 2,000 characters of each article). Exact copies are removed first; removed pairs
are printed for audit (a corpus's own near-duplicates are not false positives).

Speed: CPU seconds (one process; BLAS, OpenMP and faiss pinned to one thread) of collect + reduce +
apply over the paraphrase corpus (web text), per document. With ``--model`` every figure above is that
embedder's (at its own default threshold unless ``--threshold``), the hashed embedding's otherwise.

Reuse check (``--reuse-only`` runs only this; ``_reuse.reuse_set``: Wikipedia originals, their cut /
light / heavy revisions and same-topic text from the same article, after 2,000 web pages), at the
defaults of the hashed embedding and, with ``--model`` (a packaged name such as ``all-MiniLM-L6-v2``
or a local encoder directory), of that encoder: the share of revisions MinHash keeps that semantic
dedup removes, the share of same-topic texts and of web pages it removes, and each embedder's
docs/s per core (one thread: collect + reduce + apply) on the same texts.

Speed (``--speed`` runs only this): the first N (default 3,000) documents of the shuffled web pool
above, through collect (in 1 or 2 worker processes, each loading its embedder once, as an engine's
workers do) then reduce and apply in the driver, for each embedder: hashed, ``wordllama-l2-supercat``,
all-MiniLM-L6-v2 as the stage runs it and as it ran before batches were sorted by length
(``semantic_calibration.Unsorted``), and, with one worker, the encoder variants of
``semantic_calibration.py`` (``bf16``; ``onnx`` and ``onnx-int8`` where ``onnxruntime`` and ``onnx``
import). Encoders run on the first ``--encoder-docs`` (default 300) of those documents. Reported per
run: documents per CPU second (every process's CPU, set-up apart) and per wall second (the whole run,
set-up included), the set-up's CPU seconds, the load average, and the largest cosine difference of
each variant's vectors from the stage's own. ``--json`` writes it all.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _common import CORPORA, machine  # noqa: E402
from _reuse import SYNONYMS, reuse_set  # noqa: E402

from curate.core.engine import InlineEngine  # noqa: E402
from curate.dedup import _embed  # noqa: E402
from curate.dedup.minhash import MinhashDedup  # noqa: E402
from curate.dedup.semantic import SemanticDedup, SemanticParams  # noqa: E402


def load(name: str, n: int | None = None, field: str | None = None, value: object = None) -> list[dict]:
    out = []
    with gzip.open(CORPORA / name, "rt") as f:
        for line in f:
            d = json.loads(line)
            if field is None or d.get(field) == value:
                out.append(d)
            if n is not None and len(out) >= n:
                break
    return out


def distinct(texts: list[str]) -> list[str]:
    seen, out = set(), []
    for t in texts:
        k = " ".join(t.lower().split())
        if k not in seen:
            seen.add(k)
            out.append(t)
    return out


def rewrite(text: str, rng: random.Random) -> tuple[str, float]:
    """Sentences shuffled, table words swapped; returns the text and the share of words swapped."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    rng.shuffle(sentences)
    swapped = total = 0

    def swap(m: re.Match[str]) -> str:
        nonlocal swapped, total
        w = m.group()
        total += 1
        s = SYNONYMS.get(w.lower())
        if s is None or s == w.lower():
            return w
        swapped += 1
        return s.capitalize() if w[0].isupper() else s

    out = re.sub(r"[A-Za-z]+", swap, " ".join(sentences))
    return out, swapped / max(total, 1)


def run(stage, texts: list[str], ids: list[str], parts: int = 4) -> tuple[list, list, float, dict]:
    """collect / reduce / apply as the runner does (inline engine); rejects, duplicate_of, CPU s."""
    engine = InlineEngine(progress=False)
    table = pa.table({"id": ids, "text": texts, "source": ["b"] * len(texts)})
    size = -(-len(texts) // parts)
    chunks = [table.slice(i, size) for i in range(0, len(texts), size)]
    c0 = time.process_time()
    stage.ensure_setup()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, ch in enumerate(chunks):
            p = os.path.join(tmp, f"k{i:05d}.parquet")
            pq.write_table(stage.collect(ch), p)
            paths.append(p)
        state = stage.reduce(paths, engine)
        out = [stage.apply(ch, state) for ch in chunks]
    cpu = time.process_time() - c0
    rej = [v for o in out for v in o.column("__reject__").to_pylist()]
    dup = [v for o in out for v in o.column("duplicate_of").to_pylist()]
    return rej, dup, cpu, stage.summary(state)


def reuse_check(models: list[str | None], articles: int, web: int, threshold: float | None = None) -> None:
    """The reuse set at each embedder's defaults (see the module docstring)."""
    rs = reuse_set(CORPORA, articles=articles, web=web)
    ids = [f"d{i}" for i in range(len(rs.texts))]
    _, mh_dup, _, _ = run(MinhashDedup(), rs.texts, ids)
    revisions = [i for i, k in enumerate(rs.kinds) if k in ("cut", "light", "heavy")]
    kept = [i for i in revisions if mh_dup[i] is None]
    print(
        f"\nreuse set: {web} web pages, {articles} Wikipedia originals with a cut, a light and a heavy revision "
        f"and a same-topic text each; MinHash (defaults) removes {len(revisions) - len(kept)} of "
        f"{len(revisions)} revisions"
    )
    for model in models:
        stage = SemanticDedup(SemanticParams(model=model, threshold=threshold if model is None else None))
        rej, dup, cpu, summ = run(stage, rs.texts, ids)
        same_group = [i for i in kept if dup[i] is not None and rs.groups[int(dup[i][1:])] == rs.groups[i]]
        by_kind = {
            k: f"{sum(rs.kinds[i] == k for i in same_group)}/{sum(rs.kinds[i] == k for i in kept)}"
            for k in ("cut", "light", "heavy")
        }
        topic = [i for i, k in enumerate(rs.kinds) if k == "topic"]
        web_rm = sum(1 for i, k in enumerate(rs.kinds) if k == "web" and rej[i])
        topic_rm = sum(1 for i in topic if rej[i])
        print(
            f"{model or 'hashed'} (threshold {stage.threshold}): removes {len(same_group)}/{len(kept)} = "
            f"{len(same_group) / max(len(kept), 1):.1%} of the revisions MinHash keeps ({by_kind}); "
            f"same-topic texts removed {topic_rm}/{len(topic)} = {topic_rm / len(topic):.1%}; web pages "
            f"removed {web_rm}/{web}; {len(rs.texts) / cpu:,.1f} docs/s per core ({len(rs.texts):,} docs, "
            f"{cpu:.1f} CPU s); {summ}"
        )


def llm_and_same_topic(params: SemanticParams) -> None:
    """LLM rewrites caught among those MinHash misses, and distinct same-topic documents removed."""
    # LLM rewrites: harder, reported for what they are.
    hp = load("neardup/hppt_polished_abstracts.jsonl.gz")
    by: dict[str, dict[int, str]] = {}
    for d in hp:
        by.setdefault(d["url"], {})[d["fake"]] = d["text"]
    pairs = [(v[0], v[1]) for v in by.values() if 0 in v and 1 in v]
    l2r: dict[str, dict[str, str]] = {}
    for d in load("synthetic/l2r_rewrites.jsonl.gz"):
        l2r.setdefault(d["pair"], {})[d["generator"]] = d["text"]
    pairs_l2r = [(v["human"], v["GPT-4o"]) for v in l2r.values() if "human" in v and "GPT-4o" in v][:1000]
    for name, pr in (("hppt ChatGPT-polished abstracts", pairs), ("l2r GPT-4o rewrites", pairs_l2r)):
        m = len(pr)
        t = [a for a, _ in pr] + [b for _, b in pr]
        i2 = [f"o{i}" for i in range(m)] + [f"r{i}" for i in range(m)]
        _, mhd, _, _ = run(MinhashDedup(), t, i2)
        _, sed, _, _ = run(SemanticDedup(params), t, i2)
        miss = [i for i in range(m) if mhd[m + i] != f"o{i}"]
        got = sum(sed[m + i] == f"o{i}" for i in miss)
        print(
            f"{name}: {m} pairs; MinHash misses {len(miss)}; semantic catches {got}/{len(miss)} = "
            f"{got / max(len(miss), 1):.1%} of those"
        )

    # False positives on different documents about one topic.
    print("\nfalse positives (distinct documents removed):")
    sets = {
        "hppt human abstracts (NLP)": [d["text"] for d in hp if d["fake"] == 0],
        "l2r human texts (20 domains)": [v["human"] for v in l2r.values() if "human" in v],
        "news": [d["text"] for d in load("web/news.jsonl.gz")],
        "wikipedia (first 2,000 chars)": [d["text"][:2000] for d in load("clean/wikipedia.jsonl.gz")],
    }
    for name, t in sets.items():
        t = distinct(t)
        i2 = [f"d{i}" for i in range(len(t))]
        rej, dup, _cpu, summ = run(SemanticDedup(params), t, i2)
        removed = [(i, int(dup[i][1:])) for i in range(len(t)) if rej[i]]
        print(f"  {name}: {len(removed)}/{len(t)} = {len(removed) / len(t):.2%} removed ({summ})")
        for i, j in removed[:3]:
            print(f"     {t[j][:110]!r}\n  ~  {t[i][:110]!r}")


def web_pool(rng: random.Random) -> list[str]:
    """Every distinct document of news, c4_en and webtext with at least 40 words, shuffled by ``rng``."""
    web = ["web/news.jsonl.gz", "web/c4_en.jsonl.gz", "web/webtext.jsonl.gz"]
    pool = [t for t in distinct([d["text"] for f in web for d in load(f)]) if len(t.split()) >= 40]
    rng.shuffle(pool)
    return pool


def _one_thread() -> None:
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:
        pass
    import torch

    torch.set_num_threads(1)


def _collect_task(
    item: tuple[str | None, str, list[tuple[int, list[str]]], str],
) -> tuple[list, float, float]:
    """One worker process: set the embedder up once, collect its parts; (key paths, set-up CPU s,
    collect CPU s)."""
    model, variant, parts, tmp = item
    _one_thread()
    from semantic_calibration import embedder

    c0 = time.process_time()
    stage = SemanticDedup(SemanticParams(model=model))
    stage._embedder, stage._ready = embedder(model, variant), True
    c1 = time.process_time()
    paths = []
    for i, texts in parts:
        table = pa.table(
            {"id": [f"d{i}-{j}" for j in range(len(texts))], "text": texts, "source": ["b"] * len(texts)}
        )
        path = os.path.join(tmp, f"k{i:05d}.parquet")
        pq.write_table(stage.collect(table), path)
        paths.append((i, path))
    return paths, c1 - c0, time.process_time() - c1


def timed_run(
    model: str | None, variant: str, texts: list[str], workers: int, parts: int = 4
) -> dict[str, Any]:
    """collect in ``workers`` processes, then reduce and apply here (see the module docstring)."""
    size = -(-len(texts) // parts)
    chunks = [(i, texts[i * size : (i + 1) * size]) for i in range(parts)]
    with tempfile.TemporaryDirectory() as tmp:
        w0, load0 = time.perf_counter(), os.getloadavg()[0]
        jobs = [(model, variant, chunks[w::workers], tmp) for w in range(workers)]
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            done = list(pool.map(_collect_task, jobs))
        c0 = time.process_time()
        stage = SemanticDedup(SemanticParams(model=model))
        paths = [p for _, p in sorted(x for d in done for x in d[0])]
        state = stage.reduce(paths, InlineEngine(progress=False))
        for i, chunk in chunks:
            ids = [f"d{i}-{j}" for j in range(len(chunk))]
            stage.apply(pa.table({"id": ids, "text": chunk, "source": ["b"] * len(chunk)}), state)
        driver = time.process_time() - c0
        wall = time.perf_counter() - w0
        vectors = [_vectors_of(p) for p in paths]
    cpu = sum(d[2] for d in done) + driver
    setup = sum(d[1] for d in done)
    return {
        "embedder": _embed.describe(model) + ("" if variant == "as-is" else f" [{variant}]"),
        "workers": workers,
        "documents": len(texts),
        "cpu_s": round(cpu, 2),
        "setup_cpu_s": round(setup, 2),
        "wall_s": round(wall, 2),
        "docs_per_cpu_s": round(len(texts) / cpu, 2),
        "docs_per_wall_s": round(len(texts) / wall, 2),
        "load_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "drops": state.facts.get("drops"),
        "_vectors": vectors,
    }


def _vectors_of(path: str) -> Any:
    from curate.dedup.semantic import _vectors

    return _vectors(pq.read_table(path))


def speed_check(docs: int, encoder_docs: int, out: str | None) -> None:
    """Per-core and per-worker speed of each embedder (see the module docstring)."""
    import importlib.util

    import numpy as np

    texts = web_pool(random.Random(0))[:docs]
    runs: list[dict[str, Any]] = []
    plan: list[tuple[str | None, str, int, list[int]]] = [
        (None, "as-is", docs, [1, 2]),
        ("wordllama-l2-supercat", "as-is", docs, [1, 2]),
        ("all-MiniLM-L6-v2", "as-is", encoder_docs, [1, 2]),
        ("all-MiniLM-L6-v2", "unsorted", encoder_docs, [1, 2]),
        ("all-MiniLM-L6-v2", "bf16", encoder_docs, [1]),
    ]
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        plan += [
            ("all-MiniLM-L6-v2", "onnx", encoder_docs, [1]),
            ("all-MiniLM-L6-v2", "onnx-int8", encoder_docs, [1]),
        ]
    reference: dict[tuple[str | None, int], Any] = {}
    print(
        f"\nspeed: {docs:,} web documents ({sum(len(t) for t in texts):,} characters); encoders on the first {encoder_docs}"
    )
    print(
        "| embedder | workers | documents | docs per CPU s | docs per wall s | set-up CPU s | load (1 min) | max cosine change |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for model, variant, n, worker_counts in plan:
        for workers in worker_counts:
            r = timed_run(model, variant, texts[:n], workers)
            x = np.concatenate(r.pop("_vectors"))
            ref = reference.setdefault((model, n), x)
            r["max_abs_cosine_change"] = float(np.abs((x * x[::-1]).sum(1) - (ref * ref[::-1]).sum(1)).max())
            runs.append(r)
            print(
                f"| {r['embedder']} | {workers} | {n:,} | {r['docs_per_cpu_s']:,} | {r['docs_per_wall_s']:,} | "
                f"{r['setup_cpu_s']} | {r['load_1min'][0]}-{r['load_1min'][1]} | {r['max_abs_cosine_change']:.2g} |",
                flush=True,
            )
    if out:
        Path(out).write_text(
            json.dumps(
                {"machine": machine(), "docs": docs, "encoder_docs": encoder_docs, "runs": runs}, indent=1
            )
            + "\n"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--originals", type=int, default=1000)
    ap.add_argument("--threshold", type=float, default=None, help="default: the embedder's default")
    ap.add_argument(
        "--model", default=None, help="the embedder of the figures below the reuse set (also checked on it)"
    )
    ap.add_argument("--articles", type=int, default=300)
    ap.add_argument("--web", type=int, default=2000)
    ap.add_argument("--reuse-only", action="store_true")
    ap.add_argument("--speed", action="store_true", help="run only the speed check")
    ap.add_argument("--docs", type=int, default=3000, help="documents of the speed check")
    ap.add_argument("--encoder-docs", type=int, default=300, help="documents of the speed check's encoders")
    ap.add_argument("--json", default=None, help="write the speed check's results here")
    args = ap.parse_args()
    if args.speed:
        print(f"machine: {machine()}; load before: {os.getloadavg()}")
        speed_check(args.docs, args.encoder_docs, args.json)
        print(f"load after: {os.getloadavg()}")
        return 0
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:
        pass
    if args.model:
        import torch

        torch.set_num_threads(1)
    print(f"machine: {machine()}; load before: {os.getloadavg()}")
    reuse_check([None, *([args.model] if args.model else [])], args.articles, args.web, args.threshold)
    if args.reuse_only:
        return 0
    params = SemanticParams(threshold=args.threshold, model=args.model)
    rng = random.Random(0)
    pool = web_pool(rng)
    n, m = args.originals, len(pool)
    rewrites, shares = zip(*(rewrite(t, rng) for t in pool[:n]), strict=True)
    texts = pool + list(rewrites)  # every distinct web document, then the rewrites of the first n
    ids = [f"o{i}" for i in range(m)] + [f"r{i}" for i in range(n)]
    print(
        f"\nparaphrase set: {m:,} distinct web documents, then rewrites of {n} of them (sentences shuffled; "
        f"{sum(shares) / n:.1%} of words swapped on average)"
    )
    _mh_rej, mh_dup, mh_cpu, _ = run(MinhashDedup(), texts, ids)
    missed = [i for i in range(n) if mh_dup[m + i] != f"o{i}"]
    print(f"minhash_dedup_v1 (defaults) catches {n - len(missed)}/{n} rewrites; misses {len(missed)}")
    se_rej, se_dup, se_cpu, summ = run(SemanticDedup(params), texts, ids)
    caught = [i for i in missed if se_dup[m + i] == f"o{i}"]
    all_caught = sum(se_dup[m + i] == f"o{i}" for i in range(n))
    fp_orig = [(ids[i], se_dup[i]) for i in range(m) if se_rej[i]]
    mh_orig = sum(1 for i in range(m) if mh_dup[i])
    print(
        f"semantic_dedup_v1 (threshold {SemanticDedup(params).threshold}) catches {len(caught)}/{len(missed)} = "
        f"{len(caught) / max(len(missed), 1):.1%} of the rewrites MinHash misses ({all_caught}/{n} of all); "
        f"distinct web documents removed: {len(fp_orig)} (MinHash: {mh_orig}) {fp_orig[:8]}; {summ}"
    )
    for i, j in fp_orig[:4]:
        print(f"     {texts[int(j[1:])][:100]!r}\n  ~  {texts[int(i[1:])][:100]!r}")
    print(
        f"speed on this corpus ({len(texts):,} docs): minhash_dedup_v1 {len(texts) / mh_cpu:,.0f} docs/s, "
        f"semantic_dedup_v1 {len(texts) / se_cpu:,.0f} docs/s per core (collect + reduce + apply, CPU s)"
    )
    by_share = sorted(missed, key=lambda i: shares[i])
    q = len(by_share) // 4 or 1
    for k in range(0, len(by_share), q):
        grp = by_share[k : k + q]
        got = sum(se_dup[m + i] == f"o{i}" for i in grp)
        print(f"  swapped {shares[grp[0]]:.0%}-{shares[grp[-1]]:.0%}: {got}/{len(grp)}")

    llm_and_same_topic(params)
    print(f"load after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
