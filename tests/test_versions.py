"""The manifest's package versions: the ``Version:`` header read directly equals importlib's answer."""

from __future__ import annotations

import importlib.metadata as md
import platform

import pytest

from curate.runtime import versions


def test_package_versions_equal_importlib_metadata_for_every_installed_package() -> None:
    got = versions.package_versions()
    assert got["python"] == platform.python_version()
    expected = {}
    for pkg in versions.PACKAGES:
        try:
            expected[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            continue
    assert {k: v for k, v in got.items() if k != "python"} == expected
    assert {"numpy", "pyarrow"} <= set(expected)  # the comparison is not over an empty set


class _Dist:
    def __init__(self, metadata: str, version: str) -> None:
        self._metadata, self.version = metadata, version

    def read_text(self, name: str) -> str | None:
        return self._metadata if name == "METADATA" else None


def test_the_version_header_is_read_only_from_the_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    body = "Metadata-Version: 2.1\nName: x\nVersion: 1.2.3\n\nVersion: 9.9.9 in the description\n"
    monkeypatch.setattr(versions.md, "distribution", lambda pkg: _Dist(body, "unused"))
    assert versions._version("x") == "1.2.3"
    # No header before the description: importlib's own parse (the dist's .version) answers.
    no_header = "Metadata-Version: 2.1\nName: x\n\nVersion: 9.9.9 in the description\n"
    monkeypatch.setattr(versions.md, "distribution", lambda pkg: _Dist(no_header, "4.5.6"))
    assert versions._version("x") == "4.5.6"
