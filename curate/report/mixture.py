"""The report's mixture section (``mix.json`` from ``curate mix`` / ``proxy.mix``): the search's decision
first (from the confirmation on fresh seeds alone), then every mixture tried with its weights, epochs,
measured and held-out predicted target bpb, the predictor's rank correlation with its permutation p-value
beside the split-seed noise ceiling, the chosen weights (flagged outside the sampled region) and the
confirmation beside the natural mixture and the best single source. HTML and Markdown render the same
rows (:func:`mixture_rows`); render functions only, the caller reads ``mix.json``."""

from __future__ import annotations

from html import escape
from typing import Any

from curate.goodput.calls import fmt_bounded
from curate.report.fmt import num, ratio

HEADER = ["mixture", "weights", "max epochs", "target bpb", "predicted (held out)", "note"]


def _weights(w: dict[str, float]) -> str:
    return ", ".join(f"{s} {v:.2f}" for s, v in w.items() if v >= 0.005)


def _mult(x: dict[str, Any] | None) -> str:
    if not x or x.get("value") is None:
        return "—"
    lo, hi = x.get("ci_low"), x.get("ci_high")
    if lo is None and isinstance(x.get("ci"), list) and len(x["ci"]) == 2:
        lo, hi = x["ci"]
    b = (x.get("bounds") or {}) if isinstance(x.get("bounds"), dict) else {}
    band = (
        f" [{fmt_bounded(lo, b.get('ci_low'))}, {fmt_bounded(hi, b.get('ci_high'))}]"
        if lo is not None
        else ""
    )
    return f"{ratio(x['value'])}x{band}"


def _heldout(r: dict[str, Any]) -> float | None:
    """A mixture's held-out prediction (``loo_predicted_bpb`` in a ``mix.json`` from before k-fold)."""
    v = r.get("heldout_predicted_bpb")
    return r.get("loo_predicted_bpb") if v is None else v


def mixture_rows(mix: dict[str, Any]) -> list[list[str]]:
    """One row per mixture: the chosen one first, then the natural one, then by measured bpb."""
    chosen = (mix.get("chosen") or {}).get("name")
    limit = mix.get("max_epochs")

    def measured(r: dict[str, Any]) -> float | None:
        m = r.get("measured_bpb") or {}
        return m[max(m)] if m else None

    def key(name: str) -> tuple[int, float, str]:
        v = measured(mix["mixtures"][name])
        first = 0 if name == chosen else 1 if name == "natural" else 2
        return (first, v if v is not None else float("inf"), name)

    rows = []
    for name in sorted(mix.get("mixtures") or {}, key=key):
        r = mix["mixtures"][name]
        notes = []
        if name == chosen:
            notes.append("chosen")
        if name == "natural":
            notes.append("the data's own shares")
        if not r.get("within_epoch_limit", True):
            notes.append(f"over {num(limit)} epochs")
        rows.append(
            [
                name,
                _weights(r["weights"]),
                f"{r['max_epochs']:.2f}",
                num(measured(r), 4),
                num(_heldout(r), 4),
                "; ".join(notes),
            ]
        )
    return rows


def _skill(mix: dict[str, Any]) -> str:
    """The regression, its held-out Spearman with its permutation p-value, and the noise ceiling."""
    rg = mix.get("regression") or {}
    sp = rg.get("heldout_spearman") or rg.get("spearman") or {}
    lo, hi = (sp.get("ci") or [None, None])[:2]
    chosen_by = " (chosen by held-out error)" if rg.get("requested") == "auto" else ""
    s = (
        f"The {rg.get('model')} regression{chosen_by} from weights to target bpb ranks held-out mixtures "
        f"with Spearman {num(sp.get('value'), 2)} (95% CI {num(lo, 2)} to {num(hi, 2)}, {rg.get('held_out')} "
        "mixtures, each predicted by a fit without it"
    )
    if rg.get("permutation_p") is not None:
        s += f"; permutation p = {num(rg['permutation_p'], 3)} over {rg.get('n_perm')} refitted permutations"
    s += ")."
    nc = rg.get("noise_ceiling") or {}
    if nc.get("split_spearman") is not None:
        s += (
            f" Noise ceiling: the same {nc['mixtures']} mixtures on two seeds rank alike at Spearman "
            f"{num(nc['split_spearman'], 2)}, so no predictor could reach much above {num(nc['ceiling'], 2)}."
        )
    return s


def _outside(region: dict[str, Any]) -> str:
    out = region.get("outside_range") or {}
    if out:
        return ", ".join(
            f"{s} {num(v['weight'], 3)} (sampled {num(v['sampled'][0], 3)} to {num(v['sampled'][1], 3)})"
            for s, v in out.items()
        )
    return (
        f"{num(region.get('nearest_tv'), 2)} from its nearest fitted mixture, farther than 95% of them are "
        "from one another"
    )


def summary(mix: dict[str, Any]) -> str:
    """The decision (the confirmation's), the search's size, the predictor's skill beside the noise
    ceiling, the choice and its confirmation."""
    srcs = [s["name"] for s in mix.get("sources") or []]
    decision = (mix.get("decision") or {}).get("sentence")
    s = f"{decision} " if decision else ""
    s += (
        f"{len(mix.get('mixtures') or {})} mixtures of {len(srcs)} sources by {mix.get('by')} "
        f"(horizon {num(mix.get('horizon'))} tokens, at most {num(mix.get('max_epochs'))} epochs per source "
        f"preferred). {_skill(mix)}"
    )
    ch = mix.get("chosen") or {}
    if ch:
        s += f" Chosen ({ch.get('name')}): {_weights(ch.get('weights') or {})}"
        if ch.get("predicted_bpb") is not None:
            iv = ch.get("predicted_interval") or [None, None]
            s += f", predicted {num(ch['predicted_bpb'], 4)} bpb [{num(iv[0], 4)}, {num(iv[1], 4)}]"
        s += "."
        region = ch.get("region") or {}
        if region and not region.get("inside", True):
            s += f" Outside the region the search sampled: {_outside(region)}."
    conf = mix.get("confirmation") or {}
    for n, label in (("chosen", "The chosen mixture"), ("best-single", "The best single source")):
        c = conf.get(n)
        if not c:
            continue
        who = f" ({c['source']})" if c.get("source") else ""
        pv = f", paired p = {num(c['p_value'], 2)}" if c.get("p_value") is not None else ""
        s += (
            f" {label}{who} on fresh seeds {conf.get('seeds')} against the natural mixture: multiplier "
            f"{_mult(c.get('multiplier'))} ({c.get('call')}{pv})"
        )
        if "muennighoff_factor" in c:  # the runs repeat each source as at the horizon: nothing applied
            s += (
                f", each source repeated in the runs as at the horizon (Muennighoff's fit would value those "
                f"epochs at {c['muennighoff_factor']:.3f}; not applied)."
            )
        else:  # a mix.json written before: its goodput had the factor applied on top of repeating runs
            s += (
                f", goodput {_mult(c.get('goodput'))} after a repetition factor of "
                f"{c.get('repetition_factor', 1.0):.3f} that an older curate applied on top of runs that "
                "already repeat."
            )
    null = (conf.get("controls") or {}).get("null")
    if null:
        s += (
            f" Null control (the natural mixture on another document draw per seed): "
            f"{_mult(null.get('multiplier'))}{'' if null.get('contains_1') else ', which excludes 1: the instrument is biased'}."
        )
    mde = (conf.get("power") or {}).get("mde_multiplier") or {}
    if mde:
        s += f" Detectable at 80% power: below {ratio(mde.get('worse'))}x or above {ratio(mde.get('better'))}x."
    return s


def predicted_svg(mix: dict[str, Any]) -> str | None:
    """Held-out predicted against measured target bpb, one point per mixture; ``None`` under 3 points."""
    from curate.report.charts import RC, _svg, plt

    pts: dict[str, tuple[float, float]] = {}
    for n, r in (mix.get("mixtures") or {}).items():
        pred, measured = _heldout(r), (r.get("measured_bpb") or {}).get("rung0")
        if pred is not None and measured is not None:
            pts[n] = (pred, measured)
    if len(pts) < 3:
        return None
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(5.0, 3.4), layout="constrained")
        xs, ys = zip(*pts.values(), strict=True)
        ax.scatter(xs, ys, s=18, color="C0", label="mixture (held out)")
        if "natural" in pts:
            ax.scatter(
                [pts["natural"][0]], [pts["natural"][1]], marker="s", color="#555", s=30, label="natural"
            )
        lo, hi = min(*xs, *ys), max(*xs, *ys)
        ax.plot([lo, hi], [lo, hi], color="#888", linewidth=1, linestyle="--")
        ax.set_xlabel("predicted target bpb (fitted without it)")
        ax.set_ylabel("measured target bpb")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
        return _svg(fig)


def html_section(mix: dict[str, Any] | None) -> str:
    if not mix:
        return ""
    head = "".join(
        f'<th class="{"l" if i in (0, 1, 5) else ""}">{escape(h)}</th>' for i, h in enumerate(HEADER)
    )
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"l" if i in (0, 1, 5) else ""}">{escape(c)}</td>' for i, c in enumerate(r))
        + "</tr>"
        for r in mixture_rows(mix)
    )
    chart = predicted_svg(mix)
    return (
        f'<h2 id="mixture">Mixture search</h2><p>{escape(summary(mix))}</p>'
        f"{chart or ''}<table><tr>{head}</tr>{body}</table>"
    )


def markdown_section(mix: dict[str, Any] | None) -> list[str]:
    if not mix:
        return []
    out = ["## Mixture search", "", summary(mix), ""]
    out.append("| " + " | ".join(HEADER) + " |")
    out.append("| :-- | :-- | --: | --: | --: | :-- |")
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in mixture_rows(mix)]
    return [*out, "", "The predicted-vs-measured chart is in report.html.", ""]
