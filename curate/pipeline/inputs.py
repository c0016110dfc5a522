"""A pipeline's ``input:``: one source (a mapping) or several (a list of mappings, each with a ``name``),
checked at load into the source's params, and the source built from them (:mod:`curate.io.multi` for
several)."""

from __future__ import annotations

import dataclasses
from typing import Any

from curate.core.registry import SOURCES, RegistryError, build_params
from curate.io.multi import NAME_PATTERN, MultiParams, MultiSource, Part
from curate.io.paths import resolve_str
from curate.pipeline.keys import dotted

__all__ = ["build_source", "check_input", "resolved_input"]


def check_input(inp: Any, path: str, err: Any) -> Any:
    """The ``input:`` section names a known source with valid parameters; returns the source's params,
    built once with ``path`` resolved (their ``keep_fields``: the input fields a ``select:`` may test
    besides id, text and source). A list of sources (each with a ``name``) gives a
    :class:`curate.io.multi.MultiParams`."""
    if isinstance(inp, list):
        return _check_input_list(inp, path, err)
    if not isinstance(inp, dict) or "format" not in inp:
        raise err(
            ("input",),
            "expected a mapping with at least 'format' (e.g. {path: data/*.jsonl.gz, format: jsonl}), "
            "or a list of such mappings, each with a 'name'",
        )
    return _source_params(inp, ("input",), path, err)


def _source_params(inp: dict[str, Any], where: tuple[Any, ...], path: str, err: Any) -> Any:
    """One source's params from its mapping at ``where`` (``format`` and ``name`` excluded)."""
    try:
        src_cls = SOURCES.get(str(inp["format"]))
        given = {k: v for k, v in inp.items() if k not in ("format", "name")}
        params = build_params(src_cls.Params, given, where=dotted(where))
    except RegistryError as e:
        keys = (*where, e.key) if e.key else (*where, "format")
        raise err(keys, e.detail) from None
    if isinstance(getattr(params, "path", None), str):
        params = dataclasses.replace(params, path=resolve_str(params.path, path))
    return params


def _check_input_list(entries: list[Any], path: str, err: Any) -> MultiParams:
    """``input:`` as a list: each entry a source mapping with a distinct ``name`` (kept as the rows'
    ``source`` column and the prefix of their ids)."""
    if not entries:
        raise err(("input",), "expected at least one source")
    parts: list[Part] = []
    for i, inp in enumerate(entries):
        where = ("input", i)
        if not isinstance(inp, dict) or "format" not in inp or "name" not in inp:
            raise err(
                where,
                "expected a mapping with 'name' and 'format' (e.g. {name: web, path: web/, format: jsonl})",
            )
        name = inp["name"]
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise err(
                (*where, "name"),
                f"expected a name of letters, digits, '_', '.' or '-' (it labels rows and ids), got {name!r}",
            )
        twin = next((j for j, p in enumerate(parts) if p.name == name), None)
        if twin is not None:
            raise err((*where, "name"), f"{name!r} is already input[{twin}]'s name; give each source its own")
        parts.append(Part(name=name, format=str(inp["format"]), params=_source_params(inp, where, path, err)))
    return MultiParams(parts=parts)


def resolved_input(section: Any, source_params: Any) -> Any:
    """``input:`` with its ``path`` as the source's params hold it (made absolute at load by the one rule
    for paths in a pipeline, :mod:`curate.io.paths`); the manifest's ``config`` keeps the path as written.
    A list of sources gives a list, each entry resolved the same way."""
    if isinstance(source_params, MultiParams):
        return [resolved_input(s, p.params) for s, p in zip(section, source_params.parts, strict=True)]
    out = dict(section)
    if isinstance(out.get("path"), str):
        out["path"] = source_params.path
    return out


def build_source(cfg: Any) -> Any:
    """The input source of ``cfg`` (a ``PipelineConfig``): ``input.format`` with a copy of the params built at load; for a list
    ``input:``, a :class:`curate.io.multi.MultiSource` over one source per entry."""
    p = cfg.source_params
    if isinstance(p, MultiParams):
        sources = [SOURCES.get(part.format)(dataclasses.replace(part.params)) for part in p.parts]
        return MultiSource(p, sources)
    return SOURCES.get(str(cfg.input["format"]))(dataclasses.replace(p))
