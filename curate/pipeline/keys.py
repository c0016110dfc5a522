"""Where a pipeline key came from: its YAML line, or the ``--set`` override that wrote it.

``parse_pipeline`` reads a pipeline in two layers: the YAML text, then overrides on top (``--set a.b=c``,
or ``curate.run(set={"a.b": value})``; one parser, :func:`apply_overrides`, which the proxy verbs'
``--set`` uses too, relative to the ``proxy:`` section). An error about a key names the line in the file
only when the value there is the one that failed; a value written by an override is blamed on the
override that wrote it, never on the YAML line it replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from curate.core.errors import ConfigError

Keys = tuple[Any, ...]


def line_index(text: str) -> dict[Keys, int]:
    """Map each key path (tuple of keys / indexes) to its 1-based line in the YAML text."""
    index: dict[Keys, int] = {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return index

    def walk(node: yaml.Node, path: Keys) -> None:
        index.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                p = (*path, k.value)
                index[p] = k.start_mark.line + 1
                walk(v, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, (*path, i))

    if root is not None:
        walk(root, ())
    return index


Override = str | tuple[str, Any]  # "KEY=VALUE" as written after --set, or (KEY, a Python value)


def parse_override(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` (a ``--set``) as ``(KEY, value)``, the value read as YAML (``""`` for nothing)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set input.path=data/*.jsonl.gz")
    key, value = item.split("=", 1)
    return key.strip(), yaml.safe_load(value) if value.strip() else ""


def set_path(root: dict[str, Any], key: str, value: Any, label: str) -> Keys:
    """Set ``value`` at the dotted path ``key`` of ``root`` in place: list items by index
    (``stages.3.params.threshold``), missing mappings (or lists, before an index) created. Returns the key
    path written; a path that cannot be set is a ConfigError naming ``label`` (the override as given)."""
    parts = key.split(".")
    node: Any = root
    keys: list[Any] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                at = ".".join(parts[:i]) or "the pipeline"
                raise ConfigError(
                    f"{label}: {at} is a list of {len(node)} (indexes 0 to {len(node) - 1}); "
                    f"{part!r} is not one of its indexes"
                    if node
                    else f"{label}: {at} is an empty list; {part!r} is not one of its indexes"
                )
            index: Any = int(part)
        elif isinstance(node, dict):
            index = part
            if not last and node.get(part) is None:
                node[part] = [] if parts[i + 1].isdigit() else {}
        else:
            at = ".".join(parts[:i])
            raise ConfigError(
                f"{label}: {at} is {type(node).__name__} {node!r}, not a mapping or list; "
                f"{'.'.join(parts[: i + 1])} cannot be set"
            )
        keys.append(index)
        if last:
            node[index] = value
        else:
            node = node[index]
    return tuple(keys)


def apply_overrides(
    raw: dict[str, Any], overrides: Sequence[Override], written: dict[Keys, str] | None = None
) -> dict[str, Any]:
    """Apply overrides to a copy of ``raw``: each ``KEY=VALUE`` as written after ``--set`` (the value read
    as YAML, :func:`parse_override`), or ``(KEY, value)`` with a Python value (``curate.run(set=...)``),
    set by :func:`set_path`.

    ``written``, when given, receives each overridden key path and the override that wrote it, as the user
    gave it (``--set a.b=c``, ``set['a.b']=3``), which an error about that key names (:func:`located`).
    """
    out = copy.deepcopy(raw)
    for item in overrides:
        if isinstance(item, str):
            key, value = parse_override(item)
            label = f"--set {key}={item.split('=', 1)[1]}"
        else:
            key, value = item[0].strip(), copy.deepcopy(item[1])
            label = f"set[{item[0]!r}]={item[1]!r}"
        keys = set_path(out, key, value, label)
        if written is not None:
            written[keys] = label
    return out


def blamed(keys: Keys, msg: str, written: dict[Keys, str]) -> str | None:
    """``--set KEY=VALUE: msg`` when an override wrote the value at ``keys`` (``--set KEY=VALUE: a.b.c:
    msg`` when it wrote a key above it: the failing key as the user would write it,
    ``stages.3.params.dim``); None when no override wrote it."""
    for n in range(len(keys), 0, -1):
        if keys[:n] in written:
            below = f"{user_dotted(keys)}: " if n < len(keys) else ""
            return f"{written[keys[:n]]}: {below}{msg}"
    return None


def located(
    path: str, lines: dict[Keys, int], written: dict[Keys, str] | None = None
) -> Callable[[Keys, str], ConfigError]:
    """``err(keys, msg)``: the ConfigError for the value at key path ``keys``, blamed where it came from.

    - the override that wrote that key or a key above it (:func:`blamed`);
    - else ``path:line: key.path: msg`` at the deepest key path of ``keys`` with a known line, followed
      by ``(with --set KEY=VALUE)`` for each override that wrote a key below it (it may be to blame);
    - else ``path: key.path: msg``.
    """
    written = written or {}

    def err(keys: Keys, msg: str) -> ConfigError:
        by_set = blamed(keys, msg, written)
        if by_set is not None:
            return ConfigError(by_set)
        under = [item for k, item in written.items() if keys and k[: len(keys)] == keys]
        sets = f" (with {', '.join(under)})" if under else ""
        for n in range(len(keys), -1, -1):
            if keys[:n] in lines:
                return ConfigError(f"{path}:{lines[keys[:n]]}: {dotted(keys)}: {msg}{sets}")
        return ConfigError(f"{path}: {dotted(keys)}: {msg}{sets}")

    return err


def dotted(keys: Keys) -> str:
    """``stages[2].params.x`` for ``("stages", 2, "params", "x")``."""
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "(top)"


def user_dotted(keys: Keys) -> str:
    """``stages.2.params.x`` for ``("stages", 2, "params", "x")``: the key path as ``--set`` spells it."""
    return ".".join(map(str, keys))
