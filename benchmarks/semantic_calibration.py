"""semantic_dedup_v1's default thresholds, one per embedder: the curve they are read from.

    python benchmarks/semantic_calibration.py [--model all-MiniLM-L6-v2|wordllama-l2-supercat|DIR]
        [--variant as-is|unsorted|bf16|onnx|onnx-int8] [--pairs N] [--json PATH]

Calibration set (``_reuse.hppt_pairs``, never evaluation data): ACL abstracts and their
ChatGPT/LLaMA-polished versions (positives), and the distinct human abstracts, all from one field
(negatives: same topic, different documents). Per threshold: *caught* = polished versions whose cosine
with their original is >= the threshold; *same-topic removed* = distinct abstracts whose cosine with an
earlier abstract is >= it (what the stage would remove from them). The default is the highest
threshold on the 0.05 grid that still catches >= 97% of the positives (``RULE``): as far above the
same-topic cosines as the positives allow. Prints the curve as a markdown table, and the embedding's
CPU seconds (one thread) for the calibration texts.

``--variant`` runs an encoder another way, to measure it (the stage runs ``as-is``): ``unsorted``,
batches in input order (the stage's encoder before it sorted batches by token length); ``bf16``,
under ``torch.autocast`` bfloat16; ``onnx`` / ``onnx-int8``, the encoder exported with
``torch.onnx.export`` (dynamo) and run by ONNX Runtime, as it is or with int8 weights
(``quantize_dynamic``). The last two need ``onnxruntime``, ``onnx``, ``onnxscript`` and ``onnx-ir``,
which ``curate`` does not install. ``--json`` writes the curve, the rule's default and the speed.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

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
VARIANTS = ("as-is", "unsorted", "bf16", "onnx", "onnx-int8")


def embedder(model: str | None, variant: str = "as-is") -> Any:
    """The stage's embedder for ``model``, or an encoder run as ``variant`` (module docstring)."""
    if _embed.kind(model) == "encoder":
        import torch

        torch.set_num_threads(1)
    if variant == "as-is":
        return _embed.embedder(model=model, dim=256, buckets=16384, seed=0)
    if _embed.kind(model) != "encoder":
        raise SystemExit(f"--variant {variant} runs an encoder; --model {model!r} is not one")
    assert model is not None
    path = _embed.resolve_model(model)
    if variant == "unsorted":
        return Unsorted(path)
    return Variant(path, variant)


class Unsorted(_embed.HfEmbedder):
    """The stage's encoder as it was before batches were sorted by token length (input order)."""

    def __call__(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        values = [t or "" for t in texts.to_pylist()]
        out = []
        with self.torch.no_grad():
            for i in range(0, len(values), self.batch_size):
                enc = self.tokenizer(
                    values[i : i + self.batch_size],
                    padding=True,
                    truncation=True,
                    max_length=self.max_tokens,
                    return_tensors="pt",
                )
                states = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
                out.append(((states * mask).sum(1) / mask.sum(1).clamp(min=1)).float().numpy())
        return _embed.normalize(np.concatenate(out) if out else np.zeros((0, 1), np.float32))


class Variant(_embed.HfEmbedder):
    """The stage's encoder (batches sorted by length, mean pooling) with another forward pass."""

    def __init__(self, path: str, variant: str) -> None:
        super().__init__(path)
        self.variant = variant
        if variant.startswith("onnx"):
            self.session = onnx_session(path, int8=variant == "onnx-int8")

    def hidden_states(self, batch: Any) -> Any:
        torch = self.torch
        if self.variant == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.model(**batch).last_hidden_state.float()
        feed = {i.name: batch[i.name].numpy() for i in self.session.get_inputs()}
        return torch.from_numpy(self.session.run(None, feed)[0])


def onnx_session(path: str, *, int8: bool) -> Any:
    """ONNX Runtime session of the encoder at ``path`` (exported here; one thread)."""
    import tempfile

    import onnxruntime as ort
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(path, local_files_only=True, attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.long)
    mask = ids.clone()
    mask[1, 5:] = 0  # a padded example: traced without padding, the mask is folded away
    b, s = torch.export.Dim("batch"), torch.export.Dim("seq", max=512)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, "encoder.onnx")
    torch.onnx.export(
        Hidden(), (ids, mask, torch.zeros_like(ids)), None, input_names=names, output_names=["hidden"],
        dynamic_shapes={n: {0: b, 1: s} for n in names}, dynamo=True, optimize=True, verbose=False,
    ).save(out)  # fmt: skip
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(out, os.path.join(tmp, "int8.onnx"), weight_type=QuantType.QInt8)
        out = os.path.join(tmp, "int8.onnx")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    return ort.InferenceSession(out, opts, providers=["CPUExecutionProvider"])


def earliest_max(x: np.ndarray, block: int = 1024) -> np.ndarray:
    """Per row: its highest cosine with an earlier row (-1 for the first)."""
    out = np.full(len(x), -1.0, np.float32)
    for lo in range(0, len(x), block):
        sims = x[lo : lo + block] @ x.T
        rows = np.arange(lo, min(len(x), lo + block))
        sims[np.arange(len(x))[None, :] >= rows[:, None]] = -1
        out[lo : lo + len(rows)] = sims.max(axis=1)
    return out


def curve(model: str | None, pairs: int | None, variant: str = "as-is") -> dict[str, Any]:
    pos_pairs, humans = hppt_pairs(CORPORA)
    pos_pairs, humans = pos_pairs[:pairs], humans[: pairs and 2 * pairs]
    emb = embedder(model, variant)
    t0, w0 = time.process_time(), time.perf_counter()
    a = emb(pa.array([p[0] for p in pos_pairs]))
    b = emb(pa.array([p[1] for p in pos_pairs]))
    h = emb(pa.array(humans))
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    pos, neg = (a * b).sum(axis=1), earliest_max(h)
    name = (model or "hashed") + ("" if variant == "as-is" else f" [{variant}]")
    texts = len(pos) * 2 + len(h)
    print(
        f"\n{name}: {len(pos)} polished pairs, {len(h)} distinct abstracts; embedded {texts} "
        f"texts in {cpu:.1f} CPU s ({texts / cpu:,.1f} per CPU s, {wall:.1f} s wall); positive cosines p5/p50 "
        f"{np.percentile(pos, 5):.3f}/{np.median(pos):.3f}; same-topic nearest-earlier p99/max "
        f"{np.percentile(neg, 99):.3f}/{neg.max():.3f}"
    )
    print("| threshold | polished caught | same-topic removed |\n| --- | --- | --- |")
    best, rows = float(GRID[0]), []
    for t in GRID:
        caught, removed = (pos >= t).mean(), (neg >= t).mean()
        if caught >= RULE:
            best = float(t)
        rows.append(
            {"threshold": float(t), "caught": int((pos >= t).sum()), "removed": int((neg >= t).sum())}
        )
        print(f"| {t:.2f} | {caught:.1%} | {removed:.2%} |")
    print(f"{name}: default by the rule (highest threshold catching >= {RULE:.1%}): {best:.2f}")
    return {
        "embedder": name,
        "positives": len(pos),
        "negatives": len(h),
        "curve": rows,
        "rule_default": best,
        "embed_texts": texts,
        "embed_cpu_s": round(cpu, 2),
        "embed_wall_s": round(wall, 2),
        "positive_cosines": [round(float(x), 5) for x in pos],
        "negative_nearest_earlier": [round(float(x), 5) for x in neg],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--model", default=None, help="a local encoder directory or a packaged name; unset: hashed"
    )
    ap.add_argument("--variant", choices=VARIANTS, default="as-is", help="run an encoder another way")
    ap.add_argument("--pairs", type=int, default=None, help="use the first N pairs (default: all)")
    ap.add_argument("--json", default=None, help="write the curve, the default and the speed here")
    args = ap.parse_args()
    load_before = os.getloadavg()
    print(f"machine: {machine()}; load before: {load_before}")
    result = curve(args.model, args.pairs, args.variant)
    shipped = _embed.default_threshold(args.model)
    print(
        f"shipped default: {shipped}; {'matches' if abs(result['rule_default'] - shipped) < 1e-9 else 'DIFFERS from'} "
        "the rule"
    )
    if args.json:
        result.update(
            shipped_default=shipped, machine=machine(), load_before=load_before, load_after=os.getloadavg()
        )
        Path(args.json).write_text(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
