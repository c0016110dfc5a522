"""The ``curate mix RUN`` verb: the mixture search over a finished run's sources (:mod:`curate.proxy.design.mix`)."""

from __future__ import annotations

import argparse
from typing import Any

MIX_EXAMPLE = """example:
  curate mix runs/web                          # the run's proxy.mix section (or its defaults)
  curate mix runs/web --spec mix.yaml --engine inline
  curate mix runs/web --set mix.runs=64 --set mix.confirm_seeds=5
mix.yaml holds the proxy.mix mapping, e.g.
  by: source
  runs: 48
  max_epochs: 4
  rungs: [{budget: 49152, seeds: 1}]
Trains the natural mixture of the run's sources, mixtures spread over the whole simplex (sparse ones and
each source alone) cheaply at half the proxy budget, a third of them again on a second seed (the noise
ceiling), fits a regression from weights to the headline bpb (its held-out Spearman with a permutation
p-value), confirms the predicted best on fresh seeds against the natural mixture and writes mix.json
(docs/mixtures.md). `curate export` writes shards at the chosen weights with `export: {mixture: search}`
only when the confirmation called them better (or with --unconfirmed-mixture).
"""


TOP = 5  # measured mixtures listed beside the chosen, the natural and each source alone


def _f(x: Any, d: int = 3) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def _mult(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "—"
    b = m.get("bounds") or {}
    lo = "—" if m.get("ci_low") is None else f"{b.get('ci_low') or ''}{m['ci_low']:.2f}"
    hi = "—" if m.get("ci_high") is None else f"{b.get('ci_high') or ''}{m['ci_high']:.2f}"
    return f"{m['value']:.2f}x [{lo}, {hi}]"


def mixture_table(result: dict[str, Any]) -> list[str]:
    """The chosen mixture, the natural one, each source alone and the :data:`TOP` best measured others:
    a column per source's weight, then the largest epochs, rung 0's bpb and its held-out prediction."""
    srcs = [s["name"] for s in result["sources"]]
    rows = result["mixtures"]
    chosen = result["chosen"]["name"]

    def bpb(n: str) -> float | None:
        return (rows[n].get("measured_bpb") or {}).get("rung0")

    singles = [n for n in rows if n.startswith("only-")]
    others = sorted(
        (n for n in rows if n not in {chosen, "natural", *singles} and bpb(n) is not None),
        key=lambda n: (bpb(n), n),
    )
    shown = [chosen, "natural", *singles, *others[:TOP]]
    widths = [min(max(len(s), 6), 9) for s in srcs]  # a column per source, its name cut at 9 characters
    head = f"{'mixture':<14}" + "".join(f" {s[:w]:>{w}}" for s, w in zip(srcs, widths, strict=True))
    lines = [head + f" {'max ep':>7} {'bpb':>7} {'held-out':>8}"]
    for n in shown:
        r = rows[n]
        mark = (
            "  <- chosen"
            if n == chosen
            else "  (over the epoch limit)"
            if not r["within_epoch_limit"]
            else ""
        )
        lines.append(
            f"{n[:14]:<14}"
            + "".join(f" {r['weights'][s]:>{w}.3f}" for s, w in zip(srcs, widths, strict=True))
            + f" {r['max_epochs']:>7.2f} {_f(bpb(n)):>7} {_f(r.get('heldout_predicted_bpb')):>8}{mark}"
        )
    rest = len(rows) - len(shown)
    if rest > 0:
        lines.append(f"... and {rest} more measured mixtures in mix.json")
    return lines


def _skill(result: dict[str, Any]) -> list[str]:
    """The regression's held-out skill, its permutation p-value and the noise ceiling beside it."""
    rg = result["regression"]
    sp = rg.get("heldout_spearman") or rg.get("spearman") or {}
    lo, hi = (sp.get("ci") or [None, None])[:2]
    errors = rg.get("heldout_rmse") or {}
    why = (
        " (least held-out error: " + ", ".join(f"{m} {e:.4f}" for m, e in errors.items()) + " bpb)"
        if len(errors) > 1
        else ""
    )
    p = rg.get("permutation_p")
    lines = [
        f"regression: {rg['model']}{why}; held-out Spearman {_f(sp.get('value'), 2)} "
        f"[{_f(lo, 2)}, {_f(hi, 2)}] over {rg['held_out']} mixtures ({rg.get('folds', 'leave-one')}-fold), "
        f"permutation p = {_f(p, 3)} ({rg.get('n_perm')} permutations, each refitted)"
    ]
    nc = rg.get("noise_ceiling")
    if nc and nc.get("split_spearman") is not None:
        lines.append(
            f"noise ceiling: {nc['mixtures']} mixtures measured on seeds {nc['seeds']} rank alike at Spearman "
            f"{nc['split_spearman']:.2f}, so no predictor can reach much above {nc['ceiling']:.2f}"
        )
    elif nc:
        lines.append(f"noise ceiling: {nc['mixtures']} mixtures on two seeds give no ranking to compare")
    return lines


def format_table(result: dict[str, Any]) -> str:
    """The mixture table, the regression's skill beside the noise ceiling, the choice (flagged when outside
    the sampled region), the confirmation on fresh seeds with its p-value, and the decision's sentence."""
    lines = [f"mixtures over {result['by']} (horizon {result['horizon']:,} tokens)", *mixture_table(result)]
    lines += _skill(result)
    region = result["chosen"].get("region") or {}
    if region and not region.get("inside", True):
        out = region.get("outside_range") or {}
        where = (
            ", ".join(
                f"{s} {v['weight']:.3f} (sampled {v['sampled'][0]:.3f}-{v['sampled'][1]:.3f})"
                for s, v in out.items()
            )
            or f"{region['nearest_tv']:.2f} from its nearest fitted mixture (95% of them lie within "
            f"{region['spacing_tv_p95']:.2f} of another)"
        )
        lines.append(f"WARNING: the chosen weights lie outside the region the search sampled: {where}")
    conf = result["confirmation"]
    lines.append(f"confirmation on fresh seeds {conf['seeds']} at {conf['budget']:,} tokens:")
    for n, label in (("chosen", "chosen"), ("best-single", "best single")):
        if n in conf:
            c = conf[n]
            who = f" ({c['source']})" if c.get("source") else ""
            lines.append(
                f"  {label}{who} vs natural: multiplier {_mult(c['multiplier'])}, paired p = "
                f"{_f(c.get('p_value'), 3)}, {c['call']}"
            )
    vs = conf.get("chosen_vs_best_single")
    if vs:
        d = vs["diff_bpb"]
        lines.append(
            f"  chosen vs best single: paired bpb difference {_f(d['value'], 4)} [{_f(d['ci_low'], 4)}, "
            f"{_f(d['ci_high'], 4)}], {vs['call']}"
        )
    decision = result.get("decision") or {}
    if decision:
        lines.append(f"decision: {decision['sentence']}")
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
