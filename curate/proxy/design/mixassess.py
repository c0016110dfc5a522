"""What a mixture search's numbers say (:mod:`curate.proxy.design.mix`): the regression's held-out skill with
its permutation p-value, refitting bootstrap interval and split-seed noise ceiling; whether the chosen
weights lie in the region the candidates sampled; and the decision a user reads, from the confirmation on
fresh seeds alone."""

from __future__ import annotations

from typing import Any

import numpy as np

from curate.proxy import mixfit, stats
from curate.proxy.spec.mix import MixSpec

FORMS = {
    "linear": "y(w) = a + sum_s b_s w_s, least squares (RegMix's linear model)",
    "gbm": f"LightGBM regression trees on the weights (mixfit.GBM_PARAMS, {mixfit.GBM_ROUNDS} rounds; RegMix)",
    "loglinear": f"{mixfit.LOGLINEAR_FORM}, least squares (Olmix's log-linear mixing law)",
}


def regression(
    spec: MixSpec,
    w: np.ndarray,
    y: np.ndarray,
    tokens: np.ndarray,
    horizon: float,
    design: mixfit.Design,
    ceiling: dict[str, Any] | None,
) -> tuple[dict[str, Any], mixfit.Choice, np.ndarray]:
    """The regression from weights ``w`` to measured bpb ``y``: the model (``auto``: by held-out error),
    its held-out Spearman with a refitting bootstrap interval and a permutation p-value, the noise ceiling
    beside it, and the predicted best mixture. Returns the block, the choice and the held-out
    predictions."""
    proc = mixfit.Procedure(spec.model, spec.folds, spec.seed)
    model, errors, preds = proc.run(w, y)
    rho = mixfit.spearman(preds, y)
    lo, hi = mixfit.refit_bootstrap(proc, w, y, spec.n_boot, spec.seed)
    p = mixfit.permutation_p(proc, w, y, rho, spec.n_perm, spec.seed)
    choice = mixfit.choose(
        w,
        y,
        tokens,
        horizon,
        design,
        model=model,
        max_epochs=spec.max_epochs,
        n_boot=spec.n_boot,
        seed=spec.seed,
    )
    folds = min(spec.folds, len(y))
    block = {
        "model": model,
        "requested": spec.model,
        "form": FORMS[model],
        "heldout_rmse": {m: round(e, 6) for m, e in errors.items()},
        "fitted_on": "rung0",
        "mixtures": len(y),
        "held_out": len(y),
        "folds": folds,
        "heldout_spearman": {"value": rho, "ci": [lo, hi]},
        "permutation_p": p,
        "n_perm": spec.n_perm,
        "n_boot": spec.n_boot,
        "noise_ceiling": ceiling,
        "method": f"{folds}-fold cross-validation: each mixture's bpb predicted by the regression fitted on "
        "the folds without it"
        + (
            f"; the model of least held-out error of {', '.join(mixfit.AUTO)}, chosen afresh in every "
            "permutation and resample"
            if spec.model == "auto"
            else ""
        )
        + f". Spearman of those predictions with the measured bpb; its interval a percentile bootstrap "
        f"over mixtures that refits ({spec.n_boot} resamples); its p-value one-sided, from {spec.n_perm} "
        "permutations of the measured bpb over the mixtures, each refitted",
    }
    return block, choice, preds


def split_subset(names: list[str], k: int | None, seed: int) -> list[str]:
    """The mixtures measured on the split seed: the natural mixture and a seeded draw of the others, ``k``
    in all (default a third of ``names``, at least 8); none with ``k`` 0."""
    k = max(8, -(-len(names) // 3)) if k is None else k
    if k < 3:
        return []
    rest = [n for n in names if n != "natural"]
    rng = np.random.default_rng(seed + 2)
    picked = sorted(rng.choice(len(rest), min(k, len(names)) - 1, replace=False).tolist())
    return ["natural", *(rest[i] for i in picked)]


def ceiling_block(
    a: dict[str, float], b: dict[str, float], seeds: list[int], split_seed: int
) -> dict[str, Any]:
    """The split-seed noise ceiling (:func:`curate.proxy.mixfit.split_seed_ceiling`) from rung 0's bpb
    ``a`` and the split seed's ``b`` of the same mixtures."""
    names = sorted(b)
    out = mixfit.split_seed_ceiling(np.array([a[n] for n in names]), np.array([b[n] for n in names]))
    return {
        **out,
        "seeds": [*seeds, split_seed],
        "method": "the same mixtures measured on rung 0's seeds and on one more seed (same documents): "
        "split_spearman is the rank correlation of the two; ceiling = sqrt(split_spearman), about the "
        "highest held-out Spearman any predictor can reach against bpb measured this way",
    }


def _mult(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "—"
    b = m.get("bounds") or {}

    def end(x: Any, mark: Any) -> str:
        return "—" if x is None else f"{mark or ''}{x:.2f}"

    return f"{m['value']:.2f}x [{end(m.get('ci_low'), b.get('ci_low'))}, {end(m.get('ci_high'), b.get('ci_high'))}]"


def p_value(per_seed_diff: list[float] | None) -> float | None:
    """The confirmation's probability: the two-sided paired t-test p-value over fresh seeds
    (:func:`curate.proxy.stats.paired_p`), the test whose interval makes the call."""
    return stats.paired_p(per_seed_diff) if per_seed_diff else None


def decision(conf: dict[str, Any], region: dict[str, Any] | None) -> dict[str, Any]:
    """What a user reads as the search's answer, from the confirmation on fresh seeds only: whether the
    chosen mixture was called better than the natural mixture (and the run supports a decision), so an
    export may use it, and one plain sentence naming the better mixture when the search cannot beat the
    natural mixture or the best single source."""
    c, n = conf["chosen"], len(conf["seeds"])
    supported = conf.get("supported", True) is not False
    better = c["call"] == "better" and supported
    p = c.get("p_value")
    pv = "" if p is None else f", paired p = {p:.2g}"
    bs = conf.get("best-single") or {}
    src = bs.get("source")
    vs = conf.get("chosen_vs_best_single") or {}
    winner = "chosen" if better else "natural"
    if better:
        s = (
            f"The chosen mixture trains better than the natural mixture on {n} fresh seeds: multiplier "
            f"{_mult(c.get('multiplier'))}{pv}."
        )
        if vs.get("call") == "worse":
            winner = f"only-{src}"
            s += f" {src} alone was better still (paired bpb difference {vs['diff_bpb']['value']:+.4f}): use it."
    else:
        how = {"worse": "was called worse than", "better": "was called better than"}.get(
            c["call"], "was not called better than"
        )
        reasons = (
            "; ".join(r.rstrip(". ") for r in conf.get("unsupported_reasons") or []) or "its controls failed"
        )
        why = "" if supported else f", but the run cannot support a decision ({reasons})"
        s = (
            f"The search cannot beat the natural mixture: the chosen mixture {how} it on {n} fresh seeds "
            f"(multiplier {_mult(c.get('multiplier'))}{pv}){why}; keep the natural mixture."
        )
        if bs.get("call") == "better" and supported:
            winner = f"only-{src}"
            s += (
                f" {src} alone was called better than the natural mixture (multiplier "
                f"{_mult(bs.get('multiplier'))}): it is the better mixture here."
            )
        elif vs.get("call") == "worse":
            s += f" {src} alone beat the chosen mixture, though not the natural mixture."
    if region is not None and not region.get("inside", True):
        s += " The chosen weights lie outside the region the search sampled: the regression extrapolated."
    return {"chosen_called_better": better, "export": better, "better": winner, "sentence": s}
