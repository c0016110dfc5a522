"""Where a pipeline key came from: its YAML line, or the ``--set`` override that wrote it.

``parse_pipeline`` reads a pipeline in two layers: the YAML text, then ``--set a.b=c`` overrides on
top. An error about a key names the line in the file only when the value there is the one that failed;
a value written by ``--set`` is blamed on the ``--set`` that wrote it, never on the YAML line it
replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
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


def apply_overrides(
    raw: dict[str, Any], overrides: list[str], written: dict[Keys, str] | None = None
) -> dict[str, Any]:
    """Apply ``a.b=c`` overrides to a copy of ``raw``; list items are addressed by index.

    ``written``, when given, receives each overridden key path and the ``--set`` item that wrote it.
    An item that cannot be applied is a ConfigError naming it as written (``--set a.b=c: ...``).
    """
    out = copy.deepcopy(raw)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set input.path=data/*.jsonl.gz")
        key, value = item.split("=", 1)
        parts = key.strip().split(".")
        node: Any = out
        keys: list[Any] = []
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    at = ".".join(parts[:i]) or "the pipeline"
                    raise ConfigError(
                        f"--set {item}: {at} is a list of {len(node)} (indexes 0 to {len(node) - 1}); "
                        f"{part!r} is not one of its indexes"
                        if node
                        else f"--set {item}: {at} is an empty list; {part!r} is not one of its indexes"
                    )
                index: Any = int(part)
            elif isinstance(node, dict):
                index = part
                if not last and node.get(part) is None:
                    node[part] = [] if parts[i + 1].isdigit() else {}
            else:
                at = ".".join(parts[:i])
                raise ConfigError(
                    f"--set {item}: {at} is {type(node).__name__} {node!r}, not a mapping or list; "
                    f"{'.'.join(parts[: i + 1])} cannot be set"
                )
            keys.append(index)
            if last:
                node[index] = yaml.safe_load(value) if value.strip() else ""
            else:
                node = node[index]
        if written is not None:
            written[tuple(keys)] = f"{key.strip()}={value}"
    return out


def located(
    path: str, lines: dict[Keys, int], written: dict[Keys, str] | None = None
) -> Callable[[Keys, str], ConfigError]:
    """``err(keys, msg)``: the ConfigError for the value at key path ``keys``, blamed where it came from.

    - ``--set KEY=VALUE: msg`` when an override wrote that key (``--set KEY=VALUE: a.b.c: msg`` when it
      wrote a key above it: the failing key as the user would write it, ``stages.3.params.dim``);
    - else ``path:line: key.path: msg`` at the deepest key path of ``keys`` with a known line, followed
      by ``(with --set KEY=VALUE)`` for each override that wrote a key below it (it may be to blame);
    - else ``path: key.path: msg``.
    """
    written = written or {}

    def err(keys: Keys, msg: str) -> ConfigError:
        for n in range(len(keys), 0, -1):
            if keys[:n] in written:
                below = f"{user_dotted(keys)}: " if n < len(keys) else ""
                return ConfigError(f"--set {written[keys[:n]]}: {below}{msg}")
        under = [item for k, item in written.items() if keys and k[: len(keys)] == keys]
        sets = f" (with --set {', --set '.join(under)})" if under else ""
        for n in range(len(keys), -1, -1):
            if keys[:n] in lines:
                return ConfigError(f"{path}:{lines[keys[:n]]}: {dotted(keys)}: {msg}{sets}")
        return ConfigError(f"{path}: {dotted(keys)}: {msg}{sets}")

    return err


def located_phase_error(e: Exception, key: str, err: Callable[[Keys, str], ConfigError]) -> ConfigError:
    """A section's own error (``export.formats: msg``, as its phase raises it) as ``err``'s located error
    at that key path of section ``key`` (at the section itself when the message names no key of it)."""
    where, _, msg = str(e).partition(": ")
    keys = tuple(where.split(".")) if where.split(".")[0] == key and msg else (key,)
    return err(keys, msg or str(e))


def dotted(keys: Keys) -> str:
    """``stages[2].params.x`` for ``("stages", 2, "params", "x")``."""
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "(top)"


def user_dotted(keys: Keys) -> str:
    """``stages.2.params.x`` for ``("stages", 2, "params", "x")``: the key path as ``--set`` spells it."""
    return ".".join(map(str, keys))
