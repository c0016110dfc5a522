"""``curate proxy RUN_DIR``: run (or resume) the proxy phase on a finished run directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curate.goodput.schema import Goodput
    from curate.pipeline.keys import Keys
    from curate.proxy.spec.config import ProxyConfig

EXAMPLE = """example:
  curate proxy runs/demo
  curate proxy runs/web --set budget=1000000 --set seeds=5 --set model=proxy_1m
  curate proxy runs/web --section proxy.yaml --engine inline
The section is the run's own `proxy:` mapping (from manifest.json) unless --section names a YAML file;
--set overrides its keys by dotted path (values parsed as YAML; list items by index), e.g.
--set train.lr=0.001 --set ladder.0.seeds=5.
Finished runs are reused; goodput.json is rewritten.
"""


def _controls(g: Goodput) -> set[str]:
    return set(g.controls.checks) | {r for r, v in g.recipes.items() if v.role == "control"}


def format_recipes(goodput: Goodput | dict[str, Any]) -> str:
    """goodput.json's recipes as a terminal table: multiplier [CI] (``[no CI]`` with one seed), yield,
    goodput, then the ranking (controls marked), the Holm-adjusted calls and the ladder's agreement."""
    from curate.goodput.calls import fmt_multiplier
    from curate.goodput.schema import as_goodput

    g = as_goodput(goodput)
    controls = _controls(g)

    def name_of(r: str) -> str:
        return f"{r} (control)" if r in controls else r

    lines = [f"{'recipe':<20} {'multiplier [CI]':<26} {'yield':>7} {'goodput':>8}"]
    for name, r in g.recipes.items():
        m = r.multiplier
        if m.value is None:
            ci = "n/a"
        elif m.ci_low is None or m.ci_high is None:  # one seed: no interval
            ci = f"{fmt_multiplier(m, digits=3)} [no CI]"
        else:
            ci = f"{fmt_multiplier(m, digits=3)} [{fmt_multiplier(m, 'ci_low', 3)}, {fmt_multiplier(m, 'ci_high', 3)}]"
        ci += "*" if m.extrapolated else ""  # reports from before the measured curve
        gp = r.goodput.value
        gtext = "None" if gp is None else f"{r.goodput.bounds.value or ''}{round(gp, 3)}"
        lines.append(f"{name_of(name):<20} {ci:<26} {r.yield_:>7.3f} {gtext:>8}")
    if g.baseline_curve.range:
        lo, hi = g.baseline_curve.range
        lines.append(
            f"multipliers measured on {g.baseline}'s finished runs from {lo:g}x to {hi:g}x T; '>'/'<': beyond"
        )
    tiers = " > ".join(" = ".join(name_of(x) for x in t) for t in g.ranking.tiers)
    lines.append(f"ranking (a pair called only where its own paired interval excludes 0): {tiers}")
    mc = g.multiple_comparisons
    if mc.pairs:
        calls = ", ".join(
            f"{r} {c.call}" + (f" (p_holm {c.p_holm:.3g})" if c.p_holm is not None else "")
            for r, c in mc.pairs.items()
        )
        lines.append(f"vs {g.baseline}, {mc.method if mc.has('method') else 'Holm'}-adjusted: {calls}")
    da = g.ladder.decision_agreement
    if da.value is not None:
        lines.append(f"decision agreement across finished ladder points (controls out): {da.value:.2f}")
    return "\n".join(lines)


def _effect_call(b: dict[str, Any]) -> str:
    """An effect interval's own call (:func:`curate.goodput.calls.ratio_call`): ``pays`` (all of it above
    1), ``costs`` (all below), else ``not called``."""
    from curate.goodput.calls import ratio_call

    return ratio_call(b.get("ci_low"), b.get("ci_high")).replace("_", " ")


def format_ablation(ab: dict[str, Any]) -> str:
    """``curate ablate``'s table: per stage, the paired bpb difference and the multiplier effect with its
    call (per training token), then the goodput effect with its own call (per raw token). The two may
    differ: a stage that does not change the loss per token can still cost raw tokens through yield."""

    def ci(b: dict[str, Any], fmt: str = ".3f") -> str:
        if b.get("value") is None:
            return "n/a"
        lo, hi = (("—" if b.get(k) is None else format(b[k], fmt)) for k in ("ci_low", "ci_high"))
        return f"{b['value']:{fmt}} [{lo}, {hi}]"

    pt = {"pays": "pays", "costs": "costs", "not_called": "not called"}
    lines = [
        f"leave-one-stage-out vs {ab['subject']} (baseline {ab['baseline']}; {ab['point']['model']}, "
        f"{ab['point']['budget']} tokens, {len(ab['point']['seeds'])} seeds); effect = with / without the stage",
        "per training token: the paired bpb difference and the multiplier effect (called where the difference's "
        "interval excludes 0); per raw token: goodput effect = yield ratio x multiplier effect (called where "
        "its interval excludes 1)",
        f"{'stage':<26} {'removed':>8} {'d bpb (with-without) [CI]':>34} {'multiplier effect [CI]':>24} "
        f"{'per token':>10} {'goodput effect [CI]':>24} {'per raw token':>13}",
    ]
    for stage, e in ab["stages"].items():
        lines.append(
            f"{stage:<26} {e['removed_docs']:>8,} {ci(e['diff_bpb_with_minus_without'], '+.4f'):>34} "
            f"{ci(e['multiplier_effect']):>24} {pt.get(e['call'], e['call']):>10} {ci(e['goodput_effect']):>24} "
            f"{_effect_call(e['goodput_effect']):>13}"
        )
    for stage, why in ab["skipped"].items():
        lines.append(f"{stage:<26} {0:>8}  skipped: {why}")
    return "\n".join(lines)


def _handler(args: argparse.Namespace) -> int:
    from curate.core.engine import make_engine
    from curate.goodput.schema import load
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
    print(format_recipes(load(run_dir / "goodput.json")))
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


def _section_of(args: argparse.Namespace, config: dict[str, Any]) -> ProxyConfig:
    """The run's ``proxy:`` section (or ``--section``'s) with ``--set`` applied, parsed once by the
    registered class of the section."""
    return _parse(*_raw_section(args, config))


def _parse(section: dict[str, Any], written: dict[Keys, str]) -> ProxyConfig:
    """The section as :class:`ProxyConfig`; an error in a value a ``--set`` wrote names that ``--set``
    (``written``: :func:`curate.pipeline.keys.apply_overrides`'s), any other the key's path."""
    from curate.core.errors import ConfigError
    from curate.pipeline.keys import blamed
    from curate.proxy.spec.config import ProxyConfig, ProxyConfigError

    try:
        return ProxyConfig.parse(section)
    except ProxyConfigError as e:
        by_set = blamed(e.keys, e.detail, written)
        if by_set is None:
            raise
        raise ConfigError(by_set) from None


def _raw_section(args: argparse.Namespace, config: dict[str, Any]) -> tuple[dict[str, Any], dict[Keys, str]]:
    """The run's ``proxy:`` mapping (or ``--section``'s) with each ``--set KEY=VALUE`` applied relative to
    it by the pipeline's own override parser (:func:`curate.pipeline.keys.apply_overrides`: values read as
    YAML, list items by index), and the key paths the overrides wrote."""
    import yaml

    from curate.pipeline.keys import apply_overrides

    if args.section:
        section = yaml.safe_load(Path(args.section).read_text()) or {}
        section = section.get("proxy", section)
    else:
        section = dict(config.get("proxy") or {})
    written: dict[Keys, str] = {}
    return apply_overrides(section, args.set or [], written), written


def _ablate(args: argparse.Namespace) -> int:
    from curate.core.engine import make_engine
    from curate.proxy.design.ablate import run_ablation
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
    print(format_ablation(ab))
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


def run_spec_verb(args: argparse.Namespace, key: str, run: Any, *, required: bool = True) -> tuple[Any, Path]:
    """A follow-up verb on a finished run (``curate search``, ``curate mix``): the run's proxy section with
    its ``key`` mapping (from ``--spec FILE`` when given), parsed, then ``run(ctx, section)`` on an engine
    shut down after. Returns what ``run`` returned and the run directory."""
    import yaml

    from curate.core.engine import make_engine
    from curate.core.errors import PhaseError
    from curate.runtime.context import RunContext, load_manifest

    run_dir = Path(args.run_dir)
    manifest = load_manifest(run_dir)
    config = manifest.get("config") or {}
    raw, written = _raw_section(args, config)
    if args.spec:
        spec_raw = yaml.safe_load(Path(args.spec).read_text()) or {}
        raw[key] = spec_raw.get(key, spec_raw)
    if required and key not in raw:
        raise PhaseError(f"{key}: {run_dir}'s proxy section has no {key}: mapping; give --spec FILE")
    raw.setdefault(key, {})
    section = _parse(raw, written)
    engine = make_engine(args.engine, progress=True)
    try:
        ctx = RunContext(
            run_dir=run_dir,
            config=config,
            engine=engine,
            manifest=manifest,
            section=section,
            pipeline_path=manifest.get("pipeline"),
        )
        return run(ctx, section), run_dir
    finally:
        engine.shutdown()


def _search(args: argparse.Namespace) -> int:
    from curate.proxy.design.search import format_table, run_search

    result, run_dir = run_spec_verb(args, "search", lambda ctx, section: run_search(ctx, section.search))
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
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a proxy key by dotted path (list items by index: ladder.0.seeds=5)",
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
