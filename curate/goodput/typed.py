"""Typed JSON blocks: a frozen dataclass that reads itself from a JSON object, checked key by key, writes
the same object back (the keys in the order it read them), and describes itself as JSON Schema.

A field of a :class:`Block` is declared with :func:`req` (every file of the current schema has the key)
or :func:`opt` (a file may leave it out), with the JSON key when it is no Python name (``yield``, ``for``).
Scalars read as their JSON value (``None`` for ``null`` or a missing key); a missing block reads as an
empty one (every field ``None``), a missing list or mapping as an empty one, so a reader never tests for
``None`` before it looks inside. What was in the file is kept apart from what was not: :meth:`Block.has`
says whether a key was there, and :meth:`Block.to_json` writes exactly the keys that were.

Reading is strict: an unknown key, a value of the wrong type and (``strict=True``) a missing required key
are a :class:`GoodputError` that names the file and the key's path (``goodput.json:
recipes.curated.multiplier: missing 'ci_low'``). ``strict=False`` reads a file of an older schema, whose
writer did not yet write every key: only the missing keys are forgiven.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

B = TypeVar("B", bound="Block")
META = "goodput"


class GoodputError(ValueError):
    """A file that is not the JSON its schema says: ``<file>: <key path>: <what is wrong>``."""

    def __init__(self, source: str, path: str, problem: str) -> None:
        self.source, self.path, self.problem = source, path, problem
        super().__init__(f"{source}: {path}: {problem}" if path else f"{source}: {problem}")


@dataclasses.dataclass(frozen=True)
class Meta:
    """What a field's declaration says: its JSON key, whether schema 3 requires it, whether only files
    of older schemas have it, its JSON Schema where the type's own is not enough (``schema``) and its
    schema in older files where it differs (``legacy``: a type or a JSON Schema), and for a ``rest``
    field, which other keys of the object it takes (``pattern``; every other key when None)."""

    key: str | None = None
    optional: bool = False
    legacy_only: bool = False
    schema: dict[str, Any] | None = None
    legacy: Any = None
    rest: bool = False
    pattern: str | None = None
    doc: str = ""


def _field(factory: Any, meta: Meta) -> Any:
    if factory is None:
        return dataclasses.field(default=None, metadata={META: meta})
    if isinstance(factory, type) and issubclass(factory, Block):
        factory = factory.absent  # a block not given is one the file does not have
    return dataclasses.field(default_factory=factory, metadata={META: meta})


def req(factory: Any = None, *, key: str | None = None, doc: str = "", **kw: Any) -> Any:
    """A key every file of the current schema has. ``factory``: the block class, ``list`` or ``dict`` of a
    non-scalar field (its value when a file of an older schema lacks the key)."""
    return _field(factory, Meta(key=key, doc=doc, **kw))


def opt(factory: Any = None, *, key: str | None = None, doc: str = "", **kw: Any) -> Any:
    """A key a file may leave out (a control that was not trained, a one-point ladder's agreement)."""
    return _field(factory, Meta(key=key, optional=True, doc=doc, **kw))


def legacy(factory: Any = None, *, key: str | None = None, doc: str = "", **kw: Any) -> Any:
    """A key only files of an older schema have (the current writer never writes it)."""
    return _field(factory, Meta(key=key, optional=True, legacy_only=True, doc=doc, **kw))


def rest(*, pattern: str | None = None, doc: str = "") -> Any:
    """Every key of the object that no other field names (those matching ``pattern``), by key."""
    return _field(dict, Meta(optional=True, rest=True, pattern=pattern, doc=doc))


@dataclasses.dataclass(frozen=True)
class Slot:
    """One field of a block as the reader and writer see it."""

    name: str
    key: str
    type: Any
    meta: Meta


@dataclasses.dataclass(frozen=True, kw_only=True)
class Block:
    """A JSON object with a fixed set of keys. ``keys_read``: the keys it was read with, in their order
    (None for a block built in Python: its keys are then its fields, in order, less the optional empty)."""

    keys_read: tuple[str, ...] | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(
        cls: type[B], d: Any, *, strict: bool = True, source: str = "goodput.json", path: str = ""
    ) -> B:
        """The block of the JSON object ``d``; errors name ``source`` and the key path below ``path``."""
        return _read_block(cls, d, _Reader(source, strict), path)

    @classmethod
    def absent(cls: type[B]) -> B:
        """The block a file does not have: every field empty, no key."""
        return cls(keys_read=())

    def to_json(self) -> dict[str, Any]:
        """The JSON object: every key it was read with, in that order, then any field set since."""
        slots = slots_of(type(self))
        out: dict[str, Any] = {}
        for key, value in self._items(slots):
            out[key] = _dump(value)
        return out

    def has(self, key: str) -> bool:
        """Whether the object has ``key`` (as read; a block built in Python: whether the field is set)."""
        if self.keys_read is not None and key in self.keys_read:
            return True
        slot = next((s for s in slots_of(type(self)) if s.key == key and not s.meta.rest), None)
        if slot is not None:
            return self.keys_read is None and not _empty(getattr(self, slot.name))
        return any(key in getattr(self, s.name) for s in slots_of(type(self)) if s.meta.rest)

    @property
    def present(self) -> bool:
        """Whether the file had this block at all (a missing block reads as an empty one)."""
        return self.keys_read != ()

    def _items(self, slots: list[Slot]) -> Iterator[tuple[str, Any]]:
        by_key = {s.key: s for s in slots if not s.meta.rest}
        rests = [getattr(self, s.name) for s in slots if s.meta.rest]
        done: set[str] = set()
        for key in self.keys_read or ():
            if key in by_key:
                done.add(key)
                yield key, getattr(self, by_key[key].name)
                continue
            for r in rests:
                if key in r:
                    done.add(key)
                    yield key, r[key]
                    break
        for s in slots:  # fields never read: a block built in Python, or one given a value since
            values = getattr(self, s.name).items() if s.meta.rest else [(s.key, getattr(self, s.name))]
            for key, value in values:
                if key in done:
                    continue
                required = not (s.meta.optional or s.meta.rest) and self.keys_read is None
                if required or not _empty(value):
                    yield key, value


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, Block):
        return value.keys_read == () or (value.keys_read is None and not value.to_json())
    return isinstance(value, list | dict) and not value


_SLOTS: dict[type, list[Slot]] = {}


def slots_of(cls: type[Block]) -> list[Slot]:
    """The JSON fields of a block class, in declaration order, with their resolved types."""
    if cls not in _SLOTS:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            if f.name == "keys_read":
                continue
            meta = f.metadata.get(META)
            if meta is None:
                raise TypeError(f"{cls.__name__}.{f.name}: declare it with req(), opt(), legacy() or rest()")
            out.append(Slot(f.name, meta.key or f.name, hints[f.name], meta))
        _SLOTS[cls] = out
    return _SLOTS[cls]


@dataclasses.dataclass(frozen=True)
class _Reader:
    source: str
    strict: bool

    def fail(self, path: str, problem: str) -> typing.NoReturn:
        raise GoodputError(self.source, path, problem)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(v: Any) -> str:
    text = "null" if v is None else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _read_block(cls: type[B], d: Any, r: _Reader, path: str) -> B:
    if not isinstance(d, Mapping):
        r.fail(path, f"expected an object, got {_show(d)}")
    slots = slots_of(cls)
    by_key = {s.key: s for s in slots if not s.meta.rest and not (r.strict and s.meta.legacy_only)}
    rest_slot = next((s for s in slots if s.meta.rest), None)
    values: dict[str, Any] = {}
    for key, v in d.items():
        s = by_key.get(key)
        if s is not None:
            values[s.name] = read_value(s.type, v, r, _join(path, key))
        elif rest_slot is not None and (
            rest_slot.meta.pattern is None or re.search(rest_slot.meta.pattern, key)
        ):
            item = get_args(rest_slot.type)[1]
            values.setdefault(rest_slot.name, {})[key] = read_value(item, v, r, _join(path, key))
        else:
            pattern = rest_slot.meta.pattern if rest_slot else None
            known = ", ".join(by_key) + (f" or a key matching {pattern}" if pattern else "")
            r.fail(path, f"unknown key {key!r} (expected one of {known})")
    for s in slots:
        if s.key in d or s.meta.rest:
            continue
        if r.strict and not s.meta.optional:
            r.fail(path, f"missing {s.key!r}")
        block = _block_type(s.type)
        if block is not None:
            values[s.name] = block.absent()
    return cls(keys_read=tuple(d), **values)


def _block_type(tp: Any) -> type[Block] | None:
    """The block class of a field of type ``SomeBlock`` (not of ``SomeBlock | None``: that reads None)."""
    return tp if isinstance(tp, type) and issubclass(tp, Block) else None


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def describe(tp: Any) -> str:
    """A type in words, for an error: ``a number or null``."""
    if _is_union(tp):
        return " or ".join(describe(a) for a in get_args(tp))
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin is list:
        return "a list"
    if origin is dict or _block_type(tp) is not None:
        return "an object"
    names = {float: "a number", int: "an integer", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(tp, "any JSON value")


def read_value(tp: Any, v: Any, r: _Reader, path: str) -> Any:
    """``v`` checked against the type ``tp`` (and read into blocks where ``tp`` has them)."""
    if tp is Any:
        return v
    if _is_union(tp):
        args = get_args(tp)
        if v is None:
            if type(None) in args:
                return None
            r.fail(path, f"expected {describe(tp)}, got null")
        for a in args:
            if a is not type(None) and _fits(a, v):
                return read_value(a, v, r, path)
        r.fail(path, f"expected {describe(tp)}, got {_show(v)}")
    origin = get_origin(tp)
    if origin is Literal:
        if v in get_args(tp) and isinstance(v, str):
            return v
    elif origin is list:
        if isinstance(v, list):
            (item,) = get_args(tp)
            return [read_value(item, x, r, f"{path}[{i}]") for i, x in enumerate(v)]
    elif origin is dict:
        if isinstance(v, Mapping):
            val = get_args(tp)[1]
            return {k: read_value(val, x, r, _join(path, k)) for k, x in v.items()}
    elif _block_type(tp) is not None:
        return _read_block(tp, v, r, path)
    elif _fits(tp, v):
        return v
    r.fail(path, f"expected {describe(tp)}, got {_show(v)}")


def _fits(tp: Any, v: Any) -> bool:
    """Whether ``v`` is of the JSON kind of ``tp`` (the first check of a union's members)."""
    origin = get_origin(tp)
    if origin is Literal:
        return v in get_args(tp) and isinstance(v, str)
    if origin is list:
        return isinstance(v, list)
    if origin is dict or _block_type(tp) is not None:
        return isinstance(v, Mapping)
    if tp is bool:
        return isinstance(v, bool)
    if tp is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if tp is float:
        return isinstance(v, int | float) and not isinstance(v, bool)
    if tp is str:
        return isinstance(v, str)
    return tp is Any


def _dump(value: Any) -> Any:
    if isinstance(value, Block):
        return value.to_json()
    if isinstance(value, list):
        return [_dump(x) for x in value]
    if isinstance(value, dict):
        return {k: _dump(x) for k, x in value.items()}
    return value


# --- JSON Schema ------------------------------------------------------------------------------------------

LEGACY_PREFIX = "Legacy"


def schema_of(tp: Any, defs: dict[str, Any], *, legacy: bool) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a field type; block classes go to ``defs`` and are referenced.
    ``legacy``: the schema of files of older schemas (no key required, their own shapes where they differ)."""
    if tp is Any:
        return {}
    if _is_union(tp):
        args = get_args(tp)
        simple = [_simple(a) for a in args]
        if all(simple):
            return {"type": [s for s in simple if s]}
        if len(args) == 2 and type(None) in args:
            other = next(a for a in args if a is not type(None))
            inner = schema_of(other, defs, legacy=legacy)
            if "enum" in inner:
                return {"enum": [*inner["enum"], None]}
            if inner.get("type") in ("array", "object"):
                return {**inner, "type": [inner["type"], "null"]}
        return {"anyOf": [schema_of(a, defs, legacy=legacy) for a in args]}
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is list:
        return {"type": "array", "items": schema_of(get_args(tp)[0], defs, legacy=legacy)}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_of(get_args(tp)[1], defs, legacy=legacy)}
    block = _block_type(tp)
    if block is not None:
        name = (LEGACY_PREFIX if legacy else "") + block.__name__
        if name not in defs:
            defs[name] = {}  # reserved: a block that holds itself
            defs[name] = block_schema(block, defs, legacy=legacy)
        return {"$ref": f"#/$defs/{name}"}
    return {"type": _simple(tp)}


def _simple(tp: Any) -> str | None:
    names = {float: "number", int: "integer", str: "string", bool: "boolean", type(None): "null"}
    return names.get(tp)


def block_schema(cls: type[Block], defs: dict[str, Any], *, legacy: bool) -> dict[str, Any]:
    """One block class as a JSON Schema object: its keys, those required (not in ``legacy``), and what
    other keys it takes (none, or its ``rest`` field's)."""
    props: dict[str, Any] = {}
    required = []
    extra: Any = False
    patterns: dict[str, Any] = {}
    for s in slots_of(cls):
        if s.meta.rest:
            item = schema_of(get_args(s.type)[1], defs, legacy=legacy)
            if s.meta.pattern:
                patterns[s.meta.pattern] = item
            else:
                extra = item
            continue
        if s.meta.legacy_only and not legacy:
            continue
        if legacy and s.meta.legacy is not None:
            lg = s.meta.legacy
            sch = lg if isinstance(lg, dict) else schema_of(lg, defs, legacy=True)
        else:
            sch = s.meta.schema if s.meta.schema is not None else schema_of(s.type, defs, legacy=legacy)
        props[s.key] = {**sch, "description": s.meta.doc} if s.meta.doc else sch
        if not (legacy or s.meta.optional):
            required.append(s.key)
    doc = " ".join((cls.__doc__ or "").split())
    out: dict[str, Any] = {"type": "object", "description": doc, "properties": props}
    if required:
        out["required"] = required
    if patterns:
        out["patternProperties"] = patterns
    out["additionalProperties"] = extra
    return out
