"""Typed configuration: a dataclass built from a pipeline's mapping, every value checked before any work.

One machinery for everything typed a pipeline writes: a stage's or a source's ``params:``, and the
sections ``proxy:``, ``export:``, ``report:`` and ``target:`` (:class:`Section`). :func:`build_params`
reads the dataclass's annotations:

* types: ``int``, ``float`` (ints accepted), ``bool``, ``str``, ``X | None``, ``Literal[...]`` (choices,
  with "did you mean"), lists and tuples of a type, ``dict[K, V]`` (keys and values checked), a nested
  dataclass (a mapping) and lists of them;
* ``bounds(lo, hi)`` field metadata: the range of a number (or of each number of a list);
* ``Annotated[T, OneOf(choices)]``: one of a set known only at run time (a registry's names, the models);
* ``Annotated[T, Parse(fn)]``: a value written in another form than ``T`` (a count or a list of seeds, a
  mapping of recipes by name), turned into the ``T`` by ``fn``;
* ``internal()`` field metadata: a field the code sets, never a key of the mapping;
* a ``validate()`` method on the dataclass: the checks that need several keys (a baseline names a recipe,
  a headline names eval sets), raising :func:`invalid` at the key at fault.

Every error is a :class:`RegistryError` whose ``keys`` are the path of the value at fault under the
mapping and whose ``detail`` says what was expected; its caller places it: at a pipeline's file and line
or the ``--set`` that wrote it (:func:`curate.pipeline.keys.located`), or, for a verb on a finished run,
under the section's key path (:class:`SectionError`: ``proxy.ladder[0].budget: ...``).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Self, TypeVar

from curate.core.errors import PhaseError

T = TypeVar("T")
Keys = tuple[str | int, ...]


class RegistryError(ValueError):
    """A name or value that the registry or a typed dataclass refuses, with the valid choices in the message.

    ``keys`` is the path of the value at fault under the mapping that was built (empty for a registry's
    name), ``key`` its first key (None for a name), ``detail`` the message without its location, so a
    caller can place it at the value's own file line or ``--set``.
    """

    def __init__(
        self, msg: str, *, key: str | None = None, detail: str | None = None, keys: Keys | None = None
    ) -> None:
        super().__init__(msg)
        self.keys: Keys = tuple(keys) if keys is not None else (() if key is None else (key,))
        self.key = self.keys[0] if self.keys else None
        self.detail = detail if detail is not None else msg


def key_path(keys: Keys, where: str = "") -> str:
    """``where`` followed by ``keys`` as a pipeline names them: ``proxy.ladder[0].budget``."""
    out = where
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def invalid(keys: str | int | Keys, detail: str) -> RegistryError:
    """The error of the value at ``keys`` (under the mapping being built): what a dataclass's ``validate()``
    or a :class:`Parse` function raises for a value its type and range allow but a rule refuses."""
    path = keys if isinstance(keys, tuple) else (keys,)
    return RegistryError(f"{key_path(path)}: {detail}" if path else detail, keys=path, detail=detail)


def one_of(value: Any, choices: Iterable[Any]) -> str:
    """``expected one of 'a', 'b', got 'c' (did you mean 'a'?)``."""
    listed = list(choices)
    near = difflib.get_close_matches(str(value), [str(c) for c in listed], n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return f"expected one of {', '.join(map(repr, listed))}, got {value!r}{hint}"


def bounds(
    lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False
) -> dict[str, Any]:
    """Field metadata declaring a value's valid range (of each item, for a list), checked by
    :func:`build_params` at load time::

    threshold: float = field(default=0.8, metadata=bounds(0, 1, lo_open=True))   # (0, 1]
    """
    return {"range": (lo, hi, lo_open, hi_open)}


def internal() -> dict[str, Any]:
    """Field metadata: a field the code fills in (a section's ``file:line``), never a key of the mapping."""
    return {"internal": True}


@dataclass(frozen=True, eq=False)  # hashed by identity: an Annotated in a union is hashed
class OneOf:
    """``Annotated[str, OneOf(choices)]``: one of a set known only at run time; ``choices`` is the set, or a
    function that gives it (called when a value is checked, so a registry's later entries count)."""

    choices: Callable[[], Iterable[Any]] | Iterable[Any]

    def values(self) -> list[Any]:
        return list(self.choices() if callable(self.choices) else self.choices)


@dataclass(frozen=True, eq=False)  # hashed by identity: an Annotated in a union is hashed
class Parse:
    """``Annotated[T, Parse(fn)]``: a value written in another form than ``T`` (``3`` or ``[0, 1, 2]`` for
    seeds), turned into the ``T`` by ``fn``. ``written``: the type the value is first checked against
    (``Any``: ``fn`` checks it). ``fn`` raises ``ValueError`` (the value at this key is wrong) or
    :func:`invalid` (a key under it is)."""

    fn: Callable[[Any], Any]
    written: Any = Any


def build_params(
    params_cls: type[T],
    raw: Mapping[Any, Any] | None,
    *,
    where: str,
    noun: str = "parameter",
    ignore: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
) -> T:
    """Build the dataclass ``params_cls`` from a mapping, checking names, types, ranges and its
    ``validate()`` (module docstring).

    ``where`` names the mapping's location (``gopher_quality_v1.params``, ``proxy``) in the error's
    message; its ``keys`` and ``detail`` say which value and what is wrong. ``noun`` names a key in
    messages (``unknown parameter; valid parameters: ...``); ``ignore``: keys the caller reads itself (a
    recipe's ``from:``), accepted and listed among the valid ones; ``exclude``: fields that are not keys
    here (the caller sets them: a proxy run's ``model``, ``tokens`` and ``seed``).
    """
    try:
        return _build(params_cls, raw, (), noun, ignore, exclude)
    except RegistryError as e:
        at = key_path(e.keys, where)
        raise RegistryError(f"{at}: {e.detail}" if at else e.detail, keys=e.keys, detail=e.detail) from None


def _build(
    cls: type[T], raw: Any, keys: Keys, noun: str, ignore: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> T:
    """The dataclass ``cls`` from ``raw`` at ``keys``; a ValueError of a nested dataclass's own checks is
    placed at its key (one at the top is left to the caller, as a stage's own checks are)."""
    if isinstance(raw, cls):
        return raw
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise invalid(keys, f"expected a mapping, got {type(raw).__name__} {raw!r}")
    every = dataclasses.fields(cls)  # type: ignore[arg-type]
    fields = {f.name: f for f in every if f.init and not f.metadata.get("internal") and f.name not in exclude}
    unknown = sorted((k for k in raw if k not in fields and k not in ignore), key=str)
    if unknown:
        valid = ", ".join(sorted([*ignore, *fields])) or "(none)"
        what = f"unknown {noun}" if len(unknown) == 1 else f"unknown {noun}s {', '.join(map(str, unknown))}"
        raise invalid((*keys, unknown[0]), f"{what}; valid {noun}s: {valid}")
    hints = typing.get_type_hints(cls, include_extras=True)
    kw: dict[str, Any] = {}
    for name, value in raw.items():
        if name in ignore:
            continue
        kw[name] = _coerce(value, hints[name], (*keys, name), noun)
        if "range" in fields[name].metadata:
            _check_range(kw[name], fields[name].metadata["range"], (*keys, name))
    for name, f in fields.items():
        if name not in kw and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise invalid((*keys, name), "required (it has no default)")
    try:
        obj = cls(**kw)
        validate = getattr(obj, "validate", None)
        if callable(validate) and not isinstance(obj, type):
            validate()
    except RegistryError as e:
        raise invalid((*keys, *e.keys), e.detail) from None
    except ValueError as e:
        if not keys:
            raise
        raise invalid(keys, str(e)) from None
    return obj


def _check_range(value: Any, rng: tuple[Any, ...], keys: Keys) -> None:
    """A number (each number of a list) within ``bounds``' range."""
    lo, hi, lo_open, *rest = rng
    hi_open = bool(rest and rest[0])
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_range(v, rng, (*keys, i))
        return
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return
    too_low = lo is not None and (value <= lo if lo_open else value < lo)
    too_high = hi is not None and (value >= hi if hi_open else value > hi)
    if too_low or too_high:
        left, right = "(" if lo_open else "[", ")" if hi_open else "]"
        if lo is not None and hi is not None:
            span = f"in {left}{lo:g}, {hi:g}{right}"
        elif lo is not None:
            span = f"> {lo:g}" if lo_open else f">= {lo:g}"
        else:
            span = f"< {hi:g}" if hi_open else f"<= {hi:g}"
        raise invalid(keys, f"expected a value {span}, got {value!r}")


def _coerce(value: Any, tp: Any, keys: Keys, noun: str) -> Any:
    """Check ``value`` against the type hint ``tp`` (module docstring); ints are accepted for floats."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        return _annotated(value, args[0], tp.__metadata__, keys, noun)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _union(value, tp, args, keys, noun)
    if tp is type(None):
        if value is None:
            return None
        raise invalid(keys, f"expected null, got {value!r}")
    if origin is typing.Literal:
        if value in args:
            return value
        raise invalid(keys, one_of(value, args))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, keys, noun)
    if origin in (list, tuple, dict) or tp in (list, tuple, dict):
        return _coerce_container(value, origin or tp, args, keys, noun)
    return _coerce_scalar(value, tp, keys)


def _annotated(value: Any, base: Any, meta: tuple[Any, ...], keys: Keys, noun: str) -> Any:
    """``Annotated[base, Parse(...)]`` or ``Annotated[base, OneOf(...)]``."""
    for m in meta:
        if isinstance(m, Parse):
            written = value if m.written is Any else _coerce(value, m.written, keys, noun)
            try:
                return m.fn(written)
            except RegistryError as e:
                raise invalid((*keys, *e.keys), e.detail) from None
            except ValueError as e:
                raise invalid(keys, str(e)) from None
    value = _coerce(value, base, keys, noun)
    for m in meta:
        if isinstance(m, OneOf) and value not in (choices := m.values()):
            raise invalid(keys, one_of(value, choices))
    return value


def _union(value: Any, tp: Any, args: tuple[Any, ...], keys: Keys, noun: str) -> Any:
    """The first arm ``value`` fits. Failing all, the error of the arm it was meant for where that is
    plain (``X | None`` with a value; the one arm of the value's shape: a mapping, a list or a scalar):
    it says where inside the value it fails and what that arm takes; else what the union expects."""
    errors: list[tuple[Any, RegistryError]] = []
    for arg in args:
        try:
            return _coerce(value, arg, keys, noun)
        except RegistryError as e:
            errors.append((arg, e))
    arms = [(a, e) for a, e in errors if a is not type(None)]
    shaped = [(a, e) for a, e in arms if _shape(a) == _shape(value)]
    if len(arms) == 1 and value is not None:
        raise arms[0][1]
    if len(shaped) == 1:
        raise shaped[0][1]
    raise invalid(keys, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")


def _shape(x: Any) -> str:
    """``mapping``, ``list`` or ``scalar``: of a value, or of the values a type hint takes."""
    if isinstance(x, Mapping):
        return "mapping"
    if isinstance(x, list | tuple):
        return "list"
    if typing.get_origin(x) is Annotated:
        return _shape(typing.get_args(x)[0])
    origin = typing.get_origin(x) or x
    if origin is dict or (isinstance(x, type) and dataclasses.is_dataclass(x)):
        return "mapping"
    return "list" if origin in (list, tuple) else "scalar"


def _coerce_container(value: Any, origin: Any, args: tuple[Any, ...], keys: Keys, noun: str) -> Any:
    """A list or tuple (items checked against the first type argument) or a mapping (keys and values
    checked against ``dict[K, V]``'s, order kept)."""
    if origin is dict:
        if not isinstance(value, Mapping):
            raise invalid(keys, f"expected a mapping, got {type(value).__name__} {value!r}")
        kt, vt = args if len(args) == 2 else (Any, Any)
        return {_coerce(k, kt, (*keys, k), noun): _coerce(v, vt, (*keys, k), noun) for k, v in value.items()}
    if not isinstance(value, list | tuple):
        raise invalid(keys, f"expected a list, got {type(value).__name__} {value!r}")
    inner = args[0] if args else Any
    items = [_coerce(v, inner, (*keys, i), noun) for i, v in enumerate(value)]
    return items if origin is list else tuple(items)


def _coerce_scalar(value: Any, tp: Any, keys: Keys) -> Any:
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
    raise invalid(keys, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


class SectionError(PhaseError):
    """A pipeline section that cannot run: the value at ``keys`` under section ``section`` and what is
    wrong, shown as ``proxy.ladder[0].budget: detail``. At a pipeline's load it is placed at the key's
    file and line, or at the ``--set`` that wrote it (:mod:`curate.pipeline.config`)."""

    def __init__(self, section: str, keys: Keys, detail: str) -> None:
        self.section, self.keys, self.detail = section, tuple(keys), detail
        super().__init__(f"{key_path(self.keys, section)}: {detail}")


def build_section(cls: type[T], raw: Any, section: str, *, ignore: tuple[str, ...] = ()) -> T:
    """The dataclass ``cls`` of pipeline section ``section`` (:func:`build_params`, keys called keys);
    an error is a :class:`SectionError` at the value's key path."""
    try:
        return build_params(cls, raw, where=section, noun="key", ignore=ignore)
    except RegistryError as e:
        raise SectionError(section, e.keys, e.detail) from None


class Section:
    """The typed object of one pipeline section (``proxy:``, ``export:``, ``report:``, ``target:``): a
    dataclass registered on its class with ``@SECTIONS.add(name)`` (:mod:`curate.core.registry`, which
    sets ``name``), so the pipeline's load parses every section the same way without importing the
    package that owns it, and a phase receives it as ``RunContext.section`` and narrows it to its own
    class (:meth:`narrow`).
    """

    name: ClassVar[str] = ""

    @classmethod
    def parse(cls, raw: Any, *, pipeline_path: str | None = None, load: bool = False) -> Self:
        """The section from its mapping (``raw``: None for an empty section), by :func:`build_section`.

        ``pipeline_path``: the pipeline file (or the run's, as its manifest records it) that relative
        paths resolve against; ``load``: the section of a pipeline about to run (its files must exist
        now), not of a verb on a finished run. Errors are :class:`SectionError`."""
        return build_section(cls, raw, cls.name)

    @classmethod
    def narrow(cls, section: Section | None) -> Self:
        """``section`` as this class (a phase's own section), or a PhaseError saying what was handed over."""
        if isinstance(section, cls):
            return section
        got = "no section" if section is None else f"a {type(section).__name__}"
        raise PhaseError(f"{cls.name}: expected the parsed {cls.name}: section ({cls.__name__}), got {got}")

    def tokenizer_named(self) -> str | None:
        """The tokenizer this section names (a name, a file or a URL), which the run's token counter
        reads (:func:`curate.runtime.tokens.token_counter`); None where it names none."""
        return None
