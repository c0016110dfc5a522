"""Versioned registry of stages and sources, and of the parsers of a pipeline's sections.

A registered name never changes meaning: a changed algorithm is registered as ``_v2`` beside ``_v1``.
Unknown names and unknown or mistyped parameters fail at load time with the list of valid choices.

Built-ins are found without importing them: the public modules of the packages handed to
:func:`hold_builtins` are listed, and each one's source is read for ``STAGES.add("name")`` /
``SOURCES.add("name")`` / ``SECTIONS.add("name")`` calls. A lookup imports only the module that
registers the name, so a pipeline of heuristic filters never imports torch. A new family is a new module
in one of those packages: there is no list to edit.

Which packages hold built-ins is said from above, not here: the root (``curate/compose.py``) imports
them and hands their module objects to :func:`hold_builtins`, so this module names no package above it and
the layer test sees each of those arrows as the root's import.

A section (``@SECTIONS.add("proxy")`` on its :class:`curate.core.params.Section` class) is the typed object
of a pipeline's section, built from its mapping by the same machinery as stage parameters
(:mod:`curate.core.params`); :mod:`curate.pipeline.config` gets it by name, so the pipeline layer never
imports the packages above it that own those sections.
"""

from __future__ import annotations

import ast
import importlib
import types
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

# The typed-configuration machinery lives in curate.core.params; these names are importable from here too.
from curate.core.params import RegistryError as RegistryError
from curate.core.params import bounds as bounds
from curate.core.params import build_params as build_params

T = TypeVar("T")


class Registry:
    """Maps short versioned names to classes of one kind: ``stage``, ``source``, or ``section`` (the
    :class:`curate.core.params.Section` classes of a pipeline's sections).

    ``var`` is the module-level name the registry is bound to (``STAGES``), which is how a built-in
    module's ``@STAGES.add("name")`` is found in its source.
    """

    def __init__(self, kind: str, var: str) -> None:
        self.kind = kind
        self.var = var
        self._items: dict[str, Any] = {}

    def add(self, name: str) -> Callable[[T], T]:
        """Decorator: register class ``cls`` under ``name`` (which must be new)."""

        def deco(cls: T) -> T:
            if name in self._items and self._items[name] is not cls:
                raise RegistryError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return deco

    def names(self) -> list[str]:
        """Every registered name: the built-ins (not imported) and any class registered so far."""
        return sorted(set(self._items) | set(builtin_index().get(self.var, {})))

    def get(self, name: str) -> Any:
        """The class (or function) registered as ``name``, importing the built-in module that registers it."""
        if name not in self._items:
            module = builtin_index().get(self.var, {}).get(name)
            if module is not None:
                importlib.import_module(module)
        try:
            return self._items[name]
        except KeyError:
            raise RegistryError(
                f"unknown {self.kind} {name!r}; valid {self.kind}s: {', '.join(self.names())}"
            ) from None


STAGES = Registry("stage", "STAGES")
SOURCES = Registry("source", "SOURCES")
SECTIONS = Registry("section", "SECTIONS")  # Section classes (curate.core.params.Section), by section

_HOLDERS: list[tuple[str, tuple[str, ...]]] = []  # (package name, its folders), in the order given


def hold_builtins(*packages: types.ModuleType) -> None:
    """Declare ``packages`` (imported package objects) as holding built-ins: every public module (no
    leading underscore) of each is read for registrations by :func:`builtin_index`, and imported when a
    lookup needs a name it registers. Only the packages' ``__init__`` has run; their modules are read, not
    imported. A package given again is kept once, at its first place (the first registration of a name
    wins)."""
    for pkg in packages:
        folders = getattr(pkg, "__path__", None)
        if folders is None:
            raise TypeError(
                f"hold_builtins: {getattr(pkg, '__name__', pkg)!r} is a module, not a package; "
                "give the package that holds it"
            )
        if all(name != pkg.__name__ for name, _ in _HOLDERS):
            _HOLDERS.append((pkg.__name__, tuple(str(f) for f in folders)))
    builtin_index.cache_clear()


def holders() -> list[str]:
    """The packages declared to hold built-ins (:func:`hold_builtins`), by name, in order."""
    return [name for name, _ in _HOLDERS]


@cache
def builtin_index() -> dict[str, dict[str, str]]:
    """``{"STAGES": {name: module}, "SOURCES": {...}, "SECTIONS": {...}}`` for the built-ins of the
    packages given to :func:`hold_builtins`, read from the modules' source (``@STAGES.add("name")`` with a
    literal name), without importing them."""
    index: dict[str, dict[str, str]] = {}
    for pkg, folders in _HOLDERS:
        for folder in folders:
            for f in sorted(Path(folder).glob("*.py")):
                if f.stem.startswith("_"):
                    continue
                for var, name in registrations(f.read_text()):
                    index.setdefault(var, {}).setdefault(name, f"{pkg}.{f.stem}")
    return index


def registrations(source: str) -> list[tuple[str, str]]:
    """The ``(registry variable, name)`` of every ``X.add("name")`` call in a module's source."""
    if ".add(" not in source:
        return []
    return [
        (node.func.value.id, node.args[0].value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add"
        and isinstance(node.func.value, ast.Name)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]
