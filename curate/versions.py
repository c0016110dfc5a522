"""The versions of the interpreter and of the packages that decide a run's output, for its manifest."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import platform

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
    """``{"python": ..., package: version}`` for each of :data:`PACKAGES` that is installed."""
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        with contextlib.suppress(md.PackageNotFoundError):
            out[pkg] = md.version(pkg)
    return out
