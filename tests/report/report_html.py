"""Reading report.html back in tests, with the standard library's HTML parser (no formatter code reused)."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from typing import Any


class Collector(HTMLParser):
    """Collects the text of elements that carry ``data-metric`` or ``data-col`` (inside a ``data-stage`` row)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.metrics: dict[str, tuple[str, str]] = {}  # key -> (data-value, shown text)
        self.cells: dict[tuple[str, str], str] = {}  # (stage, col) -> text
        self._open: list[tuple[str, dict[str, str], list[str]]] = []
        self._stage: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "data-stage" in a:
            self._stage = a["data-stage"]
        if "data-metric" in a or "data-col" in a:
            self._open.append((tag, a, []))

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            _, a, text = self._open.pop()
            shown = "".join(text).strip()
            if "data-metric" in a:
                self.metrics[a["data-metric"]] = (a["data-value"], shown)
            elif self._stage is not None:
                self.cells[(self._stage, a["data-col"])] = shown
        if tag == "tr":
            self._stage = None

    def handle_data(self, data: str) -> None:
        for _, _, text in self._open:
            text.append(data)


def parse(html: str) -> Collector:
    c = Collector()
    c.feed(html)
    return c


def shown_number(text: str) -> tuple[float, float]:
    """The number a cell shows and half a unit of its last digit (the rounding it may carry)."""
    t = text.replace(",", "").strip()
    scale = 100.0 if t.endswith("%") else 1.0
    t = t.rstrip("%")
    m = re.fullmatch(r"-?\d+(?:\.(\d+))?(?:e([+-]\d+))?", t)
    assert m, f"not a number: {text!r}"
    decimals = len(m.group(1) or "")
    exp = int(m.group(2) or 0)
    return float(t) / scale, 0.5 * 10.0 ** (exp - decimals) / scale


def get(rec: dict[str, Any], path: str) -> Any:
    cur: Any = rec
    for part in path.split("."):
        cur = cur[int(part)] if isinstance(cur, list) else cur.get(part)
    return cur


# Metric key suffix -> path in goodput.json's recipe record (the schema of curate.proxy.statistics.descriptive).
METRICS = {
    "multiplier": "multiplier.value",
    "multiplier.ci_low": "multiplier.ci_low",
    "multiplier.ci_high": "multiplier.ci_high",
    "yield": "yield",
    "goodput": "goodput.value",
    "goodput.ci_low": "goodput.ci.0",
    "goodput.ci_high": "goodput.ci.1",
    "effective_tokens": "effective_tokens",
    "tokens_in": "tokens_in",
    "tokens_kept": "tokens_kept",
    "bpb_at_T": "bpb_at_T.value",
    "bpb_at_T.ci_low": "bpb_at_T.ci_low",
    "bpb_at_T.ci_high": "bpb_at_T.ci_high",
    "learning_signal_per_token": "learning_signal_per_token",
    "costs.proxy_device_s": "costs.proxy_device_s",
}


def check_metrics(found: dict[str, tuple[str, str]], goodput: dict[str, Any]) -> int:
    """Every recipe's every metric is shown, its data-value is the exact JSON value and its text the value
    rounded. Returns the number of values checked."""
    n = 0
    for recipe, rec in goodput["recipes"].items():
        for suffix, path in METRICS.items():
            key = f"{recipe}.{suffix}"
            assert key in found, f"{key} not shown"
            raw, text = found[key]
            want = get(rec, path)
            if want is None:
                assert raw == "null", (key, raw, text)
                assert text == "—", (key, raw, text)
                continue
            assert float(raw) == want, (key, raw, want)
            shown, tol = shown_number(text)
            assert math.isclose(shown, want, abs_tol=tol * 1.0000001, rel_tol=0), (key, text, want)
            n += 1
    return n
