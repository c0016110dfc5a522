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
:mod:`curate.targeting.prepare`). The section is typed and checked by the machinery of stage parameters
(:mod:`curate.core.params`); its class is registered as the ``target`` section.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Any, Self

from curate.core.params import OneOf, Section, SectionError, bounds, build_section, internal, invalid
from curate.core.registry import SECTIONS, SOURCES


@SECTIONS.add("target")
@dataclass
class TargetSpec(Section):
    """A parsed ``target:`` section; ``where`` is ``file:line`` of the section, for error messages (set by
    the pipeline's load, never written)."""

    path: str | None = None
    source: str | None = None
    format: Annotated[str, OneOf(SOURCES.names)] = "jsonl"
    text_field: str = "text"
    skip_docs: int = field(default=0, metadata=bounds(0))
    max_docs: int = field(default=2000, metadata=bounds(1))
    raw_docs: int = field(default=5000, metadata=bounds(1))
    seed: int = field(default=0, metadata=bounds(0))
    where: str = field(default="target", metadata=internal())

    def validate(self) -> None:
        """One of ``path`` and ``source``; ``format`` only with a path."""
        given = [k for k in ("path", "source") if getattr(self, k) not in (None, "")]
        if len(given) != 1:
            raise invalid((), f"expected exactly one of path, source; got {given or 'none'}")
        if self.source and self.format != "jsonl":
            raise invalid("format", "format applies to path only (a source is read with the input)")

    def describe(self) -> str:
        return self.path if self.path else f"input source {self.source!r}"

    @classmethod
    def parse(cls, raw: Any, *, pipeline_path: str | None = None, load: bool = False) -> Self:
        """The section, with ``path`` resolved against the pipeline file (:mod:`curate.io.paths`) and, at
        ``load``, checked to name files. A section without keys is refused (it needs path or source)."""
        if not isinstance(raw, dict):
            raise SectionError(
                "target", (), "expected a mapping with path (or source), e.g. {path: data/target.jsonl}"
            )
        spec = build_section(cls, {k: v for k, v in raw.items() if v is not None}, "target")
        if spec.path and pipeline_path is not None:
            from curate.io.paths import resolve_str
            from curate.io.sources import SourceError, expand_paths

            path = resolve_str(spec.path, pipeline_path)
            spec = dataclasses.replace(spec, path=path)
            if load:
                try:
                    expand_paths(path)
                except SourceError as e:
                    raise SectionError("target", ("path",), str(e)) from None
        return spec
