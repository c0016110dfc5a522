"""The controls' block of ``goodput.json`` (``controls``): each control's own check (its kind's
:meth:`~curate.proxy.kinds.base.Recipe.check`: the null must contain 1, a control built worse must be called worse,
kept vs rejected informs), and the ``decision`` the gating ones support; the ladder's warnings where a
control fails at another point come from the same kinds (:mod:`curate.proxy.assembly.ladder`)."""

from __future__ import annotations

from typing import Any

from curate.proxy.kinds import KINDS, Recipe, control_kinds
from curate.proxy.kinds.base import Evidence


def gates(controls: list[Recipe]) -> list[Recipe]:
    """The controls whose result can forbid a decision, in the order their reasons are given."""
    return sorted((r for r in controls if r.GATE is not None), key=lambda r: r.GATE or 0)


def decision(out: dict[str, Any], controls: list[Recipe]) -> dict[str, Any]:
    """``controls["decision"]``: whether the controls let this run support a decision. Not supported when
    a gating control that was trained fails (one built worse not called worse: the run cannot see a known
    effect; the null separated from raw: the instrument is biased); ``inconclusive`` when every failure is
    a miss at a stated power below :data:`~curate.proxy.kinds.base.FIRM_POWER` (a control's stated power: a
    working instrument misses it that often, so the run shows nothing either way). With no gating control trained it is
    supported, with a ``note`` saying nothing checked the instrument (nothing failed, but nothing was
    checked either; ``reasons`` stays empty, since it lists failures only)."""
    failed = [(r, why) for r in gates(controls) if r.name in out and (why := r.failure(out[r.name]))]
    reasons = [why for _, why in failed]
    d: dict[str, Any] = {"supported": not reasons, "reasons": reasons}
    if failed and all(r.underpowered(out[r.name]) for r, _ in failed):
        d["inconclusive"] = True  # every failure a miss a working instrument makes this often: no blame
    if not any(r.name in out for r in gates(controls)):
        names = " or ".join(k for k in control_kinds() if KINDS[k].GATE is not None)
        d["note"] = f"no {names} control was trained: nothing checked the instrument at this budget"
    return d


def controls_block(ev: Evidence, controls: list[Recipe], skipped: dict[str, str]) -> dict[str, Any]:
    """``controls``: what each trained control's check found (against the baseline: its paired interval,
    its multiplier and the sentence the report shows), and the ``decision`` they support
    (:func:`decision`). ``controls``: the measurement's control recipes; ``skipped``: those not built."""
    out: dict[str, Any] = {"for": ev.controlled, "skipped": skipped}
    for r in controls:
        if r.name in ev.heads and (block := r.check(ev)) is not None:
            out[r.name] = block
    out["decision"] = decision(out, controls)
    return out


def warnings(out: dict[str, Any], controls: list[Recipe]) -> list[str]:
    """The warnings the controls' results raise (the run's report opens with them)."""
    return [w for r in controls if r.name in out and (w := r.warning(out[r.name]))]
