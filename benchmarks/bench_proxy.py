"""Proxy training benchmarks: (a) does curation buy learning signal per token? (b) trainer speed.

(a) experiment: baseline "raw" = the union of ../shared/corpora/web/*.jsonl.gz as they are (blogs
    subsampled to its first ``--blogs`` posts); "curated" = the same after exact dedup (xxh64 of
    whitespace-normalised, lower-cased text) and Gopher-style heuristics computed here (see
    ``heuristic_reasons``). Written as a run directory (kept/ + rejected/ with reasons) and measured by
    the real proxy phase (``curate.proxy.phase.run_phase``): same tokenizer, >= 3 seeds, eval on
    held-out clean/wikipedia (the file's LAST articles, used nowhere else), clean/gutenberg and
    clean/wikitext2_valid, all decontaminated from training data.
(b) speed: our trainer's tokens/s (fp32, and bf16 as ``auto`` picks on CPUs with native bf16) vs
    ``transformers.Trainer`` with its defaults on the same model and data in the same process, at two
    ladder sizes, and MFU against torch.matmul float32 / bfloat16 peaks measured here.

    python benchmarks/bench_proxy.py --part all --out runs/bench_proxy
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"


def heuristic_reasons(texts: list[str]) -> list[str | None]:
    """Gopher-style quality rules (Rae et al. 2021), vectorised with numpy over per-document counts."""
    words = [t.split() for t in texts]
    n_words = np.array([len(w) for w in words])
    mean_len = np.array([np.mean([len(x) for x in w]) if w else 0.0 for w in words])
    alpha = np.array([sum(any(c.isalpha() for c in x) for x in w) / max(len(w), 1) for w in words])
    lines = [t.splitlines() or [""] for t in texts]
    bullet = np.array([sum(ln.lstrip().startswith(("•", "-", "*")) for ln in ls) / len(ls) for ls in lines])
    ellipsis = np.array([sum(ln.rstrip().endswith(("...", "…")) for ln in ls) / len(ls) for ls in lines])
    symbols = np.array(
        [(t.count("#") + t.count("...")) / max(n, 1) for t, n in zip(texts, n_words, strict=True)]
    )
    stop = {"the", "be", "to", "of", "and", "that", "have", "with"}
    n_stop = np.array([sum(x.lower() in stop for x in w) for w in words])
    out: list[str | None] = [None] * len(texts)
    checks = [
        ("short_doc", n_words < 50),
        ("long_doc", n_words > 100_000),
        ("mean_word_length", (mean_len < 3) | (mean_len > 10)),
        ("symbol_ratio", symbols > 0.1),
        ("bullet_lines", bullet > 0.9),
        ("ellipsis_lines", ellipsis > 0.3),
        ("alpha_words", alpha < 0.8),
        ("stop_words", n_stop < 2),
    ]
    for name, bad in checks:
        for i in np.flatnonzero(bad):
            if out[i] is None:
                out[i] = f"gopher_heuristics:{name}"
    return out


def build_run_dir(out: Path, blogs: int) -> dict:
    """kept/ and rejected/ parquet of the web union after exact dedup + heuristics; returns counts."""
    import xxhash

    from curate.io.readers import read_table

    t0, c0 = time.perf_counter(), time.process_time()
    tables = []
    for f in sorted((CORPORA / "web").glob("*.jsonl.gz")):
        limit = blogs if f.name.startswith("blogs") else None
        t = read_table(str(f), limit=limit)
        t = t.filter(pa.compute.is_null(t.column("__reject__"))) if "__reject__" in t.column_names else t
        tables.append(t.select(["id", "text", "source"]))
    table = pa.concat_tables(tables)
    texts = table.column("text").to_pylist()
    read_cpu = time.process_time() - c0
    c1 = time.process_time()
    keys = [xxhash.xxh64_intdigest(" ".join(x.lower().split()).encode()) for x in texts]
    seen: dict[int, str] = {}
    reasons: list[str | None] = []
    ids = table.column("id").to_pylist()
    for k, i in zip(keys, ids, strict=True):
        if k in seen:
            reasons.append("exact_dedup:duplicate")
        else:
            seen[k] = i
            reasons.append(None)
    dedup_cpu = time.process_time() - c1
    c2 = time.process_time()
    heur = heuristic_reasons(texts)
    reasons = [r if r is not None else h for r, h in zip(reasons, heur, strict=True)]
    heur_cpu = time.process_time() - c2
    mask = np.array([r is None for r in reasons])
    (out / "kept").mkdir(parents=True, exist_ok=True)
    (out / "rejected").mkdir(parents=True, exist_ok=True)
    kept = table.filter(pa.array(mask))
    rej = table.filter(pa.array(~mask))
    rr = [r for r in reasons if r is not None]
    rej = rej.append_column("stage", pa.array([r.split(":")[0] for r in rr])).append_column(
        "reason", pa.array(rr)
    )
    n = 4
    for i in range(n):  # four parts each, so the shard step has parallel items
        pq.write_table(
            kept.slice(i * len(kept) // n, (i + 1) * len(kept) // n - i * len(kept) // n),
            out / "kept" / f"part-{i:05d}.parquet",
        )
        pq.write_table(
            rej.slice(i * len(rej) // n, (i + 1) * len(rej) // n - i * len(rej) // n),
            out / "rejected" / f"part-{i:05d}.parquet",
        )
    counts: dict[str, int] = {}
    for r in rr:
        counts[r] = counts.get(r, 0) + 1
    manifest = {
        "stages": [
            {"name": "read", "cpu_s": round(read_cpu, 3)},
            {"name": "exact_dedup", "cpu_s": round(dedup_cpu, 3)},
            {"name": "gopher_heuristics", "cpu_s": round(heur_cpu, 3)},
        ],
        "accounting": {"input": table.num_rows, "kept": kept.num_rows, "rejected": rej.num_rows},
        "removed": counts,
        "wall_s": time.perf_counter() - t0,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def write_eval_slices(out: Path, chars: int) -> list[dict]:
    """The eval files: last Wikipedia articles, Gutenberg, wikitext-2 valid (cut to ``chars`` by the phase)."""
    from curate.io.readers import read_table

    wiki = read_table(str(CORPORA / "clean" / "wikipedia.jsonl.gz"))
    tail = wiki.slice(wiki.num_rows - 40)  # the file's last 40 articles
    path = out / "eval_wikipedia_tail.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for i, t in zip(tail.column("id").to_pylist(), tail.column("text").to_pylist(), strict=True):
            f.write(json.dumps({"id": i, "text": t, "source": "wikipedia"}) + "\n")
    return [
        {"name": "wikipedia", "path": str(path)},
        {"name": "gutenberg", "path": str(CORPORA / "clean" / "gutenberg.jsonl.gz")},
        {"name": "wikitext2", "path": str(CORPORA / "clean" / "wikitext2_valid.jsonl.gz")},
    ]


def experiment(args: argparse.Namespace) -> dict:
    from curate.core.engine import InlineEngine
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext

    out = Path(args.out) / "experiment"
    out.mkdir(parents=True, exist_ok=True)
    manifest = (
        json.loads((out / "manifest.json").read_text())
        if (out / "manifest.json").exists()
        else build_run_dir(out, args.blogs)
    )
    section = {
        "model": args.model,
        "budget": args.budget,
        "seeds": args.seeds,
        "tokenizer": {"vocab_size": args.vocab, "sample_chars": 3_000_000},
        "eval": write_eval_slices(out, args.eval_chars),
        "eval_chars": args.eval_chars,
        "train": {
            "seq_len": 128,
            "batch_size": 16,
            "lr": 3e-3,
            "n_evals": 6,
            "ckpt_every": 100,
            "threads": os.cpu_count() or 1,
        },
        "cpus_per_run": float(os.cpu_count() or 1),
    }
    t0 = time.perf_counter()
    summary = run_phase(
        RunContext(
            run_dir=out,
            config={},
            engine=InlineEngine(progress=False),
            manifest=manifest,
            section=parse_section(section),
        )
    )
    g = json.loads((out / "goodput.json").read_text())
    return {
        "manifest": manifest,
        "section": section,
        "phase_wall_s": time.perf_counter() - t0,
        "summary": summary,
        "goodput": {
            r: {
                k: v[k]
                for k in (
                    "multiplier",
                    "yield",
                    "goodput",
                    "bpb_at_T",
                    "tokens_kept",
                    "docs",
                    "decontaminated",
                    "costs",
                    "learning_signal_per_token",
                )
            }
            for r, v in g["recipes"].items()
        },
        "ranking": g["ranking"],
        "decision_agreement": (g.get("ladder") or {}).get("decision_agreement"),
        "per_set_bpb_at_T": {
            r: {
                s: (c["bpb_mean"][-1], c["bpb_ci_low"][-1], c["bpb_ci_high"][-1])
                for s, c in v["curves"].items()
            }
            for r, v in g["recipes"].items()
        },
    }


def demo(args: argparse.Namespace) -> dict:
    """The phase with its default section (the demo's config) on a copy of the experiment's run dir, on Ray."""
    from curate.core.engine import RayEngine
    from curate.proxy.phase import run_phase
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext

    src, dst = Path(args.out) / "experiment", Path(args.out) / "demo"
    if not (src / "manifest.json").exists():
        build_run_dir(src, args.blogs)
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for d in ("kept", "rejected"):
        shutil.copytree(src / d, dst / d)
    manifest = json.loads((src / "manifest.json").read_text())
    t0 = time.perf_counter()
    engine = RayEngine(num_cpus=os.cpu_count(), progress=False)
    t1 = time.perf_counter()
    ctx = RunContext(run_dir=dst, config={}, engine=engine, manifest=manifest, section=parse_section({}))
    summary = run_phase(ctx)
    t2 = time.perf_counter()
    engine.shutdown()
    return {"ray_start_s": t1 - t0, "phase_s": t2 - t1, "summary": summary}


def matmul_peak(threads: int, dtype: str = "float32", n: int = 2048, seconds: float = 3.0) -> float:
    """FLOP/s of a square ``torch.matmul`` in ``dtype`` (the MFU denominator for that precision)."""
    import torch

    torch.set_num_threads(threads)
    dt = getattr(torch, dtype)
    a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
    for _ in range(2):
        a @ b
    k, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        a @ b
        k += 1
    return 2 * n**3 * k / (time.perf_counter() - t)


def speed(args: argparse.Namespace) -> dict:
    """Interleaved rounds of (ours fp32, Trainer, ours bf16) per model; the best of each is kept.

    Both sides are timed from their first training step to the end of their last (ours: the loop's
    ``device_s``; Trainer: a callback at its first ``on_step_begin`` to ``on_train_end``), so neither
    pays for model construction or Trainer set-up. Ours with ``autocast="off"`` is fp32 throughout (fused
    fp32 head); ``autocast="bf16"`` is what ``auto`` picks on CPUs with native bf16 (see
    ``curate.instrument.device.cpu_has_native_bf16``). MFU divides by the matmul peak of the precision used.
    """
    import torch

    from curate.instrument.device import cpu_has_native_bf16
    from curate.instrument.model_config import ModelConfig
    from curate.instrument.train import Run
    from curate.instrument.train_config import TrainConfig

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    data = rng.integers(1, 8192, size=2_000_000).astype(np.uint16)  # tokens/s does not depend on content
    seq, ours_bs = 256, 16
    peak = {"fp32": matmul_peak(threads, "float32"), "bf16": matmul_peak(threads, "bfloat16")}
    res: dict = {
        "threads": threads,
        "matmul_peak_gflops": {k: v / 1e9 for k, v in peak.items()},
        "cpu_has_native_bf16": cpu_has_native_bf16(),
        "seq_len": seq,
        "runs": {},
    }
    for name in args.speed_models:
        mc = ModelConfig.named(name, vocab_size=8192, seq_len=seq)
        tokens = args.speed_tokens
        row: dict = {"params": mc.param_counts()["params"], "flops_per_token": mc.flops_per_token()}
        best: dict[str, float] = {"ours_fp32": 0.0, "trainer": 0.0, "ours_bf16": 0.0, "trainer_bf16": 0.0}
        for rnd in range(args.rounds):
            for mode in ("fp32", "trainer", "bf16", "trainer_bf16"):
                out = Path(args.out) / "speed" / f"{name}_{mode}_{rnd}"
                shutil.rmtree(out, ignore_errors=True)
                if mode.startswith("trainer"):
                    tok_s = _hf_trainer_tok_s(mc, data, seq, tokens, out, bf16=mode == "trainer_bf16")
                    best[mode] = max(best[mode], tok_s)
                    continue
                cfg = TrainConfig(
                    model=name,
                    seq_len=seq,
                    tokens=tokens,
                    batch_size=ours_bs,
                    n_evals=1,
                    ckpt_every=10**9,
                    log_every=10**9,
                    autocast="bf16" if mode == "bf16" else "off",
                    threads=threads,
                )
                r = Run(cfg, train_tokens=data, eval_sets=[], vocab_size=8192, out_dir=out).train()
                best[f"ours_{mode}"] = max(best[f"ours_{mode}"], r["tokens"] / r["device_s"])
        row.update({f"{k}_tok_s": v for k, v in best.items()})
        row["speedup_fp32"] = row["ours_fp32_tok_s"] / row["trainer_tok_s"]
        row["speedup_bf16"] = row["ours_bf16_tok_s"] / row["trainer_tok_s"]
        row["speedup_bf16_vs_trainer_bf16"] = row["ours_bf16_tok_s"] / row["trainer_bf16_tok_s"]
        for k, prec in (
            ("ours_fp32", "fp32"),
            ("ours_bf16", "bf16"),
            ("trainer", "fp32"),
            ("trainer_bf16", "bf16"),
        ):
            row[f"{k}_mfu"] = row[f"{k}_tok_s"] * row["flops_per_token"] / peak[prec]
        res["runs"][name] = row
        logging.info("%s: %s", name, row)
    lines = [
        "| model | params | ours fp32 tok/s | ours bf16 tok/s | Trainer tok/s | Trainer bf16=True tok/s "
        "| fp32 / Trainer | bf16 / Trainer | bf16 / Trainer bf16 | MFU fp32 / bf16 / Trainer / Trainer bf16 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, r in res["runs"].items():
        lines.append(
            f"| {name} | {r['params'] / 1e6:.2f}M | {r['ours_fp32_tok_s']:,.0f} | {r['ours_bf16_tok_s']:,.0f} "
            f"| {r['trainer_tok_s']:,.0f} | {r['trainer_bf16_tok_s']:,.0f} | {r['speedup_fp32']:.2f}x "
            f"| {r['speedup_bf16']:.2f}x | {r['speedup_bf16_vs_trainer_bf16']:.2f}x "
            f"| {r['ours_fp32_mfu']:.0%} / {r['ours_bf16_mfu']:.0%} / {r['trainer_mfu']:.0%} "
            f"/ {r['trainer_bf16_mfu']:.0%} |"
        )
    res["table"] = "\n".join(lines)
    logging.info(
        "matmul peak fp32 %.1f / bf16 %.1f GFLOP/s\n%s", peak["fp32"] / 1e9, peak["bf16"] / 1e9, res["table"]
    )
    return res


def _hf_trainer_tok_s(mc, data: np.ndarray, seq: int, tokens: int, out: Path, *, bf16: bool = False) -> float:
    """``transformers.Trainer`` with default TrainingArguments (batch 8, fused AdamW, fp32 on CPU; with
    ``bf16``, the one change ``bf16=True``: CPU autocast), timed from its first step to the end of
    training."""
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    torch.manual_seed(0)
    model = mc.build_reference()  # transformers.Trainer needs a PreTrainedModel (labels, loss)
    n = tokens // seq
    chunks = data[: n * seq].astype(np.int64).reshape(n, seq)

    class DS(torch.utils.data.Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            x = torch.from_numpy(chunks[i])
            return {"input_ids": x, "labels": x}

    class Clock(TrainerCallback):
        start: float | None = None
        end: float | None = None

        def on_step_begin(self, args, state, control, **kw):
            if self.start is None:
                self.start = time.perf_counter()

        def on_train_end(self, args, state, control, **kw):
            self.end = time.perf_counter()

    targs = TrainingArguments(
        output_dir=str(out),
        num_train_epochs=1,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        bf16=bf16,
    )
    clock = Clock()
    trainer = Trainer(model=model, args=targs, train_dataset=DS(), callbacks=[clock])
    trainer.train()
    assert clock.start is not None
    assert clock.end is not None
    return n * seq / (clock.end - clock.start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=["experiment", "speed", "demo", "all"], default="all")
    p.add_argument("--out", default="runs/bench_proxy")
    p.add_argument("--blogs", type=int, default=4000, help="blogs.jsonl.gz posts taken (the file has 43,050)")
    p.add_argument("--model", default="proxy_tiny")
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--budget", type=int, default=300_000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--eval-chars", type=int, default=40_000)
    p.add_argument("--speed-models", nargs="+", default=["proxy_tiny", "proxy_1m"])
    p.add_argument("--speed-tokens", type=int, default=32_768)
    p.add_argument("--rounds", type=int, default=2, help="interleaved speed rounds; the best of each is kept")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import torch
    import transformers

    result: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "load_avg_at_start": os.getloadavg(),
        "cmd": " ".join(sys.argv),
    }
    if args.part in ("speed", "all"):
        result["speed"] = speed(args)
    if args.part in ("experiment", "all"):
        result["experiment"] = experiment(args)
    if args.part == "demo":
        result["demo"] = demo(args)
    result["load_avg_at_end"] = os.getloadavg()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"bench_proxy_{args.part}.json").write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
