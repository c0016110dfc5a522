"""Every figure the documents quote from benchmarks/results/*.json reads as its file says.

A row of FIGURES is one quote: the document, the text it quotes with each figure written ``{}``, the results
file, and per figure the key path into that file and how the document writes the value (a format spec, or
the words of a call). The test finds the quote in the document with whatever figures stand in the slots and
compares each one with the file's value written the document's way, so a figure that drifts from its file
fails naming the document and line, the quote, the file and the key. `test_each_row_can_fail` alters every
quoted figure in turn and expects its row to object: no row compares a value with itself.

Key paths: keys joined by ``.``, a list index as a number, ``name=X`` the item of a list whose ``name`` is
``X``, ``*`` every item of a list or value of a mapping (a list back); a key holding a dot (``pyenv:0.05``)
is matched whole. The end of an interval that the file's ``bounds`` marks reads with its mark (``>2.00``).
A figure the file holds in parts (a median of repeats, a count of seeds) is computed by the slot's ``of``,
which ``label`` names. The paired intervals themselves are recomputed from their per-seed statistics by
tests/proxy/test_stats.py; this file checks what the prose says about them.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

import pytest

from curate.proxy import stats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NUMBER = r"[<>]?[-+]?\d[\d,]*(?:\.\d+)?%?"  # 0.0394, +0.0055, 1,792, >2.00, 94.7%
CALL = {"better": "called better", "worse": "called worse", "not_called": "not called"}
CALLED_WORSE = {True: "called worse", False: "not called"}
WORDS = {3: "three", 4: "four", 5: "five", 6: "six"}


@dataclass(frozen=True)
class Bound:
    """The end of an interval beyond the measured range: the file's value and its mark."""

    mark: str
    value: float


@dataclass(frozen=True)
class Slot:
    """One figure of a quote: where the file holds it and how the document writes it."""

    key: str
    fmt: str | Mapping[Any, str]  # a format spec, or the document's words for each value
    of: Callable[[Any], Any] | None = None  # computes the figure from what `key` holds
    label: str = ""  # what `of` computes

    def value(self, data: Any) -> Any:
        found = resolve(data, self.key)
        return self.of(found) if self.of else found

    def render(self, value: Any) -> str:
        if isinstance(self.fmt, Mapping):
            return self.fmt[value]
        if isinstance(value, Bound):
            return value.mark + format(value.value, self.fmt)
        return format(value, self.fmt)

    def pattern(self) -> str:
        if isinstance(self.fmt, Mapping):
            return "|".join(re.escape(w) for w in sorted(set(self.fmt.values()), key=len, reverse=True))
        return NUMBER

    def name(self) -> str:
        return f"{self.key or '(the whole file)'}{f' -> {self.label}' if self.label else ''}"


@dataclass(frozen=True)
class Figure:
    """A quote in `doc` whose figures come from `file` under benchmarks/results/."""

    doc: str
    quote: str  # the document's text, each figure written {}
    file: str
    slots: tuple[Slot, ...]


def at(
    key: str, fmt: str | Mapping[Any, str] = ".2f", of: Callable[[Any], Any] | None = None, label: str = ""
) -> Slot:
    """The figure at `key`, written with `fmt` (computed by `of` from what the key holds, when given)."""
    return Slot(key, fmt, of, label or ("" if of is None else getattr(of, "__name__", "computed")))


def fig(doc: str, quote: str, file: str, *slots: Slot) -> Figure:
    """A row of FIGURES: `quote` in `doc`, its figures from benchmarks/results/`file`, one slot per {}."""
    return Figure(doc, quote, file, slots)


def same(values: Iterable[Any]) -> Any:
    """The one value every item has (a quote that states one figure for several)."""
    distinct = set(values)
    if len(distinct) != 1:
        raise ValueError(f"the file holds {sorted(distinct)}, where the document states one figure")
    return distinct.pop()


def _step(node: Any, part: str) -> Any:
    """One hop of a key path, or KeyError."""
    if isinstance(node, Mapping) and part in node:
        return node[part]
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    if isinstance(node, list) and "=" in part:
        field, want = part.split("=", 1)
        hits = [item for item in node if isinstance(item, Mapping) and str(item.get(field)) == want]
        if len(hits) == 1:
            return hits[0]
    raise KeyError(part)


def resolve(data: Any, key: str) -> Any:
    """The value at `key` (module docstring), an interval's marked end as a Bound."""
    parts = key.split(".") if key else []
    node, parent, last = data, None, ""
    i = 0
    while i < len(parts):
        if parts[i] == "*":
            items = list(node.values()) if isinstance(node, Mapping) else list(node)
            rest = ".".join(parts[i + 1 :])
            return [resolve(item, rest) for item in items]
        for j in range(len(parts), i, -1):  # the longest key first: `pyenv:0.05`, `family_error_spread_1.2`
            try:
                parent, node, last = node, _step(node, ".".join(parts[i:j])), ".".join(parts[i:j])
                break
            except KeyError:
                continue
        else:
            raise KeyError(f"no {parts[i]!r} under {'.'.join(parts[:i]) or 'the top level'}")
        i = j
    mark = (parent.get("bounds") or {}).get(last) if isinstance(parent, Mapping) else None
    return Bound(mark, node) if mark else node


def percent(x: float) -> float:
    return 100 * x


def per_million(x: float) -> float:
    return x / 1e6


def lowest_seed(seeds: list[list[int]]) -> int:
    return min(chain(*seeds))


def highest_seed(seeds: list[list[int]]) -> int:
    return max(chain(*seeds))


def distinct_seeds(seeds: list[list[int]]) -> int:
    return len(set(chain(*seeds)))


def fresh_seeds_each_point(cal: Mapping[str, Any]) -> int:
    return same(distinct_seeds([d["seeds"] for d in cal[p]["per_draw"]]) for p in ("demo", "web"))


def seeds_per_draw(seeds: list[list[int]]) -> int:
    return same(len(x) for x in seeds)


def null_low_over_draws(means: list[float]) -> float | None:
    """The pooled null's interval over the draws' means (df = draws - 1), as the calibration reports it."""
    return stats.paired_interval(means).ci_low


def null_high_over_draws(means: list[float]) -> float | None:
    return stats.paired_interval(means).ci_high


def docs_per_s(arm: str) -> Callable[[Mapping[str, Any]], float]:
    """Documents per second at the median of the repeats' seconds."""

    def rate(run: Mapping[str, Any]) -> float:
        return run["docs"] / statistics.median(run[arm])

    rate.__name__ = f"docs / median({arm})"
    return rate


def median_speedup(run: Mapping[str, Any]) -> float:
    """pii_v1's documents per second over the code before's, at the medians."""
    return statistics.median(run["baseline_tree_all"]) / statistics.median(run["pii_v1_all"])


SPEED_ARMS = ("pii_v1_all", "pii_v1_email_ip", "datatrove", "baseline_tree_all")


def repeats(runs: list[Mapping[str, Any]]) -> int:
    return same(len(run[arm]) for run in runs for arm in SPEED_ARMS)


def called_if_excludes_1(m: Mapping[str, Any]) -> str:
    return "called" if m["ci_low"] > 1 or m["ci_high"] < 1 else "not called"


OTHER_REGIONS = ("NANP", "GB", "intl")


def other_region_numbers(by: Mapping[str, Any]) -> int:
    return sum(v["n"] for k, v in by.items() if k.startswith("region=") and k[7:] not in OTHER_REGIONS)


def other_regions(by: Mapping[str, Any]) -> int:
    return sum(1 for k in by if k.startswith("region=") and k[7:] not in OTHER_REGIONS)


def phones_before_and_after(corpus: Mapping[str, Any]) -> int:
    return same(corpus[side]["by_type"].get("phone", 0) for side in ("before", "after"))


def phones_more_after(corpus: Mapping[str, Any]) -> int:
    return corpus["after"]["by_type"]["phone"] - corpus["before"]["by_type"]["phone"]


def sorted_distinct(i: int) -> Callable[[list[Any]], Any]:
    def pick(values: list[Any]) -> Any:
        return sorted(set(values))[i]

    pick.__name__ = f"sorted distinct values [{i}]"
    return pick


def points_below_fixed(power_gap: float) -> float:
    return -100 * power_gap


def not_phone_types(types: Mapping[str, Any]) -> int:
    return len(set(types) - {"phone"})


def other_types_recall(types: Mapping[str, Any]) -> float:
    return same(v["recall"] for k, v in types.items() if k != "ip")


def less_us_and_gb(regions: list[str]) -> int:
    return len(set(regions) - {"US", "GB"})


def nulls_margin(entries: list[Mapping[str, Any]]) -> float:
    """The margin every null of the data-limited arm was held to (one figure for all k)."""
    return same(e["equivalence"]["margin"] for e in entries if e["recipe"] == "null")


README, BENCH, GOODPUT, OWN = "README.md", "BENCHMARKS.md", "docs/goodput.md", "docs/own-data.md"
CAL = "calibration-fresh-2026-12-06.json"
MIX = "mix_search-web-2026-12-07.json"
MIX_BEFORE = "mix_search-web-2026-12-06.json"
MIX_KINDS = "mix_search-kinds-2026-12-07.json"
DL = "data_limited-2026-12-07.json"
GATE_DEMO = "gate-demo.json"
GATE_WEB = "gate-web.json"
GATE_WEB60 = "gate-web-60.json"
GATE_FRESH = "gate-web-fresh.json"
GATE_DOSE = "gate-web-dose.json"
DESIGN = "transfer_design-web.json"
DESIGN25 = "transfer_design-web-25.json"
DESIGN_TOP = "transfer_design-web-top.json"
SEQ = "sequential-design.json"
PHONES = "pii_phones_web-2026-12-07.json"
PHONE_FP = "pii_phone_fp-2026-12-07.json"
PLANTED = "pii_planted-2026-12-07.json"
SPEED = "pii_speed-2026-12-07.json"
DEFAULT, WIDE = "default/documents", "every_region/documents"
PY, WIKI, DEMO = "corpora:clean/python_docs", "corpora:clean/wikipedia", "pyenv:0.05"
KERNEL = "dir:/tmp/kdoc/x/usr/share/doc/linux-doc-6.1/Documentation"


def _rate(prefix: str, fmt: str = ".2f") -> tuple[Slot, ...]:
    """A measured rate as the documents write it: k of n, then the rate and its 95% interval."""
    return (
        at(f"{prefix}.k", "d"),
        at(f"{prefix}.n", "d"),
        at(f"{prefix}.value", fmt),
        at(f"{prefix}.ci95.0", fmt),
        at(f"{prefix}.ci95.1", fmt),
    )


def planted_minus_null(draws: list[dict[str, Any]]) -> float:
    """planted - null's mean over every seed of the draws."""
    import numpy as np

    return float(
        np.mean(
            np.concatenate(
                [np.subtract(d["per_seed_bpb"]["planted"], d["per_seed_bpb"]["null"]) for d in draws]
            )
        )
    )


def seeds_in(draws: list[dict[str, Any]]) -> int:
    """The seeds the draws hold."""
    return sum(len(d["seeds"]) for d in draws)


def one_less(n: int) -> int:
    return n - 1


def _gate_seeds(point: str, healthy: bool) -> tuple[Slot, Slot]:
    """The lowest and highest seed of a point's healthy (or broken) gate draws."""

    def pick(draws: list[dict[str, Any]]) -> list[list[int]]:
        return [d["seeds"] for d in draws if bool(d["broken"]) != healthy]

    lo = lambda draws: lowest_seed(pick(draws))  # noqa: E731
    hi = lambda draws: highest_seed(pick(draws))  # noqa: E731
    return at(f"{point}.draws", "d", lo, "lowest seed"), at(f"{point}.draws", "d", hi, "highest seed")


def _interval(prefix: str, fmt: str = ".2f") -> tuple[Slot, Slot, Slot]:
    return at(f"{prefix}.value", fmt), at(f"{prefix}.ci_low", fmt), at(f"{prefix}.ci_high", fmt)


def _recall(prefix: str) -> tuple[Slot, Slot, Slot]:
    """`0.990 [0.975, 0.996]`: a recall and its 95% interval."""
    return at(f"{prefix}.recall", ".3f"), at(f"{prefix}.ci95.0", ".3f"), at(f"{prefix}.ci95.1", ".3f")


def _not_emails(corpus: str) -> tuple[Slot, Slot]:
    """`0.005 -> 0.009`: spans that are not e-mails per 10,000 words, before and after."""
    before, after = (at(f"{corpus}.{side}.non_email_per_10k_words", ".3f") for side in ("before", "after"))
    return before, after


def _dose(prefix: str) -> tuple[Slot, ...]:
    return _interval(f"{prefix}.diff_bpb", "+.4f")


def _calibration(point: str) -> tuple[Slot, ...]:
    """`**20 of 20** ... [0.83, 1.00] ... +0.0055 ... (CI +0.0001 to +0.0109)` of one calibration point."""
    means = f"{point}.per_draw.*.null_minus_raw.value"
    return (
        at(f"{point}.null_inside", "d"),
        at(f"{point}.draws", "d"),
        at(f"{point}.null_inside_ci95.0"),
        at(f"{point}.null_inside_ci95.1"),
        at(f"{point}.null_mean_diff_bpb", "+.4f"),
        at(means, "+.4f", null_low_over_draws),
        at(means, "+.4f", null_high_over_draws),
    )


def _design(recipes: int, cheap: int, ref: int, field: str, fmt: str = ".2f") -> Slot:
    """One simulated design's figure from transfer_design's ``designs`` rows."""

    def pick(rows: list[dict[str, Any]]) -> Any:
        (row,) = [
            r for r in rows if (r["recipes"], r["seeds_cheap"], r["seeds_ref"]) == (recipes, cheap, ref)
        ]
        return percent(row[field]) if fmt.endswith("%") else row[field]

    return at(
        "designs",
        fmt.rstrip("%") if fmt.endswith("%") else fmt,
        pick,
        f"{recipes} recipes {cheap}x{ref} {field}",
    )


def _seed_range(key: str) -> tuple[Slot, Slot]:
    return at(key, "d", lowest_seed), at(key, "d", highest_seed)


STUDY = "transfer_ladder-web-2026-12-08.json"
MAIN_ACC, MID_ACC = "decision_accuracy.proxy_1m@294912", "decision_accuracy.proxy_1m@1179648"
DIFF = "choice.differences.proxy_1m@1179648 - proxy_1m@294912"


def _share(key: str) -> tuple[Slot, ...]:
    """A decision accuracy or ceiling as the documents write it: the share and its 95% interval, in %."""
    return (at(f"{key}.value", ".0%"), at(f"{key}.ci.0", ".0%"), at(f"{key}.ci.1", ".0%"))


def _points(key: str) -> tuple[Slot, ...]:
    """A difference of accuracies in points (x 100) with its interval, signed."""
    return tuple(at(f"{DIFF}.{k}", "+.0f", percent, "points") for k in ("value", "ci.0", "ci.1"))


def width(block: dict[str, Any]) -> float:
    return block["ci"][1] - block["ci"][0]


def called_either_way(recipes: dict[str, Any]) -> int:
    return sum(v["verdict"] in ("fades", "grows") for v in recipes.values())


def verdicts(kind: str) -> Callable[[dict[str, Any]], int]:
    def count(recipes: dict[str, Any]) -> int:
        return sum(v["verdict"] == kind for v in recipes.values())

    count.__name__ = f"recipes {kind}"
    return count


def _detectable(side: int, end: str) -> Callable[[dict[str, Any]], float]:
    """The smallest (``end="min"``) or largest fade (side 0) or growth (side 1) a recipe's trend test
    detects with 80% power, over the recipes, as a ratio per doubling."""

    def pick(recipes: dict[str, Any]) -> float:
        xs = [v["detectable_per_doubling"][side] for v in recipes.values() if "detectable_per_doubling" in v]
        return (min if end == "min" else max)(xs)

    pick.__name__ = f"detectable {'fade' if side == 0 else 'growth'} {end}"
    return pick


def change_pct(end: str) -> Callable[[dict[str, Any]], float]:
    """The detectable change per doubling in % (fade or growth, whichever is smaller/larger)."""

    def pick(recipes: dict[str, Any]) -> float:
        xs = [100 * abs(x - 1) for v in recipes.values() for x in v.get("detectable_per_doubling", ())]
        return (min if end == "min" else max)(xs)

    pick.__name__ = f"detectable change % {end}"
    return pick


def lowest(xs: dict[str, float]) -> float:
    return min(xs.values())


def highest(xs: dict[str, float]) -> float:
    return max(xs.values())


def _mc_width() -> tuple[Slot, ...]:
    """The headline width with ten times the draws, then its range over the bootstrap's other seeds."""
    return (
        at("headline_width.more_draws.width", ".3f"),
        at("headline_width.other_seeds", ".3f", lowest),
        at("headline_width.other_seeds", ".3f", highest),
    )


def _no_trend_and_curated() -> tuple[Slot, ...]:
    """The recipes called either way, of how many, over what span of compute, and curated's multiplier at
    each of the three points."""
    return (
        at("trend.recipes", "d", called_either_way),
        at("trend.recipes", "d", count),
        at("trend.compute_span", ".1f"),
        *(at(f"trend.recipes.curated.points.{i}.value") for i in range(3)),
    )


def _detectable_range() -> tuple[Slot, ...]:
    """The detectable fade per doubling, smallest and largest over the recipes, then the growth."""
    return tuple(
        at("trend.recipes", ".2f", _detectable(side, end)) for side in (0, 1) for end in ("min", "max")
    )


def middle_above_both(recipes: dict[str, Any]) -> int:
    return sum(
        v["points"][1]["value"] > max(v["points"][0]["value"], v["points"][2]["value"])
        for v in recipes.values()
    )


def total_cpu_s(points: list[dict[str, Any]]) -> float:
    return sum(p["cpu_s"] for p in points)


def plan_ratio(points: list[dict[str, Any]]) -> float:
    return total_cpu_s(points) / 53_600  # curate plan's price, quoted beside it


def count(xs: Any) -> int:
    return len(xs)


def called_pairs(pairs: list[dict[str, Any]]) -> int:
    return sum(p["called"] for p in pairs)


# A table, one quote per row with its slots beside it: kept as written, not reflowed.
# fmt: off
FIGURES: list[Figure] = [
    # BENCHMARKS.md §7: the null on fresh seeds, the demo point
    fig(BENCH,
        "demo point: null control, **independent replicates** (each draw its own {} fresh seeds of raw, "
        "curated and the null; seeds {}-{})",
        CAL, at("demo.per_draw.*.seeds", "d", seeds_per_draw), *_seed_range("demo.per_draw.*.seeds")),
    fig(BENCH,
        "**{} of {}** intervals contain 1 (95% CI of coverage [{}, {}]); pooled over the draws the null sits "
        "{} bpb from raw (CI {} to {})",
        CAL, *_calibration("demo")),
    fig(BENCH,
        "demo point: the detectable effect on those {} fresh seeds (never used to choose the point or lr) | "
        "sd of curated - raw {} bpb (df {})",
        CAL, at("demo.per_draw.*.seeds", "d", distinct_seeds), at("demo.sd_curated_minus_raw_bpb", ".4f"),
        at("demo.sd_dof", "d")),
    # ... the web reference point
    fig(BENCH,
        "web reference point: null control, independent replicates ({} fresh seeds per draw; seeds {}-{})",
        CAL, at("web.per_draw.*.seeds", "d", seeds_per_draw), *_seed_range("web.per_draw.*.seeds")),
    fig(BENCH,
        "**{} of {}** contain 1 (95% CI of coverage [{}, {}]); pooled over the draws the null sits {} bpb "
        "from raw (CI {} to {}); sd of curated - raw on those seeds {} bpb (df {})",
        CAL, *_calibration("web")[:5], at("web.null_mean_diff_ci95_over_draws.0", "+.4f"),
        at("web.null_mean_diff_ci95_over_draws.1", "+.4f"), at("web.sd_curated_minus_raw_bpb", ".3f"),
        at("web.sd_dof", "d")),
    # ... the planted control matched to the recipe, dose by dose
    fig(BENCH,
        "planted control **matched to the recipe** (the null's subsample, a share of it word-shuffled), {} "
        "fresh seeds ({}-{}) | {}: {} [{}, {}] bpb, {}; {}: {} [{}, {}], **{}**; {}: {} [{}, {}], **{}**",
        CAL, at("web_planted_matched.seeds", "d", len), at("web_planted_matched.seeds", "d", min),
        at("web_planted_matched.seeds", "d", max),
        *chain.from_iterable(
            (at(f"web_planted_matched.doses.{i}.fraction", ".0%"), *_dose(f"web_planted_matched.doses.{i}"),
             at(f"web_planted_matched.doses.{i}.called_worse", CALLED_WORSE))
            for i in range(3))),
    fig(BENCH,
        "demo point: the matched planted control at {} / {} / {}%, {} fresh seeds ({}-{}) | {} [{}, {}] / "
        "{} [{}, {}] bpb, {} / **{} [{}, {}], {}** ({}x)",
        CAL, *(at(f"demo_planted_matched.doses.{i}.fraction", ".0f", percent) for i in range(3)),
        at("demo_planted_matched.seeds", WORDS, len), at("demo_planted_matched.seeds", "d", min),
        at("demo_planted_matched.seeds", "d", max), *_dose("demo_planted_matched.doses.0"),
        *_dose("demo_planted_matched.doses.1"),
        at("demo_planted_matched.doses.1.called_worse", CALLED_WORSE), *_dose("demo_planted_matched.doses.2"),
        at("demo_planted_matched.doses.2.called_worse", CALLED_WORSE),
        at("demo_planted_matched.doses.2.multiplier.value")),
    # BENCHMARKS.md §8: the web mixture
    # BENCHMARKS.md §7, docs/goodput.md and pipelines/demo.yaml: the gate's error rates at the demo point
    fig(README, "this gate refused {} of {} healthy runs and {} of {} runs of a broken instrument",
        GATE_DEMO, *_rate("demo.summary.false_alarm_rate")[:2], *_rate("demo.summary.broken_catch_rate")[:2]),
    fig(README,
        "at the web\n  reference point {} of {} healthy runs (the planted control called in {} of {}) and {} of {} broken ones",
        GATE_WEB, *_rate("web.summary.false_alarm_rate")[:2], *_rate("web.summary.planted_power")[:2],
        *_rate("web.summary.broken_catch_rate")[:2]),
    fig(BENCH,
        "4 seeds each: {} healthy, seeds {}-{}, and {} with the instrument broken, `train.broken: shuffle_tokens`, "
        "seeds {}-{}; each healthy draw judged on the spread of the other {})",
        GATE_DEMO, at("demo.summary.draws", "d"), *_gate_seeds("demo", healthy=True),
        at("demo.summary.broken_catch_rate.n", "d"), *_gate_seeds("demo", healthy=False),
        at("demo.summary.draws", "d", one_less)),
    fig(BENCH,
        "**false alarms {} of {}: {} [{}, {}]** (the null not shown equivalent once); **broken instrument caught {} "
        "of {}: {} [{}, {}]**; the planted control called in **{} of {}: {} [{}, {}]**, its power by design {} at 4 "
        "seeds (dose {} bpb, sd {}, df {}), {} at 3 seeds",
        GATE_DEMO, *_rate("demo.summary.false_alarm_rate", ".3f"), *_rate("demo.summary.broken_catch_rate"),
        *_rate("demo.summary.planted_power"), at("demo.summary.planted_power_by_design"),
        at("demo.summary.planted_noise.effect", "+.4f"), at("demo.summary.planted_noise.sd", ".4f"),
        at("demo.summary.planted_noise.dof", "d"), at("demo.summary_at_3.planted_power_by_design")),
    fig(BENCH,
        "**judged where the run's sequential design stops on each draw** (3 seeds in {} draws, 4 in {}): false "
        "alarms {} of {}, broken caught {} of {}, planted called in {} of {}",
        GATE_DEMO, at("demo.summary_sequential.stopped_at.3", "d"), at("demo.summary_sequential.stopped_at.4", "d"),
        *_rate("demo.summary_sequential.false_alarm_rate")[:2], *_rate("demo.summary_sequential.broken_catch_rate")[:2],
        *_rate("demo.summary_sequential.planted_power")[:2]),
    fig(BENCH, "the null's bias, every healthy seed pooled ({}): **{} bpb [{}, {}]**",
        GATE_DEMO, at("demo.summary.null_minus_raw_pooled.n", "d"),
        *_interval("demo.summary.null_minus_raw_pooled", "+.4f")),
    fig(GOODPUT, "Pooled over\nthose {} fresh seeds the null sits {} bpb [{}, {}] from raw",
        GATE_DEMO, at("demo.summary.null_minus_raw_pooled.n", "d"),
        *_interval("demo.summary.null_minus_raw_pooled", "+.4f")),
    fig(GOODPUT,
        "over {} healthy draws of 4\nfresh seeds the gate refused {} (a false-alarm rate of {} [{}, {}]; the null "
        "not shown equivalent),\nit refused {} of {} draws trained on shuffled tokens ({} [{}, {}]), and the planted "
        "control was called\nin {} of {} ({} [{}, {}]; by design, from its dose of {} bpb and spread {}, {})",
        GATE_DEMO, at("demo.summary.draws", "d"), at("demo.summary.false_alarm_rate.k", "d"),
        *_rate("demo.summary.false_alarm_rate", ".3f")[2:], *_rate("demo.summary.broken_catch_rate"),
        *_rate("demo.summary.planted_power"), at("demo.summary.planted_noise.effect", "+.4f"),
        at("demo.summary.planted_noise.sd", ".4f"), at("demo.summary.planted_power_by_design")),
    fig("pipelines/demo.yaml",
        "false alarms {} of {}, broken instruments caught {} of {},\n  # the planted control called in {} of {} "
        "(its power by design at 4 seeds {}, at 3 seeds {}).\n  planted_noise: {sd: {}, dof: {}, effect: {}, "
        "source: \"planted - null on {} fresh draws (seeds {}-{})\"}",
        GATE_DEMO, *_rate("demo.summary.false_alarm_rate")[:2], *_rate("demo.summary.broken_catch_rate")[:2],
        *_rate("demo.summary.planted_power")[:2], at("demo.summary.planted_power_by_design"),
        at("demo.summary_at_3.planted_power_by_design"), at("demo.summary.planted_noise.sd", ".3f"),
        at("demo.summary.planted_noise.dof", "d"), at("demo.summary.planted_noise.effect", ".3f"),
        at("demo.summary.draws", "d"), *_gate_seeds("demo", healthy=True)),
    # BENCHMARKS.md §7, docs/goodput.md and pipelines/goodput_trust.yaml: the gate's error rates at the web point
    fig(BENCH,
        "6 seeds each: {} healthy, seeds {}-{}, and {} with the instrument broken, `train.broken: shuffle_tokens`, "
        "seeds {}-{}: the draws below at 60%, the planted control retrained at 80% on their seeds, raw, curated "
        "and the null the very same runs; each healthy draw judged on the spread of the other {})",
        GATE_WEB, at("web.summary.draws", "d"), *_gate_seeds("web", healthy=True),
        at("web.summary.broken_catch_rate.n", "d"), *_gate_seeds("web", healthy=False),
        at("web.summary.draws", "d", one_less)),
    fig(BENCH,
        "**false alarms {} of {}: {} [{}, {}]** ({} worded inconclusive, {} as blind or biased); **broken "
        "instrument caught {} of {}: {} [{}, {}]** ({} worded blind or biased); the planted control called in "
        "**{} of {}: {} [{}, {}]**, its power by design {} at 6 seeds (dose {} bpb, sd {}, df {})",
        GATE_WEB, *_rate("web.summary.false_alarm_rate", ".3f"), at("web.summary.false_alarm_inconclusive.k", "d"),
        at("web.summary.false_alarm_shown_blind.k", "d"), *_rate("web.summary.broken_catch_rate"),
        at("web.summary.broken_shown_blind.k", "d"), *_rate("web.summary.planted_power"),
        at("web.summary.planted_power_by_design"), at("web.summary.planted_noise.effect", "+.4f"),
        at("web.summary.planted_noise.sd", ".4f"), at("web.summary.planted_noise.dof", "d")),
    fig(BENCH,
        "**judged where the run's sequential design stops on each draw** ({} at 3 seeds, {} at 4 seeds, {} at 5 seeds): false alarms {} of {}: "
        "{} [{}, {}] ({} inconclusive), planted called in {} of {}, power by design {}",
        GATE_WEB, at("web.summary_sequential.stopped_at.3", "d"), at("web.summary_sequential.stopped_at.4", "d"), at("web.summary_sequential.stopped_at.5", "d"), *_rate("web.summary_sequential.false_alarm_rate", ".3f"),
        at("web.summary_sequential.false_alarm_inconclusive.k", "d"),
        *_rate("web.summary_sequential.planted_power")[:2], at("web.summary_sequential.planted_power_by_design")),
    fig(BENCH, "the web null's bias, every healthy seed pooled ({}): **{} bpb [{}, {}]**",
        GATE_WEB, at("web.summary.null_minus_raw_pooled.n", "d"),
        *_interval("web.summary.null_minus_raw_pooled", "+.4f")),
    fig(GOODPUT,
        "80%: over {} healthy draws of 6 fresh seeds the gate refused {} (a false-alarm rate of {} [{}, {}]), it\n"
        "refused {} of {} draws trained on shuffled tokens ({} [{}, {}]), and the planted control was called in\n"
        "{} of {} ({} [{}, {}]; by design {})",
        GATE_WEB, at("web.summary.draws", "d"), at("web.summary.false_alarm_rate.k", "d"),
        *_rate("web.summary.false_alarm_rate", ".3f")[2:],
        *_rate("web.summary.broken_catch_rate"), *_rate("web.summary.planted_power"),
        at("web.summary.planted_power_by_design")),
    fig(GOODPUT,
        "({} at 3 seeds, {} at 4 seeds, {} at 5 seeds), as the run applies it, it refused {} of {} healthy draws "
        "({} [{}, {}]), and the\nplanted control was called in {} of {} (by design {})",
        GATE_WEB, at("web.summary_sequential.stopped_at.3", "d"), at("web.summary_sequential.stopped_at.4", "d"),
        at("web.summary_sequential.stopped_at.5", "d"), *_rate("web.summary_sequential.false_alarm_rate", ".3f"),
        *_rate("web.summary_sequential.planted_power")[:2], at("web.summary_sequential.planted_power_by_design")),
    fig(GOODPUT, "Pooled over the {} healthy seeds the null sits\n{} bpb [{}, {}] from raw",
        GATE_WEB, at("web.summary.null_minus_raw_pooled.n", "d"),
        *_interval("web.summary.null_minus_raw_pooled", "+.4f")),
    fig(GOODPUT,
        "At 60% (`gate-web-60.json`, the same draws) the gate refused\n{} of {}, each a planted miss (called in {} "
        "of {})",
        GATE_WEB60, *_rate("web.summary.false_alarm_rate")[:2], *_rate("web.summary.planted_power")[:2]),
    # BENCHMARKS.md §7 and docs/goodput.md: the web gate on fully fresh draws
    fig(BENCH,
        "6 each, {} draws, seeds {}-{}; each judged on the spread of the other {}) | false alarms **{} of {}: {} "
        "[{}, {}]**; the planted control called in **{} of {}: {} [{}, {}]** (power by design {} at 6 seeds); where "
        "the sequential design stops",
        GATE_FRESH, at("web.summary.draws", "d"), *_gate_seeds("web", healthy=True), at("web.summary.draws", "d", one_less),
        *_rate("web.summary.false_alarm_rate", ".3f"), *_rate("web.summary.planted_power"),
        at("web.summary.planted_power_by_design")),
    fig(BENCH, "false alarms {} of {}, planted called in {} of {} | `python benchmarks/gate_draws.py RUN --point web "
        "--planted 0.8 --draws 20 --seeds 6 --first-seed 4200 --out benchmarks/results/gate-web-fresh.json` (stopped "
        "after {} draws",
        GATE_FRESH, *_rate("web.summary_sequential.false_alarm_rate")[:2],
        *_rate("web.summary_sequential.planted_power")[:2], at("web.summary.draws", "d")),
    fig(GOODPUT,
        "On {} fully fresh draws (every arm trained on seeds {}-{}, no run\nreused; `gate-web-fresh.json`) it refused "
        "{} of {} and called the planted control in {} of {}",
        GATE_FRESH, at("web.summary.draws", "d"), *_gate_seeds("web", healthy=True),
        *_rate("web.summary.false_alarm_rate")[:2], *_rate("web.summary.planted_power")[:2]),
    # BENCHMARKS.md §7: the web gate with the planted control at 60%, before
    fig(BENCH,
        "| false alarms {} of {}: {} [{}, {}] (both the planted control missed), the planted control called in {} "
        "of {}: {} [{}, {}], power by design {} at 6 seeds and {} where the sequential design stops",
        GATE_WEB60, *_rate("web.summary.false_alarm_rate", ".3f"), *_rate("web.summary.planted_power"),
        at("web.summary.planted_power_by_design"), at("web.summary_sequential.planted_power_by_design")),
    fig("pipelines/goodput_trust.yaml",
        "false alarms {} of {}, broken instruments caught\n  # {} of {}, the planted control called in {} of {} (its "
        "power by design at 6 seeds {}, where the\n  # sequential design stops {}: a miss there reads inconclusive, "
        "not blind).\n  planted_noise: {sd: {}, dof: {}, effect: {}, source: \"planted - null on {} fresh draws "
        "(seeds {}-{})\"}",
        GATE_WEB, *_rate("web.summary.false_alarm_rate")[:2], *_rate("web.summary.broken_catch_rate")[:2],
        *_rate("web.summary.planted_power")[:2], at("web.summary.planted_power_by_design"),
        at("web.summary_sequential.planted_power_by_design"), at("web.summary.planted_noise.sd", ".3f"),
        at("web.summary.planted_noise.dof", "d"), at("web.summary.planted_noise.effect", ".3f"),
        at("web.summary.draws", "d"), *_gate_seeds("web", healthy=True)),
    # the transfer study's size, by design
    fig(BENCH,
        "eleven recipes give a headline interval about {} wide at 4 seeds at the main point and 6 at\nthe top, "
        "{} with 16 at the main point; twenty-five recipes with 8 and 6 seeds {} ({}% of {} simulated\nstudies "
        "within 0.25)",
        DESIGN, _design(11, 4, 6, "width_mean"), _design(11, 16, 6, "width_mean"), _design(25, 8, 6, "width_mean"),
        _design(25, 8, 6, "width_at_most_floor", ".0f%"), _design(25, 8, 6, "studies", "d")),
    fig(GOODPUT,
        "With eleven recipes the weighted\naccuracy's interval comes out about {} wide at 4 seeds at the main point "
        "and 6 at the top, and still {}\nwith 16 at the main point: no number of seeds brings it to 0.25. Twenty "
        "recipes with 8 seeds at the main\npoint and 6 at the top give {} ({}% of {} simulated studies within 0.25), "
        "twenty-five {} ({}%)",
        DESIGN, _design(11, 4, 6, "width_mean"), _design(11, 16, 6, "width_mean"), _design(20, 8, 6, "width_mean"),
        _design(20, 8, 6, "width_at_most_floor", ".0f%"), _design(20, 8, 6, "studies", "d"),
        _design(25, 8, 6, "width_mean"), _design(25, 8, 6, "width_at_most_floor", ".0f%")),
    fig("pipelines/transfer_ladder.yaml",
        "With the first eleven its width came out by design at about {} whatever the seeds; 25\n# recipes with 8 "
        "seeds at the main point and 6 at the top give about {}, every one of {} simulated studies\n# within 0.25 "
        "(20 recipes: {}, {}% within;",
        DESIGN, _design(11, 4, 6, "width_mean"), _design(25, 8, 6, "width_mean"), _design(25, 8, 6, "studies", "d"),
        _design(20, 8, 6, "width_mean"), _design(20, 8, 6, "width_at_most_floor", ".0f%")),
    fig(BENCH,
        "{} at 8 and 6 seeds ({}% of {} within 0.25;",
        DESIGN25, _design(25, 8, 6, "width_mean"), _design(25, 8, 6, "width_at_most_floor", ".0f%"),
        _design(25, 8, 6, "studies", "d")),
    fig(GOODPUT,
        "(`benchmarks/results/transfer_design-web-25.json`): {} at 8 and 6 seeds, {}% of {} simulated studies\nwithin 0.25",
        DESIGN25, _design(25, 8, 6, "width_mean"), _design(25, 8, 6, "width_at_most_floor", ".0f%"),
        _design(25, 8, 6, "studies", "d")),
    fig("pipelines/transfer_ladder.yaml",
        "had run them: {}, {}% of {} simulated studies within 0.25",
        DESIGN25, _design(25, 8, 6, "width_mean"), _design(25, 8, 6, "width_at_most_floor", ".0f%"),
        _design(25, 8, 6, "studies", "d")),
    # the transfer study's answer
    fig(README,
        "the reference point orders **{} [{}, {}]** of them as it does and the 4x point {} [{}, {}]; the 30.5x "
        "point against itself on split seeds (the noise ceiling: a cheap point that ranks exactly as it does, "
        "seen through seed noise) reaches {} [{}, {}], a coin 50%.",
        STUDY, *_share(f"{MAIN_ACC}.all_pairs_weighted"), *_share(f"{MID_ACC}.all_pairs_weighted"),
        *_share("noise_ceiling.all_pairs_weighted")),
    fig(README,
        "On the {} pairs the 30.5x point calls after Holm's adjustment, the reference point orders {} [{}, {}] alike",
        STUDY, at("pairs", "d", called_pairs), *_share(f"{MAIN_ACC}.called")),
    fig(README, "(the 4x point is not shown better: {} points [{}, {}])", STUDY, *_points(DIFF)),
    fig(README,
        "No filter fades or grows with compute: {} of {} recipes either way over {}x of compute (curated {}x, {}x, "
        "{}x at the three points), each test detecting a change of about {}-{}% a doubling",
        STUDY, *_no_trend_and_curated(),
        at("trend.recipes", ".0f", change_pct("min")), at("trend.recipes", ".0f", change_pct("max"))),
    fig(BENCH,
        "the reference point **{} [{}, {}]**, the 4x point **{} [{}, {}]**; the noise ceiling (the 30.5x point's "
        "seeds in halves, {} splits) {} [{}, {}]; chance 50%. On the {} pairs the 30.5x point calls after Holm: {} "
        "[{}, {}] and {} [{}, {}]. The headline interval is {} wide",
        STUDY, *_share(f"{MAIN_ACC}.all_pairs_weighted"), *_share(f"{MID_ACC}.all_pairs_weighted"),
        at("noise_ceiling.splits", "d"), *_share("noise_ceiling.all_pairs_weighted"),
        at(f"{MAIN_ACC}.called.pairs", "d"), *_share(f"{MAIN_ACC}.called"), *_share(f"{MID_ACC}.called"),
        at(f"{MAIN_ACC}.all_pairs_weighted", ".3f", width)),
    fig(BENCH,
        "(4x minus it: {} points [{}, {}], not shown better). Trend: over {}x of compute (3 points): {} of {} "
        "recipes fade (Holm, 5%), {} grow, {} show no trend either way at these seeds; the change per doubling "
        "each test detects with 80% power is x{}-x{} or x{}-x{}. CPU-seconds per point {} / {} / {} ({} in all;",
        STUDY, *_points(DIFF), at("trend.compute_span", ".1f"), at("trend.recipes", "d", verdicts("fades")),
        at("trend.recipes", "d", count), at("trend.recipes", "d", verdicts("grows")),
        at("trend.recipes", "d", verdicts("not_shown")), *_detectable_range(),
        *(at(f"points.{i}.cpu_s", ",.0f") for i in range(3)), at("points", ",.0f", total_cpu_s)),
    fig(GOODPUT,
        "| proxy_1m@294,912 (the web reference point) | 1x | {} | {} | **{} [{}, {}]** | {} [{}, {}] |",
        STUDY, at("points.0.cpu_s", ",.0f"), at("points.0.seeds", "d", count),
        *_share(f"{MAIN_ACC}.all_pairs_weighted"), *_share(f"{MAIN_ACC}.called")),
    fig(GOODPUT,
        "| proxy_1m@1,179,648 | 4x | {} | {} | {} [{}, {}] | {} [{}, {}] |",
        STUDY, at("points.1.cpu_s", ",.0f"), at("points.1.seeds", "d", count),
        *_share(f"{MID_ACC}.all_pairs_weighted"), *_share(f"{MID_ACC}.called")),
    fig(GOODPUT, "| proxy_5m@1,638,400 | 30.5x | {} | {} | reference |",
        STUDY, at("points.2.cpu_s", ",.0f"), at("points.2.seeds", "d", count)),
    fig(GOODPUT,
        "The noise ceiling, the 30.5x point's seeds in halves ({} splits), is {} [{}, {}] over every pair and\n{} "
        "on its calls",
        STUDY, at("noise_ceiling.splits", "d"), *_share("noise_ceiling.all_pairs_weighted"),
        at("noise_ceiling.called.value", ".0%")),
    fig(GOODPUT,
        "The reference point orders {}\n  of the weight of the pairs as the 30.5x point does; a cheap point that "
        "ranked exactly as the 30.5x point\n  does, seen through its seed noise, would reach {}, and the two "
        "intervals overlap. Every one of the {}\n  pairs",
        STUDY, at(f"{MAIN_ACC}.all_pairs_weighted.value", ".0%"), at("noise_ceiling.all_pairs_weighted.value", ".0%"),
        at("pairs", "d", called_pairs)),
    fig(GOODPUT,
        "**The headline interval is {} wide** at the study's 2,000 draws, **{} with 20,000** ({}-{}",
        STUDY, at(f"{MAIN_ACC}.all_pairs_weighted", ".3f", width), *_mc_width()),
    fig(BENCH, "{} with 20,000 ({}-{} at five other seeds of the same bootstrap)", STUDY, *_mc_width()),
    fig(BENCH,
        "on the twenty-five measured recipes the interval is {} wide at 8 and 6 seeds, {} at 16 and 6,\n{} at 4 and "
        "12: more seeds do not narrow it, the recipes set it; thirty recipes drawn from their measured\nspread give "
        "{} at 8 and 6",
        DESIGN_TOP, _design(25, 8, 6, "width_mean", ".3f"), _design(25, 16, 6, "width_mean", ".3f"),
        _design(25, 4, 12, "width_mean", ".3f"), _design(30, 8, 6, "width_mean", ".3f")),
    fig(GOODPUT,
        "the twenty-five measured recipes give {} at 8 and 6\n  seeds, {} at 16 and 6 and {} at 4 and 12",
        DESIGN_TOP, _design(25, 8, 6, "width_mean", ".3f"), _design(25, 16, 6, "width_mean", ".3f"),
        _design(25, 4, 12, "width_mean", ".3f")),
    fig(README, "The headline interval is {} wide ({} with 20,000 bootstrap draws)",
        STUDY, at("headline_width.more_draws.width", ".2f"), at("headline_width.more_draws.width", ".3f")),
    fig(GOODPUT, "(the difference {} points, [{}, {}])", STUDY, *_points(DIFF)),
    fig(GOODPUT,
        "the null sits at 1 at the reference point ({}x) and at 30.5x ({}x) but is called\n  better at the 4x point "
        "({}x [{}, {}], {} seeds)",
        STUDY, at("points.0.recipes.null.multiplier.value"), at("points.2.recipes.null.multiplier.value"),
        at("points.1.recipes.null.multiplier.value"), at("points.1.recipes.null.multiplier.ci_low"),
        at("points.1.recipes.null.multiplier.ci_high"), at("points.1.seeds", "d", count)),
    fig(GOODPUT,
        "only at 30.5x ({}x [{}, {}]); at the cheaper points it is not called ({}x, {}x)",
        STUDY, at("points.2.recipes.planted.multiplier.value"), at("points.2.recipes.planted.multiplier.ci_low"),
        at("points.2.recipes.planted.multiplier.ci_high"), at("points.0.recipes.planted.multiplier.value"),
        at("points.1.recipes.planted.multiplier.value")),
    fig(GOODPUT,
        "{} of {} recipes either way over {}x of\n  compute (Holm, 5%); curated's multiplier is {}x, {}x and {}x "
        "at the three points, x{} a doubling\n  [{}, {}]",
        STUDY, *_no_trend_and_curated(),
        at("trend.recipes.curated.ratio_per_doubling", ".3f"), at("trend.recipes.curated.ci.0", ".3f"),
        at("trend.recipes.curated.ci.1", ".3f")),
    fig(GOODPUT,
        "would have called a fade of x{} to\n  x{} a doubling (x{} to x{} for growth)",
        STUDY, *_detectable_range()),
    fig(GOODPUT, "above both neighbours for {} of the {} recipes (curated {}x)",
        STUDY, at("trend.recipes", "d", middle_above_both), at("trend.recipes", "d", count),
        at("trend.recipes.curated.points.1.value")),
    fig(GOODPUT,
        "Measured: {} CPU-seconds of training ({}, {} and {} at the\nthree points), {}x the plan",
        STUDY, at("points", ",.0f", total_cpu_s), *(at(f"points.{i}.cpu_s", ",.0f") for i in range(3)),
        at("points", ".1f", plan_ratio)),
    fig("curate/report/trust.py", "it orders {} [{}, {}] of the pairs as the 30.5x point does, ",
        STUDY, *_share(f"{MAIN_ACC}.all_pairs_weighted")),
    fig("curate/report/trust.py", "against a noise ceiling of {} [{}, {}] and chance 50%, ",
        STUDY, *_share("noise_ceiling.all_pairs_weighted")),
    fig("curate/report/trust.py", "and all {} pairs the 30.5x point calls", STUDY, at("pairs", "d", called_pairs)),
    # BENCHMARKS.md §7: the web planted control's dose and construction
    fig(BENCH,
        "words shuffled over the document: 60% **{}** bpb, 80% **{}**, 90% **{}** ({} seeds each): the effect "
        "saturates; letters shuffled within each word: 20% **{}** ({} seeds), 40% {} ({} seeds)",
        GATE_DOSE, at("web-p60.draws", "+.3f", planted_minus_null), at("web-p80.draws", "+.3f", planted_minus_null),
        at("web-p90.draws", "+.3f", planted_minus_null), at("web-p60.draws", "d", seeds_in),
        at("web-L20.draws", "+.3f", planted_minus_null), at("web-L20.draws", "d", seeds_in),
        at("web-L40.draws", "+.3f", planted_minus_null), at("web-L40.draws", "d", seeds_in)),
    # BENCHMARKS.md §8: the data-limited arm at the demo point
    fig(README,
        "toward_target, worth {} by yield x multiplier, repeated {} times beats raw trained once\n  {}x [{}, {}]",
        DL, at("demo.recipes.toward_target.goodput_trained_once.value"),
        at("demo.data_limited.1.epochs_at_T.recipe", ".1f"), *_interval("demo.data_limited.1.goodput")),
    fig(GOODPUT,
        "toward_target repeated {} times beats raw trained\nonce by {}x [{}, {}] the fresh tokens (called), where "
        "`yield × m` says {}; at k = 4 curated repeated\n{} times beats raw repeated 4 times ({}x [{}, {}], called)",
        DL, at("demo.data_limited.1.epochs_at_T.recipe", ".1f"), *_interval("demo.data_limited.1.goodput"),
        at("demo.recipes.toward_target.goodput_trained_once.value"),
        at("demo.data_limited.3.epochs_at_T.recipe", ".1f"), *_interval("demo.data_limited.3.goodput")),
    fig(BENCH,
        "k = {}: toward_target repeated {} times **beats raw once: {}x [{}, {}] the fresh tokens, called** ({} bpb "
        "[{}, {}]), where yield x multiplier says {}; curated repeated {} times {}x [{}, {}], not called",
        DL, at("demo.data_limited.1.k", ".0f"), at("demo.data_limited.1.epochs_at_T.recipe", ".1f"),
        *_interval("demo.data_limited.1.goodput"), *_interval("demo.data_limited.1.diff_bpb", "+.4f"),
        at("demo.recipes.toward_target.goodput_trained_once.value"),
        at("demo.data_limited.0.epochs_at_T.recipe", ".1f"), *_interval("demo.data_limited.0.goodput")),
    fig(BENCH,
        "k = {}: curated repeated {} times against raw {} times **{}x [{}, {}], called**; toward_target repeated {} "
        "times {}x to {}x, not called (its per-seed spread {} bpb)",
        DL, at("demo.data_limited.3.k", ".0f"), at("demo.data_limited.3.epochs_at_T.recipe", ".1f"),
        at("demo.data_limited.3.epochs_at_T.baseline", ".1f"), *_interval("demo.data_limited.3.goodput"),
        at("demo.data_limited.4.epochs_at_T.recipe", ".1f"), at("demo.data_limited.4.goodput.ci_low"),
        at("demo.data_limited.4.goodput.ci_high"), at("demo.data_limited.4.diff_bpb.sd", ".3f")),
    fig(BENCH,
        "the arm's null within +-{} bpb of raw's pool at both k; repetition on this proxy: {} epochs worth {}x [{}, "
        "{}] of fresh data (Muennighoff's fit {}), {} epochs {}x [{}, {}] ({})",
        DL, at("demo.data_limited", ".4f", nulls_margin),
        at("demo.repetition_curve.points.2.epochs_at_T", ".0f"),
        *_interval("demo.repetition_curve.points.2.fresh_equivalent"),
        at("demo.repetition_curve.points.2.muennighoff"),
        at("demo.repetition_curve.points.4.epochs_at_T", ".1f"),
        *_interval("demo.repetition_curve.points.4.fresh_equivalent"),
        at("demo.repetition_curve.points.4.muennighoff")),
    # BENCHMARKS.md §8 and docs/goodput.md: the data-limited arm at the web point (its k = 1 null separates)
    fig(BENCH,
        "6 fresh seeds, {}-{}, {} proxy runs, {} CPU-s) | **negative at k = 1**: the arm's null (a random subset of "
        "raw's pool repeated {} times) **separates from raw's pool: {} bpb [{}, {}]**",
        DL, at("web.seeds", "d", min), at("web.seeds", "d", max), at("web.runs", "d"), at("web.device_s", ",.0f"),
        at("web.data_limited.1.epochs_at_T.recipe", ".1f"), *_interval("web.data_limited.1.diff_bpb", "+.4f")),
    fig(BENCH,
        "(curated repeated {} times read {}x [{}, {}], not a decision); k = {}: curated repeated {} times against "
        "raw {} times {}x [{}, {}], **not called**, the null within +-{} bpb of raw's pool (90% CI {} to {})",
        DL, at("web.data_limited.0.epochs_at_T.recipe", ".1f"), *_interval("web.data_limited.0.goodput"),
        at("web.data_limited.2.k", ".0f"), at("web.data_limited.2.epochs_at_T.recipe", ".1f"),
        at("web.data_limited.2.epochs_at_T.baseline", ".1f"), *_interval("web.data_limited.2.goodput"),
        at("web.data_limited.3.equivalence.margin", ".4f"), at("web.data_limited.3.equivalence.ci_low", "+.4f"),
        at("web.data_limited.3.equivalence.ci_high", "+.4f")),
    fig(BENCH,
        "repetition on this proxy: {} epochs worth {}x [{}, {}] of fresh data (Muennighoff's fit {}), {} epochs {}x "
        "[{}, {}] ({}) | 6 seeds: about 0.07 bpb per pair (curated's per-seed sd {}-{}, t at df 5)",
        DL, at("web.repetition_curve.points.3.epochs_at_T", ".0f"),
        *_interval("web.repetition_curve.points.3.fresh_equivalent"),
        at("web.repetition_curve.points.3.muennighoff"), at("web.repetition_curve.points.4.epochs_at_T", ".1f"),
        *_interval("web.repetition_curve.points.4.fresh_equivalent"),
        at("web.repetition_curve.points.4.muennighoff"), at("web.data_limited.2.diff_bpb.sd", ".3f"),
        at("web.data_limited.0.diff_bpb.sd", ".3f")),
    fig(GOODPUT,
        "arm's null, a random subset of raw's pool repeated {} times, separated from raw's pool trained once\n"
        "({} bpb [{}, {}])",
        DL, at("web.data_limited.1.epochs_at_T.recipe", ".1f"), *_interval("web.data_limited.1.diff_bpb", "+.4f")),
    fig(GOODPUT,
        "at k = 4 the null was within its margin (+-{} bpb) and curated repeated {} times\nagainst raw repeated {} "
        "times was not called ({}x [{}, {}]). On these sources {} epochs of raw's pool\nare worth {}x [{}, {}] of "
        "fresh data where Muennighoff et al.'s fit says {}",
        DL, at("web.data_limited.3.equivalence.margin", ".4f"), at("web.data_limited.2.epochs_at_T.recipe", ".1f"),
        at("web.data_limited.2.epochs_at_T.baseline", ".1f"), *_interval("web.data_limited.2.goodput"),
        at("web.repetition_curve.points.3.epochs_at_T", ".0f"),
        *_interval("web.repetition_curve.points.3.fresh_equivalent"),
        at("web.repetition_curve.points.3.muennighoff")),
    # BENCHMARKS.md §8: the mixture search on the web's sources and on sources of different kinds
    fig(BENCH, "web mixture ({} sources, `curate mix`: {} candidates spread over the simplex",
        MIX, at("sources", "d", len), at("design.spread", "d")),
    fig(BENCH, "each source alone at half the budget, {} proxy runs, {} CPU-min in all; {} fresh seeds",
        MIX, at("proxy_runs", "d"), at("cpu_min_total", ".1f"), at("vs_best_single.diff_bpb.n", "d")),
    fig(BENCH,
        "held-out Spearman **{} [{}, {}]** on {} mixtures ({}, chosen by held-out error), **permutation p = {}** "
        "({} refits), split-seed noise ceiling {} ({} mixtures)",
        MIX, at("heldout_spearman.value"), at("heldout_spearman.ci.0"), at("heldout_spearman.ci.1"),
        at("heldout_spearman.held_out", "d"), at("model", {"gbm": "gbm", "loglinear": "loglinear"}),
        at("permutation_p", ".3f"), at("n_perm", "d"), at("noise_ceiling.ceiling"),
        at("noise_ceiling.mixtures", "d")),
    fig(BENCH, "the chosen mixture vs the natural one {}x [{}, {}], {}, so the search says keep the natural mixture",
        MIX, *_interval("vs_natural.multiplier"), at("vs_natural.call", CALL)),
    fig(BENCH, "c4_en alone vs natural {}x [{}, {}]; the export", MIX, *_interval("best_single_vs_natural")),
    fig(BENCH, "every source within {} of its weight; with candidates", MIX, at("export_max_rel_error", ".3%")),
    fig(BENCH, "near the natural mixture (2026-12-06, 7d2522d) the held-out Spearman was {} |",
        MIX_BEFORE, at("spearman.value")),
    fig(BENCH, "| {}x / {}x | `.venv/bin/python benchmarks/mix_search.py --out runs/bench_mix --json",
        MIX, at("mde_multiplier.worse"), at("mde_multiplier.better")),
    fig(BENCH,
        "{} spread candidates + natural + each alone, {} proxy runs, {} CPU-min in all; {} fresh seeds) | "
        "held-out Spearman **{} [{}, {}]** on {} mixtures ({}), permutation p = {}, noise ceiling {}; **the "
        "chosen mixture beats the natural one: {}x [{}, {}], {}** (p = {}), and the best single source ({}) "
        "{}x [{}, {}], {} (p = {})",
        MIX_KINDS, at("design.spread", "d"), at("proxy_runs", "d"), at("cpu_min_total", ".1f"),
        at("vs_best_single.diff_bpb.n", "d"), at("heldout_spearman.value"), at("heldout_spearman.ci.0"),
        at("heldout_spearman.ci.1"), at("heldout_spearman.held_out", "d"),
        at("model", {"gbm": "gbm", "loglinear": "loglinear"}), at("permutation_p", ".3f"),
        at("noise_ceiling.ceiling"), *_interval("vs_natural.multiplier"), at("vs_natural.call", CALL),
        at("vs_natural.p_value", ".3f"), at("best_single", {"c4_en": "c4_en"}),
        *_interval("vs_best_single.multiplier"), at("vs_best_single.call", CALL),
        at("vs_best_single.p_value", ".3f")),
    fig(BENCH, "(python_docs at {}, sampled {} to {})",
        MIX_KINDS, at("chosen_region.outside_range.python_docs.weight", ".3f"),
        at("chosen_region.outside_range.python_docs.sampled.0", ".3f"),
        at("chosen_region.outside_range.python_docs.sampled.1", ".3f")),
    fig(BENCH, "export: every source within {} of its weight | {}x / {}x |",
        MIX_KINDS, at("export_max_rel_error", ".3%"), at("mde_multiplier.worse"), at("mde_multiplier.better")),
    # BENCHMARKS.md §10: PII, the two labelled sets
    fig(BENCH, "**Planted** (held out): {} web documents, {} planted values",
        PLANTED, at("speed.planted.docs", ","), at("ours.*.planted", ",", sum)),
    fig(BENCH, "**Phones on real text**: {} candidates", PHONES, at(f"{DEFAULT}.candidates", ",")),
    fig(BENCH, "({} phone numbers, {} look-alikes:",
        PHONES, at(f"{DEFAULT}.phones", ","), at(f"{DEFAULT}.not_phones", ",")),
    fig(BENCH,
        "(n = {} in scope: whole NANP and GB numbers, any with `+`) | recall in scope **{}** [{}, {}] (NANP "
        "{}/{}, GB {}/{}, `+` {}/{}); of all {} phone numbers {}",
        PHONES, at(f"{DEFAULT}.in_scope.n", "d"), *_recall(f"{DEFAULT}.in_scope"),
        *(at(f"{DEFAULT}.in_scope_by_region.{r}.{k}", "d")
          for r in ("NANP", "GB", "intl") for k in ("found", "n")),
        at(f"{DEFAULT}.all_phones.n", "d"), at(f"{DEFAULT}.all_phones.recall", ".3f")),
    fig(BENCH,
        "(not claimed: {} run into a price or word, {} malformed, {} without area code, {} `44` without `+`, "
        "{} with letters, {} national numbers of {} other regions); precision **{}** ({} false positives in "
        "{} look-alikes",
        PHONES,
        *(at(f"{DEFAULT}.by.form={f}.n", "d") for f in ("glued", "malformed", "local7", "noplus", "vanity")),
        at(f"{DEFAULT}.by", "d", other_region_numbers), at(f"{DEFAULT}.by", "d", other_regions),
        at(f"{DEFAULT}.precision", ".3f"), at(f"{DEFAULT}.false_positives", "d"),
        at(f"{DEFAULT}.not_phones", ",")),
    fig(BENCH, "the code before, same run: recall in scope {}, of all {}, precision {}",
        PHONES, at("baseline/contexts.in_scope.recall", ".3f"),
        at("baseline/contexts.all_phones.recall", ".3f"),
        at("baseline/contexts.precision", ".3f")),
    fig(BENCH,
        "widened to the sample's {} regions (US, GB and {} others) | recall in scope {}, of all {}; "
        "precision **{}**: {} year ranges",
        PHONES, at("regions_widened", "d", len), at("regions_widened", "d", less_us_and_gb),
        at(f"{WIDE}.in_scope.recall", ".3f"), at(f"{WIDE}.all_phones.recall", ".3f"),
        at(f"{WIDE}.precision", ".3f"), at(f"{WIDE}.false_positives", "d")),
    # ... spans on real text before and after the phone forms
    fig(BENCH, "Python docs {} -> {} ({} phones both); Wikipedia ({} M words) {} -> {}: {} phones more",
        PHONE_FP, *_not_emails(PY), at(PY, "d", phones_before_and_after),
        at(f"{WIKI}.words", ".1f", per_million), *_not_emails(WIKI), at(WIKI, "d", phones_more_after)),
    fig(BENCH,
        "Linux kernel docs (Debian `linux-doc-6.1` 6.1.176, {} M words) {} -> {} ({} phones both); demo "
        "corpus {} -> {}",
        PHONE_FP, at(f"{KERNEL}.words", ".2f", per_million), *_not_emails(KERNEL),
        at(KERNEL, "d", phones_before_and_after), *_not_emails(DEMO)),
    fig(BENCH,
        "planted set after the phone forms | recall {} on every type but IP {} (as before); phone precision "
        "{}: {} false positive",
        PLANTED, at("ours", ".3f", other_types_recall), at("ours.ip.recall", ".3f"),
        at("ours.phone.precision", ".3f"), at("ours.phone.fp", "d")),
    fig(BENCH,
        "({} interleaved repeats, medians) | {}, the code before {} ({}x); web text {} vs {} (noise at this "
        "load) | datatrove `PIIFormatter`: **{}x** (web text {}x)",
        SPEED, at("*", "d", repeats), at("planted", ",.0f", docs_per_s("pii_v1_all")),
        at("planted", ",.0f", docs_per_s("baseline_tree_all")), at("planted", ".2f", median_speedup),
        at("original", ",.0f", docs_per_s("pii_v1_all")),
        at("original", ",.0f", docs_per_s("baseline_tree_all")),
        at("planted.ratio_datatrove_over_pii_v1_all", ".2f", statistics.median),
        at("original.ratio_datatrove_over_pii_v1_all", ".2f", statistics.median)),
    # docs/own-data.md: what PII's recall rests on
    fig(OWN, "({} phone numbers among {} candidates) recall is {} [{}, {}] on the {} it claims",
        PHONES, at(f"{DEFAULT}.phones", ","), at(f"{DEFAULT}.candidates", ","),
        *_recall(f"{DEFAULT}.in_scope"),
        at(f"{DEFAULT}.in_scope.n", "d")),
    fig(OWN, "{} of all of them, precision {};",
        PHONES, at(f"{DEFAULT}.all_phones.recall", ".3f"), at(f"{DEFAULT}.precision", ".3f")),
    fig(OWN, "The other {} types (`benchmarks/bench_pii.py`): recall {} (IP {})",
        PLANTED, at("ours", {6: "six"}, not_phone_types), at("ours", ".3f", other_types_recall),
        at("ours.ip.recall", ".3f")),
    # docs/goodput.md: seeds until decided, simulated
    fig(GOODPUT, "Simulated on {} families per row", SEQ, at("draws", ",")),
    fig(GOODPUT, "for design effects of {}, {} and {} standard deviations and families of {} and {} recipes",
        SEQ, *(at("rows.*.effect_sd", ".1f", sorted_distinct(i)) for i in range(3)),
        *(at("rows.*.pairs", "d", sorted_distinct(i)) for i in range(2))),
    fig(GOODPUT,
        "is at most {} (the fixed design's {}-{}), the power within {} points of the fixed design's, and the "
        "seeds per decision {}-{} of its",
        SEQ, at("family_error", ".3f"), at("rows.*.family_error_fixed", ".3f", min),
        at("rows.*.family_error_fixed", ".3f", max), at("power", ".1f", points_below_fixed),
        at("rows.*.cpu_ratio", ".2f", min), at("rows.*.cpu_ratio", ".2f", max)),
    fig(GOODPUT, "calibrated one the family error rises to about {},",
        SEQ, at("rows.*.family_error_spread_1.2", ".2f", statistics.fmean)),
    # ... the null on fresh seeds
    fig(GOODPUT,
        "the null's interval contains 0 in **{} of {}** draws at the demo point and **{} of {}** at the web "
        "reference point (95% CI of coverage [{}, {}] at each); pooled over the draws the null sits {} bpb "
        "from raw at the demo (CI {} to {}) and {} at the web point (CI {} to {}). The demo's detectable "
        "effect on those {} seeds",
        CAL, *_calibration("demo")[:2], *_calibration("web")[:2], *_calibration("demo")[2:],
        at("web.null_mean_diff_bpb", "+.4f"), at("web.null_mean_diff_ci95_over_draws.0", "+.4f"),
        at("web.null_mean_diff_ci95_over_draws.1", "+.4f"), at("", "d", fresh_seeds_each_point)),
    fig(GOODPUT, "(95% CI of coverage [{}, {}] at each)", CAL, *_calibration("web")[2:4]),
]
# fmt: on


@cache
def _doc(path: str) -> str:
    return (ROOT / path).read_text()


@cache
def _results(name: str) -> Any:
    return json.loads((RESULTS / name).read_text())


def _regex(f: Figure) -> re.Pattern[str]:
    """The quote's text as written (any run of whitespace for a space), a group for each figure."""
    literal = f.quote.split("{}")
    assert len(literal) == len(f.slots) + 1, f"{f.quote!r}: {len(literal) - 1} slots, {len(f.slots)} keys"
    out = []
    for i, text in enumerate(literal):
        out += [r"\s+" if t.isspace() else re.escape(t) for t in re.split(r"(\s+)", text) if t]
        if i < len(f.slots):
            out.append(f"({f.slots[i].pattern()})")
    return re.compile("".join(out))


def problems(f: Figure, text: str) -> list[str]:
    """What `text` (the document) quotes differently from the file; empty when every figure agrees."""
    where = f"{f.doc}, the quote {f.quote!r}"
    data = _results(f.file)
    want = []
    for slot in f.slots:
        try:
            value = slot.value(data)
            want.append((value, slot.render(value)))
        except (KeyError, ValueError, TypeError, IndexError) as e:
            return [f"{where}: benchmarks/results/{f.file} {slot.name()} cannot be read ({e})"]
    found = list(_regex(f).finditer(text))
    if not found:
        return [
            f"{where} is not in the document with any figures (its figures come from benchmarks/results/"
            f"{f.file}: {', '.join(s.name() for s in f.slots)}); if it was reworded, update the row here"
        ]
    out = []
    for m in found:
        line = text.count("\n", 0, m.start()) + 1
        for slot, got, (value, expected) in zip(f.slots, m.groups(), want, strict=True):
            if got != expected:
                out.append(
                    f"{f.doc}:{line} quotes {got!r} where benchmarks/results/{f.file} {slot.name()} = "
                    f"{value!r} reads {expected!r} (format {slot.fmt!r}), in the quote {f.quote!r}"
                )
    return out


def _id(f: Figure) -> str:
    words = re.sub(r"[^\w@,.%+-]+", " ", f.quote.replace("{}", "_")).split()
    return f"{f.doc}:{' '.join(words[:8])}"


@pytest.mark.parametrize("figure", FIGURES, ids=_id)
def test_the_document_quotes_the_figure_as_its_file_says(figure: Figure) -> None:
    found = problems(figure, _doc(figure.doc))
    assert not found, "\n".join(found)


def _altered(got: str, slot: Slot) -> str:
    """Another figure in the same place: the last digit changed, or another of the slot's words."""
    if isinstance(slot.fmt, Mapping):
        return next((w for w in slot.fmt.values() if w != got), got + "!")
    last = max(i for i, c in enumerate(got) if c.isdigit())
    return got[:last] + str((int(got[last]) + 1) % 10) + got[last + 1 :]


@pytest.mark.parametrize("figure", FIGURES, ids=_id)
def test_each_row_can_fail(figure: Figure) -> None:
    """Each figure of the quote, altered in a copy of the document, is reported: the row compares."""
    text = _doc(figure.doc)
    m = _regex(figure).search(text)
    assert m, f"{figure.doc}: {figure.quote!r} not found"
    for i, slot in enumerate(figure.slots, start=1):
        changed = text[: m.start(i)] + _altered(m.group(i), slot) + text[m.end(i) :]
        assert problems(figure, changed), (
            f"{figure.doc}: altering {slot.name()} in {figure.quote!r} went unseen"
        )
