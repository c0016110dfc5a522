"""The pipeline's ``target:`` section: the sample that target-aware scorers select toward.

```yaml
target:
  path: data/target/*.jsonl.gz   # a file, glob or folder (any input format), or instead:
  # source: wikipedia            # the rows of this input source (the input's `source` field)
  format: jsonl                  # of path (default jsonl)
  text_field: text
  skip_docs: 100                 # skip the first N documents of each file (e.g. those an eval set uses)
  max_docs: 2000                 # target documents used (in file order, after skip_docs)
  raw_docs: 5000                 # raw-input documents sampled by xxh64(seed:id) for the raw-side models
  seed: 0
```
The target and every eval set of ``proxy:`` must be disjoint (13-gram check before any training,
:mod:`curate.targeting.prepare`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curate.core.registry import SECTIONS

KEYS = ["path", "source", "format", "text_field", "skip_docs", "max_docs", "raw_docs", "seed"]


@dataclass
class TargetSpec:
    """A parsed ``target:`` section; ``where`` is ``file:line`` of the section, for error messages."""

    path: str | None = None
    source: str | None = None
    format: str = "jsonl"
    text_field: str = "text"
    skip_docs: int = 0
    max_docs: int = 2000
    raw_docs: int = 5000
    seed: int = 0
    where: str = "target"

    def describe(self) -> str:
        return self.path if self.path else f"input source {self.source!r}"


def parse(section: Any, err: Any, where: str) -> TargetSpec:
    """Validate ``section``; ``err(keys, msg)`` builds the config's ``file:line: key: msg`` error."""
    if not isinstance(section, dict):
        raise err(("target",), "expected a mapping with path (or source), e.g. {path: data/target.jsonl}")
    unknown = sorted(set(section) - set(KEYS))
    if unknown:
        raise err(("target", unknown[0]), f"unknown key; valid keys: {', '.join(KEYS)}")
    given = [k for k in ("path", "source") if section.get(k) not in (None, "")]
    if len(given) != 1:
        raise err(("target",), f"expected exactly one of path, source; got {given or 'none'}")
    for key in ("path", "source", "format", "text_field"):
        if key in section and not isinstance(section[key], str):
            raise err(("target", key), f"expected a string, got {section[key]!r}")
    for key, lo in (("skip_docs", 0), ("max_docs", 1), ("raw_docs", 1), ("seed", 0)):
        v = section.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < lo):
            raise err(("target", key), f"expected an integer >= {lo}, got {v!r}")
    if section.get("source") is not None and "format" in section:
        raise err(("target", "format"), "format applies to path only (a source is read with the input)")
    fmt = str(section.get("format", "jsonl"))
    from curate.core.registry import SOURCES, RegistryError

    try:
        SOURCES.get(fmt)
    except RegistryError as e:
        raise err(("target", "format"), str(e)) from None
    return TargetSpec(**{k: v for k, v in section.items() if v is not None}, where=where)


@SECTIONS.add("target")
def parse_section(section: Any, err: Any, path: str, where: str | None = None) -> TargetSpec:
    """The registered parser of the ``target:`` section: :func:`parse`, then ``path`` resolved against
    the pipeline file ``path`` (:mod:`curate.io.paths`) and checked to name files. ``where``: the
    section's ``file:line`` (default: the pipeline file)."""
    spec = parse(section, err, where=where or path)
    if spec.path:
        from curate.io.paths import resolve_str
        from curate.io.sources import SourceError, expand_paths

        spec.path = resolve_str(spec.path, path)
        try:
            expand_paths(spec.path)
        except SourceError as e:
            raise err(("target", "path"), str(e)) from None
    return spec
