"""The ``curate mix RUN`` verb: the mixture search over a finished run's sources (:mod:`curate.proxy.design.mix`)."""

from __future__ import annotations

import argparse
from typing import Any

MIX_EXAMPLE = """example:
  curate mix runs/web                          # the run's proxy.mix section (or its defaults)
  curate mix runs/web --spec mix.yaml --engine inline
  curate mix runs/web --set mix.dirichlet=16 --set mix.confirm_seeds=5
mix.yaml holds the proxy.mix mapping, e.g.
  by: source
  dirichlet: 12
  max_epochs: 4
  rungs: [{budget: 98304, seeds: 1}]
Trains the natural mixture of the run's sources, Dirichlet draws around it and each source alone, fits
a regression from weights to the headline bpb, confirms the predicted best on fresh seeds against the
natural mixture and writes mix.json (docs/mixtures.md). `curate export` writes shards at the chosen
weights with `export: {mixture: search}`.
"""


def format_table(result: dict[str, Any]) -> str:
    """Each mixture's weights, epochs and measured / predicted bpb, then the choice and its confirmation."""

    def f(x: Any, d: int = 3) -> str:
        return "—" if x is None else f"{x:.{d}f}"

    srcs = [s["name"] for s in result["sources"]]
    head = (
        f"{'mixture':<14}" + "".join(f" {s[:10]:>10}" for s in srcs) + f" {'max ep':>7} {'bpb':>7} {'loo':>7}"
    )
    lines = [f"mixtures over {result['by']} (horizon {result['horizon']} tokens)", head]
    for n, r in result["mixtures"].items():
        bpb = r["measured_bpb"].get("rung0")
        lines.append(
            f"{n[:14]:<14}"
            + "".join(f" {r['weights'][s]:>10.3f}" for s in srcs)
            + f" {r['max_epochs']:>7.2f} {f(bpb):>7} {f(r.get('loo_predicted_bpb')):>7}"
        )
    rg = result["regression"]
    sp = rg["spearman"]
    lines.append(
        f"regression ({rg['model']}): Spearman of held-out predictions {f(sp['value'], 2)} "
        f"[{f(sp['ci'][0], 2)}, {f(sp['ci'][1], 2)}] over {rg['held_out']} mixtures"
    )
    c = result["chosen"]
    lines.append(f"chosen {c['name']}: " + ", ".join(f"{s} {c['weights'][s]:.3f}" for s in srcs))
    conf = result["confirmation"]
    for n in ("chosen", "best-single"):
        if n in conf:
            m = conf[n]["multiplier"]
            lines.append(
                f"{n} vs natural on seeds {conf['seeds']}: multiplier {f(m['value'], 2)} "
                f"[{f(m['ci_low'], 2)}, {f(m['ci_high'], 2)}] with its sources repeated as at the horizon "
                f"(Muennighoff's fit: {conf[n]['muennighoff_factor']:.3f}, not applied), {conf[n]['call']}"
            )
    vs = conf.get("chosen_vs_best_single")
    if vs:
        m, d = vs["multiplier"], vs["diff_bpb"]
        lines.append(
            f"chosen over the best single source ({conf['best-single'].get('source')}): multiplier "
            f"{f(m['value'], 2)} [{f(m['ci_low'], 2)}, {f(m['ci_high'], 2)}], paired bpb difference "
            f"{f(d['value'], 4)} [{f(d['ci_low'], 4)}, {f(d['ci_high'], 4)}], {vs['call']}"
        )
    lines.append(f"{conf['verdict']}")
    lines.append(f"cost: {result['cost']['runs']} proxy runs, {result['cost']['device_s']:.0f} device-s")
    return "\n".join(lines)


def _mix(args: argparse.Namespace) -> int:
    from curate.proxy.cli import run_spec_verb
    from curate.proxy.design.mix import run_mix

    result, run_dir = run_spec_verb(
        args, "mix", lambda ctx, section: run_mix(ctx, section.mix), required=False
    )
    print(format_table(result))
    print(f"mix: {run_dir / 'mix.json'}")
    return 0


def register(subparsers: Any) -> None:
    """Add the ``mix`` verb to the main CLI."""
    from curate.proxy.cli import _run_args

    m = subparsers.add_parser(
        "mix",
        help="choose source mixture weights by proxy runs and a regression (mix.json)",
        epilog=MIX_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _run_args(m)
    m.add_argument("--spec", help="a YAML file with the proxy.mix mapping (default: the run's own)")
    m.set_defaults(func=_mix)
