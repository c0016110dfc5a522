"""The mixture search's numbers, one library call each where a library has it:

* :mod:`~curate.proxy.mixfit.space`: the natural mixture, epochs at the horizon and Muennighoff's value of
  them, the candidates (spread over the simplex as RegMix draws its runs, around the natural mixture, each
  source alone) and whether a mixture lies in the region they sampled;
* :mod:`~curate.proxy.mixfit.regress`: the regressions from weights to loss (linear least squares and
  LightGBM as RegMix, the log-linear mixing law as Olmix), their k-fold held-out predictions and the
  choice between models by held-out error;
* :mod:`~curate.proxy.mixfit.skill`: the held-out Spearman rank correlation, its permutation p-value and
  its bootstrap interval, both refitting, and the split-seed noise ceiling;
* :mod:`~curate.proxy.mixfit.choose`: the predicted best mixture within the epoch limit.

``benchmarks/regmix_check.py`` checks this package against RegMix's published runs.
"""

from curate.proxy.mixfit.choose import N_POOL, TOP_K, Choice, choose
from curate.proxy.mixfit.regress import (
    AUTO,
    FOLDS,
    GBM_PARAMS,
    GBM_ROUNDS,
    LOGLINEAR_FORM,
    MODELS,
    fit,
    fit_gbm,
    fit_linear,
    fit_loglinear,
    fold_ids,
    heldout_predictions,
    rmse,
    select,
)
from curate.proxy.mixfit.skill import Procedure, permutation_p, refit_bootstrap, spearman, split_seed_ceiling
from curate.proxy.mixfit.space import (
    MIN_RUNS,
    RUNS_PER_SOURCE,
    Design,
    candidates,
    default_runs,
    dirichlet_draws,
    epochs,
    muennighoff_factor,
    natural_weights,
    region,
    spread_draws,
    total_variation,
)

__all__ = [
    "AUTO",
    "FOLDS",
    "GBM_PARAMS",
    "GBM_ROUNDS",
    "LOGLINEAR_FORM",
    "MIN_RUNS",
    "MODELS",
    "N_POOL",
    "RUNS_PER_SOURCE",
    "TOP_K",
    "Choice",
    "Design",
    "Procedure",
    "candidates",
    "choose",
    "default_runs",
    "dirichlet_draws",
    "epochs",
    "fit",
    "fit_gbm",
    "fit_linear",
    "fit_loglinear",
    "fold_ids",
    "heldout_predictions",
    "muennighoff_factor",
    "natural_weights",
    "permutation_p",
    "refit_bootstrap",
    "region",
    "rmse",
    "select",
    "spearman",
    "split_seed_ceiling",
    "spread_draws",
    "total_variation",
]
