"""Signal and noise of each eval set at ``T`` (Heineman et al. 2025, "Signal and Noise"): whether a set
separates the recipes by more than its seed noise. Descriptive only: it never chooses, weights or drops a
set (the headline sets and their equal weights are the config's).

For one eval set, with ``R`` recipes (the baseline and the non-control recipes) each trained on ``n``
seeds, ``x[r, s]`` the bpb of recipe ``r``'s seed ``s`` on that set at ``T``:

* signal = the standard deviation (ddof 1) over recipes of the recipe means ``x̄_r``;
* noise = the root-mean-square over recipes of the standard error of a recipe mean, ``sd_r / √n``
  (``sd_r``: ddof 1 over that recipe's seeds), i.e. the spread a recipe mean would show from seed noise
  alone;
* snr = signal / noise; ``too_noisy`` when snr < 1: the recipes' means spread less than one recipe's mean
  moves with its seeds, so that set cannot rank these recipes at this budget.

The noise is unpaired (the seed effect that recipes share is in it), so it is larger than the noise of
a paired difference, and a set is flagged conservatively. If every recipe mean had only seed noise, the
expected squared signal equals the squared noise (the standard error of each mean), so snr ~ 1 is what
pure noise gives and the threshold 1 marks a set with no spread beyond it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

THRESHOLD = 1.0
METHOD = (
    "signal: sd (ddof 1) over the baseline and the non-control recipes of each recipe's mean bpb on this set "
    "at T; noise: root-mean-square over those recipes of the standard error of a recipe's mean, sd over its "
    "seeds (ddof 1) / sqrt(seeds), unpaired; snr = signal / noise (null with fewer than 2 recipes or 2 seeds, "
    "or no noise); too_noisy when snr < 1, the spread pure seed noise gives (Heineman et al. 2025); "
    "descriptive, never used to choose, weight or drop a set"
)


def signal_noise(at_t: dict[str, np.ndarray]) -> dict[str, Any]:
    """The ``signal_noise`` block of one eval set from ``at_t``: each recipe's per-seed bpb at ``T``
    (the recipes that count: the baseline and the non-control recipes)."""
    x = [np.asarray(v, dtype=np.float64) for v in at_t.values()]
    n = min((len(v) for v in x), default=0)
    means = np.array([float(v.mean()) for v in x])
    signal = float(means.std(ddof=1)) if len(x) >= 2 else None
    noise = math.sqrt(float(np.mean([v.var(ddof=1) / len(v) for v in x]))) if x and n >= 2 else None
    snr = signal / noise if signal is not None and noise else None
    return {
        "signal": signal,
        "noise": noise,
        "snr": snr,
        "too_noisy": snr is not None and snr < THRESHOLD,
        "method": METHOD,
    }
