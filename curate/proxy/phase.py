"""The ``proxy`` phase: one measurement (:func:`curate.proxy.design.measure.measure`) and, when the section asks
for them, its follow-ups: the leave-one-stage-out ablation (:mod:`curate.proxy.design.ablate`), the recipe search
(:mod:`curate.proxy.design.search`) and the mixture search (:mod:`curate.proxy.design.mix`). Those measure through
:mod:`curate.proxy.design.measure` too, never through this module, so the package has no import circle
(``tests/test_layers.py``)."""

from __future__ import annotations

from typing import Any

from curate.proxy.design.measure import Experiment, measure
from curate.proxy.design.sequential import measure_until_decided
from curate.proxy.spec.config import ProxyConfig
from curate.runtime.context import RunContext


def follow_ups(ctx: RunContext, cfg: ProxyConfig) -> dict[str, Any]:
    """The leave-one-stage-out ablation, the recipe search and the mixture search (``proxy.mix``, as
    ``curate mix`` runs it), when asked for: what they add to the summary."""
    extra: dict[str, Any] = {}
    if cfg.ablate:
        from curate.proxy.design.ablate import run_ablation

        ab = run_ablation(ctx)
        extra["ablation"] = {s: e["call"] for s, e in ab["stages"].items()}
    if cfg.search is not None:
        from curate.proxy.design.search import run_search

        found = run_search(ctx, cfg.search)
        extra["search"] = {"winner": found["winner"], "search": "search.json"}
    if cfg.mix is not None:
        from curate.proxy.design.mix import run_mix

        mix = run_mix(ctx, cfg.mix)
        extra["mix"] = {
            "chosen": mix["chosen"]["weights"],
            "decision": mix["decision"]["sentence"],
            "mix": "mix.json",
        }
    return extra


def run_phase(ctx: RunContext) -> dict[str, Any]:
    """Run the ``proxy:`` section (``ctx.section``, the parsed :class:`ProxyConfig`) of a finished pipeline
    run: its measurement, then the follow-ups it asks for; returns a summary for the manifest."""
    cfg = ProxyConfig.narrow(ctx.section)
    m = measure_until_decided(ctx, cfg) if cfg.sequential else measure(ctx, Experiment(cfg))
    summary = m.summary("goodput.json")
    return follow_ups(ctx, cfg) | summary
