"""Successive halving (Jamieson & Talwalkar 2016), the one both the recipe search and the mixture search
advance their candidates by: evaluate every survivor at a rung, keep the best ``ceil(n / eta)`` (at least
one), evaluate those at the next rung's larger budget, and so on."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def successive_halving(
    names: list[str],
    n_rungs: int,
    eta: int,
    evaluate: Callable[[list[str], int], dict[str, float | None]],
    rank: Callable[[str, int], tuple[Any, ...]] | None = None,
    *,
    eligible: Callable[[str], bool] | None = None,
    add: Callable[[int], list[str]] | None = None,
    narrow_last: bool = True,
) -> tuple[str | None, list[dict[str, Any]]]:
    """Evaluate ``names`` at rung 0, keep the best ``ceil(n / eta)``, evaluate those at rung 1, ...;
    returns the winner (the best at the last rung reached) and the history ``[{rung, scores, advanced}]``.

    ``evaluate(survivors, k)`` returns a score for every candidate it measured (it may measure more than
    the survivors, e.g. a baseline each rung re-measures: every scored one competes); ``None`` = empty,
    dropped. ``rank(name, k)``: a sort key, lowest first, read after that rung's ``evaluate``; default the
    score, descending. Ties by name. ``eligible``: only these may advance (all, when none is); ``add(k)``:
    candidates joining after rung ``k`` (e.g. a regression's predicted best); ``narrow_last``: the last
    rung keeps one (the winner), else it keeps ``ceil(n / eta)`` like every other rung."""
    survivors, history = list(names), []
    for k in range(n_rungs):
        scores = evaluate(survivors, k)
        valid = [n for n in scores if scores[n] is not None]
        pool = [n for n in valid if eligible is None or eligible(n)] or valid
        pool.sort(key=lambda n: (*(rank(n, k) if rank else (-scores[n],)), n))  # type: ignore[operator]
        last = k == n_rungs - 1
        keep = pool[:1] if last and narrow_last else pool[: max(1, math.ceil(len(pool) / eta))]
        keep += add(k) if add else []
        history.append({"rung": k, "scores": scores, "advanced": keep})
        survivors = keep
        if not survivors:
            break
    return (survivors[0] if survivors else None), history
