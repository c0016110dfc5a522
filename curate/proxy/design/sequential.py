"""Seeds until decided (``proxy.sequential``): the measurement made in stages of seeds, each decision pair
looked at after each stage and left alone once decided, until every pair is (the design:
:mod:`curate.proxy.statistics.sequential`; its section: :mod:`curate.proxy.spec.sequential`).

Each stage is one measurement (:func:`curate.proxy.design.measure.measure`) at the first ``n`` seeds of the
look; finished runs are reused, so a stage trains only its new seeds. A pair's statistic at a look is
``z = mean(d) sqrt(n) / sd``, ``d`` its per-seed differences with the baseline and ``sd`` their spread
pooled with the calibrated noise (``proxy.noise``; :func:`curate.proxy.statistics.gate.pooled`). The
report's ``multiple_comparisons`` then holds the design's calls (each with the look and the seeds that
decided it) in place of Holm's; the controls are checked at the seeds the measurement stopped at. A run
whose pairs are all decided but whose gate is inconclusive (:func:`gate_inconclusive`) goes on to the next
look, so a control missed at low power is read at more seeds; no call changes after it is made.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from curate.proxy import stats
from curate.proxy.design.measure import Experiment, Measured, measure
from curate.proxy.spec.config import ProxyConfig
from curate.proxy.statistics import analysis
from curate.proxy.statistics.gate import pooled, z_stat
from curate.runtime.context import RunContext

CALL = {"better": "better", "worse": "worse", "futile": "not_called"}


def measure_until_decided(ctx: RunContext, cfg: ProxyConfig, report: str = "goodput.json") -> Measured:
    """Measure ``cfg``'s recipes in stages of seeds until every decision pair is decided or the last
    look is reached (module docstring); the last stage's report is the run's."""
    assert cfg.sequential is not None
    assert cfg.noise is not None
    family = [r.name for r in cfg.recipes if r.name != cfg.baseline]
    design = cfg.sequential.design(cfg.noise.sd, len(family))
    seeds = list(cfg.seeds) if len(cfg.seeds) >= design.looks[-1] else list(range(design.looks[-1]))
    decided: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []
    k = 0

    def calls(diffs: dict[str, np.ndarray], members: list[str]) -> dict[str, Any]:
        """The design's calls at look ``k`` (pairs decided earlier keep their call)."""
        n = design.looks[k]
        zs: dict[str, float] = {}
        for r in members:
            d = np.asarray(diffs[r], dtype=np.float64)
            zs[r] = z_stat(d, pooled(d, cfg.noise).sd)
            if r not in decided:
                out = design.decide(k, zs[r])
                if out is not None:
                    decided[r] = {"call": CALL[out], "look": k, "seeds": n, "z": round(zs[r], 4)}
        history.append({"look": k, "seeds": n, "z": {r: round(z, 4) for r, z in zs.items()}})
        pairs = {}
        for r in members:
            iv = stats.paired_interval(diffs[r], analysis.LEVEL)
            own = analysis.call(iv)
            row = decided.get(r, {"call": "not_called", "look": None, "seeds": None, "z": round(zs[r], 4)})
            pairs[r] = {"p": stats.paired_p(diffs[r]), "p_holm": None, "call_unadjusted": own, **row}
        return {
            "method": "group-sequential",
            "alpha": 0.05,
            "family": list(members),
            "pairs": pairs,
            "design": design.as_dict(),
            "history": list(history),
            "note": f"each of the {len(members)} non-control recipes against {cfg.baseline} looked at after "
            f"{', '.join(map(str, design.looks))} seeds and called once its z crosses the design's boundary "
            f"(alpha {design.alpha:.4g} each, Bonferroni: any false call in the family at most 0.05); a "
            "pair inside the futility boundary, or undecided at the last look, is not called",
        }

    m: Measured | None = None
    for k in range(len(design.looks)):
        sub = dataclasses.replace(cfg, seeds=seeds[: design.looks[k]], sequential=cfg.sequential)
        m = measure(ctx, Experiment(sub, report=report, calls=calls))
        if all(r in decided for r in family) and not gate_inconclusive(m.report):
            break
    assert m is not None
    return m


def gate_inconclusive(report: dict[str, Any]) -> bool:
    """Whether the run's gate is inconclusive (``controls.decision.inconclusive``: a control missed
    at a power the run states below 0.95). The design then goes on to its next look although every pair is
    decided: the calls stay as they were, the control gets the seeds it lacked."""
    return bool(((report.get("controls") or {}).get("decision") or {}).get("inconclusive"))
