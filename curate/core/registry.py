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

A section parser (``@SECTIONS.add("proxy")`` on a function) turns a pipeline section's raw mapping into
its typed object; :mod:`curate.pipeline.config` gets it by name, so the pipeline layer never imports the
packages above it that own those sections.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib
import types
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class RegistryError(ValueError):
    """A name or parameter that the registry does not know, with the valid choices in the message.

    ``key`` is the parameter at fault (None for a name), ``detail`` the message without its location,
    so a caller can place it at the parameter's own file line or ``--set``.
    """

    def __init__(self, msg: str, *, key: str | None = None, detail: str | None = None) -> None:
        super().__init__(msg)
        self.key = key
        self.detail = detail if detail is not None else msg


class Registry:
    """Maps short versioned names to classes of one kind (``stage`` or ``source``), or to the parser
    functions of a pipeline's sections (``section``).

    ``var`` is the module-level name the registry is bound to (``STAGES``), which is how a built-in
    module's ``@STAGES.add("name")`` is found in its source.
    """

    def __init__(self, kind: str, var: str) -> None:
        self.kind = kind
        self.var = var
        self._items: dict[str, Any] = {}

    def add(self, name: str) -> Callable[[T], T]:
        """Decorator: register ``cls`` (a class, or a section's parser function) under ``name`` (which
        must be new)."""

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
SECTIONS = Registry("section", "SECTIONS")  # parser(section, err=None, path=None) -> typed section

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


def bounds(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> dict[str, Any]:
    """Field metadata declaring a parameter's valid range, checked by :func:`build_params` at load time::

    threshold: float = field(default=0.8, metadata=bounds(0, 1, lo_open=True))   # (0, 1]
    """
    return {"range": (lo, hi, lo_open)}


def _check_range(value: Any, rng: tuple[float | None, float | None, bool], where: str) -> None:
    lo, hi, lo_open = rng
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return
    too_low = lo is not None and (value <= lo if lo_open else value < lo)
    if too_low or (hi is not None and value > hi):
        left = "(" if lo_open else "["
        span = (
            f"in {left}{lo:g}, {hi:g}]"
            if lo is not None and hi is not None
            else (f"> {lo:g}" if lo_open else f">= {lo:g}")
            if lo is not None
            else f"<= {hi:g}"
        )
        raise RegistryError(f"{where}: expected a value {span}, got {value!r}")


def build_params(params_cls: type[T], raw: dict[str, Any] | None, *, where: str) -> T:
    """Build a params dataclass from a mapping, checking names and types.

    ``where`` names the config location (file and key) for error messages.
    """
    raw = dict(raw or {})
    fields = {f.name: f for f in dataclasses.fields(params_cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        valid = ", ".join(sorted(fields)) or "(none)"
        what = "unknown parameter" if len(unknown) == 1 else f"unknown parameters {', '.join(unknown)}"
        detail = f"{what}; valid parameters: {valid}"
        msg = f"{where}: unknown parameter(s) {', '.join(unknown)}; valid parameters: {valid}"
        raise RegistryError(msg, key=unknown[0], detail=detail)
    hints = typing.get_type_hints(params_cls)
    for key, value in raw.items():
        try:
            raw[key] = _coerce(value, hints[key], where=f"{where}.{key}")
            if "range" in fields[key].metadata:
                _check_range(raw[key], fields[key].metadata["range"], f"{where}.{key}")
        except RegistryError as e:
            detail = str(e).removeprefix(f"{where}.{key}").removeprefix(": ")
            raise RegistryError(str(e), key=key, detail=detail) from None
    try:
        return params_cls(**raw)
    except TypeError as e:
        raise RegistryError(f"{where}: {e}") from None


def _coerce(value: Any, tp: Any, *, where: str) -> Any:
    """Check ``value`` against the type hint ``tp``; ints are accepted for floats."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return _coerce(value, arg, where=where)
            except RegistryError:
                continue
        raise RegistryError(f"{where}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if tp is type(None):
        if value is None:
            return None
        raise RegistryError(f"{where}: expected null, got {value!r}")
    if origin is typing.Literal:
        if value in args:
            return value
        near = difflib.get_close_matches(str(value), [str(a) for a in args], n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise RegistryError(f"{where}: expected one of {', '.join(map(repr, args))}, got {value!r}{hint}")
    if origin in (list, tuple, dict):
        return _coerce_container(value, origin, args, where=where)
    return _coerce_scalar(value, tp, where=where)


def _coerce_container(value: Any, origin: Any, args: tuple[Any, ...], *, where: str) -> Any:
    """A list or tuple (items checked against the first type argument) or a mapping (taken as is)."""
    if origin is dict:
        if not isinstance(value, dict):
            raise RegistryError(f"{where}: expected a mapping, got {type(value).__name__} {value!r}")
        return value
    if not isinstance(value, list | tuple):
        raise RegistryError(f"{where}: expected a list, got {type(value).__name__} {value!r}")
    inner = args[0] if args else Any
    items = [_coerce(v, inner, where=f"{where}[{i}]") for i, v in enumerate(value)]
    return items if origin is list else tuple(items)


def _coerce_scalar(value: Any, tp: Any, *, where: str) -> Any:
    """float (ints accepted), int and bool (never each other), str, any other class by isinstance;
    anything else that is not a class is taken as is."""
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok:
            return float(value)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is bool:
        ok = isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        return value
    if ok:
        return value
    raise RegistryError(f"{where}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
