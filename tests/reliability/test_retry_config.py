"""Task retries are a deliberate, recorded setting: ``engine.max_retries`` (default 3)."""

from __future__ import annotations

import pytest

from curate.core.errors import ConfigError
from curate.pipeline.config import EngineSpec, parse_pipeline

BASE = "name: t\ninput: {path: x.jsonl, format: jsonl}\nengine: {kind: ray, max_retries: %s}\n"


def test_max_retries_is_read_from_the_engine_section() -> None:
    assert parse_pipeline(BASE % "5").engine == EngineSpec(kind="ray", max_retries=5)


@pytest.mark.parametrize("bad", ["-1", "two", "1.5", "true"])
def test_bad_max_retries_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"<string>:3: engine\.max_retries: expected an integer >= 0, got "):
        parse_pipeline(BASE % bad)


@pytest.mark.ray
def test_ray_engine_records_its_retry_setting(ray_engine) -> None:
    assert ray_engine.describe()["max_retries"] == 3
