"""Golden measurements: a finished proxy phase recorded as the inputs of its analysis and the
``goodput.json`` they gave, so the analysis can be replayed on any later code and compared field by field.

What is recorded (one gzip JSON per measurement under ``tests/proxy/golden/``) is exactly what
:class:`curate.proxy.design.measure.Finished` holds once the runs are trained, which does not depend on how the
analysis is written: every run (its recipe, seed, ladder point, settings), its ``result.json`` and the eval
records of its ``metrics.jsonl``; each recipe's training-data record; the eval sets' descriptions; the
tokenizer's record; each recipe's stream shared with the baseline; the run's ``proxy:`` section and stage
costs; and the ``goodput.json`` the code of the day wrote from them.

Record a finished run (its proxy runs are reused, nothing trains)::

    python -m tests.proxy.golden RUN_DIR NAME      # -> tests/proxy/golden/NAME.json.gz

:func:`replay` rebuilds the runs' folders from a record and returns the ``goodput.json`` the current
code makes of them; :func:`differences` lists the fields where two reports differ (floats within 1e-9).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).with_name("golden")
FORMAT = 1


def _rel(path: str, root: Path) -> str:
    p = Path(path)
    return str(p.relative_to(root)) if p.is_absolute() and root in p.parents else path


def _eval_records(out_dir: Path) -> list[dict[str, Any]]:
    lines = (out_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in (json.loads(x) for x in lines) if r.get("type") == "eval"]


def record(run_dir: Path, name: str) -> Path:
    """Re-measure the finished run ``run_dir`` (every proxy run reused), capture what the analysis read
    and wrote, check it equals the run's own ``goodput.json``, and write ``golden/NAME.json.gz``."""
    from curate.core.engine import InlineEngine
    from curate.proxy.design import measure as m
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext, load_manifest

    run_dir = Path(run_dir).resolve()
    manifest = load_manifest(run_dir)
    section = (manifest.get("config") or {}).get("proxy") or {}
    captured: dict[str, Any] = {}
    real = m.analyse

    def capture(ctx: Any, cfg: Any, f: Any) -> Any:
        out = real(ctx, cfg, f)
        captured.update(finished=f, report=json.loads(json.dumps(out.report)), manifest=ctx.manifest)
        return out

    m.analyse = capture
    try:
        ctx = RunContext(
            run_dir=run_dir,
            config=manifest.get("config") or {},
            engine=InlineEngine(progress=False),
            manifest=manifest,
            section=parse_section(section),
            pipeline_path=manifest.get("pipeline"),
        )
        m.measure(ctx, m.Experiment(ctx.section, report="_golden_check.json"))
    finally:
        m.analyse = real
    (run_dir / "_golden_check.json").unlink()
    on_disk = json.loads((run_dir / "goodput.json").read_text())
    if differences(on_disk, captured["report"]):
        raise SystemExit(f"{run_dir}: re-measuring did not give the run's goodput.json; is the run finished?")
    f = captured["finished"]
    headline = set(parse_section(section).headline)
    rec = {
        "format": FORMAT,
        "name": name,
        "section": section,
        "stages": [
            {k: s.get(k) for k in ("name", "label", "cpu_s") if k in s}
            for s in captured["manifest"].get("stages") or []
        ],
        "runs": [
            {
                "item": {
                    k: v
                    for k, v in dataclasses.asdict(it).items()
                    if k not in ("remote", "train_prefix", "eval_prefixes", "choice_paths")
                }
                | {"out_dir": _rel(it.out_dir, run_dir)},
                "result": res,
                "evals": _eval_records(Path(it.out_dir)),
            }
            for it, res in zip(f.items, f.results, strict=True)
        ],
        "data": {
            "meta": f.data.meta,
            "recipes": [r.record() for r in f.data.recipes],
            "controlled": f.data.controlled,
            "skipped": f.data.skipped,
        },
        "evals": [
            {
                "spec": dataclasses.asdict(e.spec),
                "headline": e.name in headline,
                "describe": e.describe(e.name in headline),
            }
            for e in f.evals
        ],
        "grams_per_set": f.grams_per_set,
        "tokenizer": f.tokenizer,
        "shares": f.shares,
        "overlaps": f.overlaps,
        "held_out": f.held_out,
        "goodput": on_disk,
    }
    GOLDEN.mkdir(exist_ok=True)
    out = GOLDEN / f"{name}.json.gz"
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(rec, fh, default=_jsonable, separators=(",", ":"))
    return out


def _jsonable(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON: {type(x).__name__}")


def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rec: dict[str, Any] = json.load(fh)
    return rec


@dataclasses.dataclass
class _Eval:
    """A recorded eval set: its spec and the description the report took of it."""

    spec: Any
    headline: bool
    described: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def describe(self, headline: bool) -> dict[str, Any]:
        assert headline == self.headline, f"{self.name}: recorded as headline={self.headline}"
        return dict(self.described)


def _recipe(r: dict[str, Any]) -> Any:
    """A recorded recipe as its kind: records name the kind ``kind`` (or, older ones, ``source``)."""
    from curate.proxy.kinds import kind

    name = r.get("kind") or r["source"]
    fields = {"name": r["name"]}
    if r.get("rules") or r.get("select"):
        fields["select"] = r.get("select") or r["rules"]
    if r.get("without_stages"):
        fields["without_stages"] = r["without_stages"]
    if r.get("weights"):
        fields["weights"] = r["weights"]
    return kind(name)(**fields)


def replay(rec: dict[str, Any], root: Path) -> dict[str, Any]:
    """The ``goodput.json`` the current code makes of a record: the runs' folders rebuilt under ``root``
    (``metrics.jsonl`` with the recorded eval records), then the measurement's analysis."""
    from curate.core.engine import InlineEngine
    from curate.instrument.evalsets import EvalSpec
    from curate.instrument.runs import RunItem
    from curate.instrument.train_config import TrainConfig
    from curate.proxy.data.training import TrainingData
    from curate.proxy.design.measure import Finished, report_from_runs
    from curate.proxy.spec.config import parse_section
    from curate.runtime.context import RunContext

    items = []
    for run in rec["runs"]:
        it = dict(run["item"])
        out = root / it["out_dir"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run["evals"]))
        it.update(out_dir=str(out), train_prefix="", eval_prefixes={}, choice_paths={})
        it["train_cfg"] = TrainConfig(**it["train_cfg"])  # recorded as its fields (dataclasses.asdict)
        items.append(RunItem(**it))
    data = rec["data"]
    finished = Finished(
        items=items,
        results=[run["result"] for run in rec["runs"]],
        data=TrainingData(
            meta=data["meta"],
            recipes=[_recipe(r) for r in data["recipes"]],
            controlled=data["controlled"],
            skipped=data["skipped"],
        ),
        evals=[_Eval(EvalSpec(**e["spec"]), e["headline"], e["describe"]) for e in rec["evals"]],
        grams_per_set=rec["grams_per_set"],
        tokenizer=rec["tokenizer"],
        shares=rec["shares"],
        overlaps=rec["overlaps"],
        held_out=rec["held_out"],
    )
    ctx = RunContext(
        run_dir=root,
        config={"proxy": rec["section"]},
        engine=InlineEngine(progress=False),
        manifest={"stages": rec["stages"]},
        section=parse_section(rec["section"]),
    )
    out: dict[str, Any] = json.loads(json.dumps(report_from_runs(ctx, ctx.section, finished)))
    return out


def differences(want: Any, got: Any, path: str = "", tol: float = 1e-9) -> list[str]:
    """The dotted paths where ``got`` differs from ``want`` (floats within ``tol``, absolute or relative)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want if k not in got]
        out += [f"{path}.{k}: added" for k in got if k not in want]
        for k in want:
            if k in got:
                out += differences(want[k], got[k], f"{path}.{k}", tol)
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items, now {len(got)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(want, got, strict=True))
            for d in differences(a, b, f"{path}[{i}]", tol)
        ]
    if isinstance(want, float) and isinstance(got, float | int) and not isinstance(got, bool):
        if math.isnan(want) and math.isnan(got):
            return []
        if math.isclose(want, got, rel_tol=tol, abs_tol=tol):
            return []
        return [f"{path}: {want!r} -> {got!r}"]
    if want != got or type(want) is not type(got):
        if isinstance(want, int) and isinstance(got, float) and not isinstance(want, bool) and want == got:
            return []
        return [f"{path}: {want!r} -> {got!r}"]
    return []


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m tests.proxy.golden RUN_DIR NAME")
    print(record(Path(sys.argv[1]), sys.argv[2]))
