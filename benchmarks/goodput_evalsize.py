"""Does a larger text eval set lower the seed-to-seed noise of a paired difference?

    python benchmarks/goodput_evalsize.py RUN_DIR [--runs proxy/sweep/NAME] [--chars 60000 240000 465000]

The finished models of a proxy phase (``RUNS/<recipe>/seed<k>/model``: every recipe but the baseline,
whose finished runs are cool-down branches of a trunk and keep no model) are scored again on each text eval
set of the run's ``proxy:`` section cut at each ``--chars`` (documents in order, the last one cut, as the
phase cuts them), with the run's own tokenizer. Per size: every model's bpb, and the residual sd of the
recipes x seeds table (two-way: recipe and seed effects removed, df (R-1)(S-1)) -- the sd that a paired
difference between two of these recipes has. The eval set is shared by every model, so its size changes
this sd only through the model x text interaction: the part of a run's endpoint noise that is about which
particular text it was scored on. Output: JSON to stdout and ``RUNS/evalsize.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def residual_sd(table: np.ndarray) -> tuple[float, int]:
    """Residual sd of a recipes x seeds table after removing row and column means; df (R-1)(S-1)."""
    r, s = table.shape
    resid = table - table.mean(1, keepdims=True) - table.mean(0, keepdims=True) + table.mean()
    dof = (r - 1) * (s - 1)
    return float(np.sqrt((resid**2).sum() / dof)), dof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--runs", default="proxy", help="the runs' folder, relative to RUN_DIR")
    ap.add_argument("--chars", type=int, nargs="+", default=[60_000, 120_000, 240_000, 465_000])
    args = ap.parse_args()

    import torch
    from transformers import LlamaForCausalLM

    from curate.core.engine import make_engine
    from curate.instrument import evalsets
    from curate.instrument.evaluate import EvalSet, bpb
    from curate.instrument.shards import read_shard, write_shard
    from curate.instrument.tokenizer import ProxyTokenizer
    from curate.proxy.spec.config import parse
    from curate.runtime.context import RunContext, load_manifest

    torch.set_num_threads(1)
    manifest = load_manifest(args.run_dir)
    section = (manifest.get("config") or {}).get("proxy") or {}
    cfg = parse(section)
    seq_len = cfg.train_config(0).seq_len
    tok = ProxyTokenizer.load(args.run_dir / "proxy" / "tokenizer.json")
    runs = args.run_dir / args.runs
    models = sorted(p for p in runs.glob("*/seed*/model") if p.is_dir())
    recipes = sorted({p.parent.parent.name for p in models})
    seeds = sorted({p.parent.name for p in models})
    if len(recipes) < 2 or len(seeds) < 2:
        raise SystemExit(
            f"{runs}: need >= 2 recipes x >= 2 seeds of finished models, found {recipes} x {seeds}"
        )
    engine = make_engine("inline", progress=False)
    ctx = RunContext(
        run_dir=args.run_dir,
        config=manifest.get("config") or {},
        engine=engine,
        manifest=manifest,
        section=cfg,
    )
    text_specs = [e for e in cfg.eval if e.kind == "text" or e.kind == "heldout"]
    out: dict[str, Any] = {"runs": str(runs), "recipes": recipes, "seeds": seeds, "sets": {}}
    loaded = {p: LlamaForCausalLM.from_pretrained(p).eval() for p in models}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in text_specs:
            rows = []
            for n_chars in args.chars:
                data = evalsets.load(ctx, [spec], n_chars)[0]
                prefix = Path(tmp) / f"{spec.name}-{n_chars}"
                meta = write_shard(data.texts, prefix, tok)
                toks, _, _ = read_shard(prefix)
                es = EvalSet.from_shard(spec.name, toks, meta["bytes"], eos_id=tok.eos_id, seq_len=seq_len)
                table = np.array(
                    [[bpb(loaded[runs / r / s / "model"], es) for s in seeds] for r in recipes],
                    dtype=np.float64,
                )
                sd, dof = residual_sd(table)
                rows.append(
                    {
                        "chars": sum(len(t) for t in data.texts),
                        "tokens": int(meta["tokens"]),
                        "docs": len(data.texts),
                        "bpb": table.tolist(),
                        "recipe_means": table.mean(1).tolist(),
                        "residual_sd": sd,
                        "sd_of_paired_diff": sd * np.sqrt(2),
                        "dof": dof,
                    }
                )
                print(
                    f"{spec.name} @ {rows[-1]['chars']:,} chars ({rows[-1]['tokens']:,} tokens): residual sd "
                    f"{sd:.4f} bpb (paired diff {sd * np.sqrt(2):.4f}, df {dof})",
                    flush=True,
                )
            out["sets"][spec.name] = rows
    (runs / "evalsize.json").write_text(json.dumps(out, indent=1))
    print(
        json.dumps(
            {k: [(r["chars"], round(r["sd_of_paired_diff"], 4)) for r in v] for k, v in out["sets"].items()}
        )
    )


if __name__ == "__main__":
    main()
