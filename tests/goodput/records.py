"""Every ``goodput.json`` on record: the golden measurements (``tests/proxy/golden/*.json.gz``, schema 2 as
recorded) and the report's fixtures (``tests/report/data``: schema 1 and 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.proxy.golden import GOLDEN, load
from tests.report.report_run import DATA

RECORDS = sorted(GOLDEN.glob("*.json.gz"))
FIXTURES = sorted(DATA.glob("goodput*.json"))


def recorded() -> list[tuple[str, dict[str, Any]]]:
    """``(name, goodput.json)`` of every file on record, as recorded (schemas 1 and 2)."""
    out = [(f"golden/{p.name.removesuffix('.json.gz')}", load(p)["goodput"]) for p in RECORDS]
    return out + [(f"report/{p.name}", json.loads(p.read_text())) for p in FIXTURES]


def path_of(name: str) -> Path:
    """The report fixture called ``name``."""
    return next(p for p in FIXTURES if p.name == name)
