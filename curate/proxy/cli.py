"""``curate proxy RUN_DIR``: run (or resume) the proxy phase on a finished run directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EXAMPLE = """example:
  curate proxy runs/demo
  curate proxy runs/web --set budget=1000000 --set seeds=5 --set model=proxy_1m
  curate proxy runs/web --section proxy.yaml --engine inline
The section is the run's own `proxy:` mapping (from manifest.json) unless --section names a YAML file;
--set overrides its keys by dotted path (values parsed as YAML), e.g. --set train.lr=0.001.
Finished runs are reused; goodput.json is rewritten.
"""


def set_dotted(section: dict[str, Any], dotted: str) -> None:
    """``--set key.path=value``: the YAML value at that dotted path of the section (created as needed)."""
    import yaml

    if "=" not in dotted:
        raise SystemExit(f"--set {dotted!r}: expected key=value")
    key, value = dotted.split("=", 1)
    node = section
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = yaml.safe_load(value)


def format_recipes(g: dict[str, Any]) -> str:
    """goodput.json's recipes as a terminal table: multiplier [CI] (``[no CI]`` with one seed), yield,
    goodput, then the ranking."""
    from curate.proxy.analysis import fmt_multiplier

    lines = [f"{'recipe':<20} {'multiplier [CI]':<26} {'yield':>7} {'goodput':>8}"]
    for name, r in g["recipes"].items():
        m = r["multiplier"]
        if m["value"] is None:
            ci = "n/a"
        elif m.get("ci_low") is None or m.get("ci_high") is None:  # one seed: no interval
            ci = f"{fmt_multiplier(m, digits=3)} [no CI]"
        else:
            ci = f"{fmt_multiplier(m, digits=3)} [{fmt_multiplier(m, 'ci_low', 3)}, {fmt_multiplier(m, 'ci_high', 3)}]"
        ci += "*" if m.get("extrapolated") else ""  # reports from before the measured curve
        gp = r["goodput"]["value"]
        lines.append(f"{name:<20} {ci:<26} {r['yield']:>7.3f} {gp if gp is None else round(gp, 3)!s:>8}")
    lo, hi = (g.get("baseline_curve") or {}).get("range") or (None, None)
    if lo is not None:
        lines.append(
            f"multipliers measured on {g['baseline']}'s finished runs from {lo:g}x to {hi:g}x T; '>'/'<': beyond"
        )
    lines.append(
        f"ranking (called only where CIs separate): {g['ranking']['tiers']}; "
        f"decision agreement T/4 vs T: {g['decision_agreement']}"
    )
    return "\n".join(lines)


def _handler(args: argparse.Namespace) -> int:
    from curate.core.engine import make_engine
    from curate.proxy.phase import run_phase
    from curate.runtime.context import RunContext, load_manifest

    run_dir = Path(args.run_dir)
    manifest = load_manifest(run_dir)
    config = manifest.get("config") or {}
    section = _section_of(args, config)
    engine = make_engine(args.engine, progress=True)
    try:
        result = run_phase(
            RunContext(run_dir=run_dir, config=config, engine=engine, manifest=manifest, section=section)
        )
    finally:
        engine.shutdown()
    print(json.dumps(result, indent=1))
    print(format_recipes(json.loads((run_dir / "goodput.json").read_text())))
    return 0


ABLATE_EXAMPLE = """example:
  curate ablate runs/web
  curate ablate runs/web --set seeds=5 --engine inline
  curate ablate runs/web --stages pii_v1,semantic_dedup_v1
Trains, for every stage that rejected documents, the recipe kept/ + that stage's rejected rows
(without_<stage>) beside the baseline and the curated recipe, with the run's proxy settings (finished
runs in proxy/ are reused), and writes ablation.json: each stage's paired effect on the multiplier and
on data goodput, with CIs (docs/goodput.md, "Per-stage attribution").
"""


def _section_of(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    """The run's ``proxy:`` section (or ``--section``'s) with ``--set`` applied, parsed once by the
    registered parser of the section."""
    return _parse(_raw_section(args, config))


def _parse(section: dict[str, Any]) -> Any:
    from curate.proxy.config import parse_section

    return parse_section(section)


def _raw_section(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, Any]:
    import yaml

    if args.section:
        section = yaml.safe_load(Path(args.section).read_text()) or {}
        section = section.get("proxy", section)
    else:
        section = dict(config.get("proxy") or {})
    for s in args.set or []:
        set_dotted(section, s)
    return section


def _ablate(args: argparse.Namespace) -> int:
    from curate.core.engine import make_engine
    from curate.proxy.ablate import format_table, run_ablation
    from curate.runtime.context import RunContext, load_manifest

    run_dir = Path(args.run_dir)
    manifest = load_manifest(run_dir)
    config = manifest.get("config") or {}
    engine = make_engine(args.engine, progress=True)
    try:
        ab = run_ablation(
            RunContext(
                run_dir=run_dir,
                config=config,
                engine=engine,
                manifest=manifest,
                section=_section_of(args, config),
                pipeline_path=manifest.get("pipeline"),
            ),
            stages=args.stages.split(",") if args.stages else None,
        )
    finally:
        engine.shutdown()
    print(format_table(ab))
    print(f"ablation: {run_dir / 'ablation.json'}")
    return 0


SEARCH_EXAMPLE = """example:
  curate search runs/web                      # the run's proxy.search section
  curate search runs/web --spec search.yaml --engine inline
search.yaml holds the proxy.search mapping, e.g.
  columns: {dsir_v1.resample_key: {min_quantile: [0.5, 0.8, 0.9]}, gopher_quality_v1.word_count: {min: [50, 100]}}
  rungs: [{budget: 75000, seeds: 1}, {budget: 300000, seeds: 3}]
Successive halving over stored score columns (no model runs again), then the winner on fresh seeds;
writes search.json and search/winner.yaml (docs/goodput.md, "Recipe search").
"""


def _search(args: argparse.Namespace) -> int:
    import yaml

    from curate.core.engine import make_engine
    from curate.core.errors import PhaseError
    from curate.proxy.search import format_table, run_search
    from curate.runtime.context import RunContext, load_manifest

    run_dir = Path(args.run_dir)
    manifest = load_manifest(run_dir)
    config = manifest.get("config") or {}
    raw = _raw_section(args, config)
    if args.spec:
        spec_raw = yaml.safe_load(Path(args.spec).read_text()) or {}
        raw["search"] = spec_raw.get("search", spec_raw)
    if "search" not in raw:
        raise PhaseError(f"search: {run_dir}'s proxy section has no search: mapping; give --spec FILE")
    section = _parse(raw)
    spec = section.search
    engine = make_engine(args.engine, progress=True)
    try:
        result = run_search(
            RunContext(
                run_dir=run_dir,
                config=config,
                engine=engine,
                manifest=manifest,
                section=section,
                pipeline_path=manifest.get("pipeline"),
            ),
            spec,
        )
    finally:
        engine.shutdown()
    print(format_table(result))
    print(f"search: {run_dir / 'search.json'}")
    return 0


def _run_args(parser: argparse.ArgumentParser) -> None:
    """The arguments every proxy verb takes: the run directory, the proxy section and overrides, the engine."""
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished run directory (has manifest.json, kept/)"
    )
    parser.add_argument("--section", help="a YAML file with the proxy: mapping (default: the run's own)")
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a proxy key by dotted path"
    )
    parser.add_argument(
        "--engine", choices=["ray", "inline"], default="ray", help="execution engine (default ray)"
    )


def register(subparsers: Any) -> None:
    """Add the ``proxy``, ``ablate`` and ``search`` verbs to the main CLI."""
    s = subparsers.add_parser(
        "search",
        help="recipe search over stored score columns by successive halving (search.json)",
        epilog=SEARCH_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _run_args(s)
    s.add_argument("--spec", help="a YAML file with the proxy.search mapping (default: the run's own)")
    s.set_defaults(func=_search)
    a = subparsers.add_parser(
        "ablate",
        help="leave-one-stage-out proxy runs: which stage pays, which costs (ablation.json)",
        epilog=ABLATE_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _run_args(a)
    a.add_argument(
        "--stages",
        metavar="A,B",
        help="ablate only these stages (default: every stage that rejected documents)",
    )
    a.set_defaults(func=_ablate)
    p = subparsers.add_parser(
        "proxy",
        help="train proxy LMs on a run's recipes and write goodput.json",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _run_args(p)
    p.set_defaults(func=_handler)
