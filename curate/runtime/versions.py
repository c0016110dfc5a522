"""The versions of the interpreter and of the packages that decide a run's output, for its manifest."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata as md
import platform

# The version of curate itself (pyproject.toml says the same; `curate --version` prints it).
__version__ = "0.1.0"

# Packages whose versions can change what a run keeps or how it is measured.
PACKAGES = (
    "pyarrow",
    "polars",
    "numpy",
    "ray",
    "torch",
    "transformers",
    "tokenizers",
    "datatrove",
    "fasttext-numpy2-wheel",
)


def package_versions() -> dict[str, str]:
    """``{"python": ..., package: version}`` for each of :data:`PACKAGES` that is installed.

    Computed once per process (a run writes its manifest several times; the installed packages do not
    change under a running process): ~4x fewer CPU-s than one ``importlib.metadata.version`` per call."""
    return dict(_versions())


@functools.cache
def _versions() -> tuple[tuple[str, str], ...]:
    out = [("python", platform.python_version())]
    for pkg in PACKAGES:
        with contextlib.suppress(md.PackageNotFoundError):
            out.append((pkg, _version(pkg)))
    return tuple(out)


def _version(pkg: str) -> str:
    """The ``Version:`` header of ``pkg``'s metadata, read without parsing the whole file as an email
    message (what ``importlib.metadata.version`` does, ~5x the CPU); that parse where no header is found."""
    dist = md.distribution(pkg)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if line.startswith("Version:"):
            return line[len("Version:") :].strip()
        if not line:  # the headers end at the first empty line
            break
    return dist.version
