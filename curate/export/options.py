"""The pipeline's ``export:`` section: what to export and how (:class:`ExportOptions`), typed and checked by
the machinery of stage parameters (:mod:`curate.core.params`).

Its class is registered as the ``export`` section (:data:`curate.core.registry.SECTIONS`), so a pipeline
checks it at load without importing the export phase.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Self

from curate.core.params import OneOf, Parse, Section, SectionError, bounds, build_section, invalid
from curate.core.registry import SECTIONS
from curate.export import formats
from curate.export.mixture import SEARCH
from curate.export.tokenizer_spec import need_tokenizer_message
from curate.io import named_tokenizers, paths

FormatName = Annotated[str, OneOf(formats.names)]


def _formats(value: Any) -> tuple[str, ...]:
    """``export.formats``: one registered format or a list of them (each once, in the order given)."""
    listed = [value] if isinstance(value, str) else list(value)
    if not listed:
        raise ValueError(f"expected one or more of {', '.join(formats.names())}, got []")
    return tuple(dict.fromkeys(listed))


def _columns(value: Any) -> tuple[str, ...]:
    """``export.columns`` / ``drop_columns``: a column name (or glob), or a list of them."""
    listed = [value] if isinstance(value, str) else list(value)
    for i, c in enumerate(listed):
        if not c:
            raise invalid(i, "expected a column name or glob, got ''")
    return tuple(listed)


def _mixture(value: Any) -> dict[str, float] | str | None:
    """``export.mixture``: ``search`` or ``{source: weight}`` (weights >= 0, not all 0), normalised to 1."""
    if value is None or value == SEARCH:
        return value
    ok = isinstance(value, dict) and value and all(isinstance(k, str) for k in value)
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value.values())
    if not ok or not sum(value.values()) > 0:
        raise ValueError(
            f"expected `search` or a mapping of source to weight (>= 0, not all 0), got {value!r}"
        )
    total = float(sum(value.values()))
    return {str(k): float(v) / total for k, v in value.items()}


Names = Annotated[tuple[str, ...], Parse(_columns, written=str | list[str])]


@SECTIONS.add("export")
@dataclass(frozen=True, kw_only=True)
class ExportOptions(Section):
    """What to export and how; the keys of a pipeline's ``export:`` section.

    Attributes:
        formats: any registered format (:mod:`curate.export.formats`: ``parquet``, ``megatron``,
            ``memmap``, ``hf_disk``), one or a list; default ``parquet``, plus ``megatron`` and ``memmap``
            when a tokenizer is named (:func:`curate.export.formats.defaults`).
        tokenizer: the tokenizer of the token formats (required by them), which also counts the run's
            tokens: a name (``gpt2``; ``proxy``, the run's proxy tokenizer), or a Hugging Face
            ``tokenizer.json`` by path or URL, held as resolved once when the section is parsed
            (:func:`curate.io.paths.locate`: an object store's URL as written, else the absolute path
            of the first place it exists: the working directory, the pipeline's folder, the
            repository root).
        eos_token: the token appended to every document; default the first of the usual names found.
        shard_tokens: target tokens per token shard (documents are never split across shards).
        val_fraction: fraction of documents in the validation split.
        seed: seed of the document shuffle.
        parquet_shard_rows: most rows per Parquet shard.
        parquet_shard_bytes: about the most text bytes per Parquet shard.
        license: the dataset card's ``license`` (a Hugging Face licence id; ``other`` by default).
        pretty_name: the dataset card's title; default the pipeline's ``name`` or the run directory's.
        tokenize_rows: rows per tokenization work item (the unit of parallelism).
        columns: the columns the Parquet and hf_disk exports carry (names or globs); default every
            column that is not null in every row.
        drop_columns: columns (names or globs) left out of them.
        mixture: the train split at mixture weights: ``search`` (``RUN/mix.json``'s chosen weights) or
            ``{source: weight}`` (:mod:`curate.export.mixture`; normalised to sum to 1); default the data
            as it is.
        mixture_by: the column the weights' names are values of (default ``source``).
        mixture_tokens: train tokens at the weights; default the train split's own.
        mixture_unconfirmed: export ``mixture: search`` even when the search's confirmation on fresh
            seeds did not call the chosen mixture better than the natural mixture (refused otherwise).
    """

    formats: Annotated[tuple[str, ...], Parse(_formats, written=FormatName | list[FormatName])] = field(
        default_factory=lambda: formats.defaults(tokenizer=False)
    )
    tokenizer: str | None = None
    eos_token: str | None = None
    shard_tokens: int = field(default=100_000_000, metadata=bounds(1))
    val_fraction: float = field(default=0.01, metadata=bounds(0, 1, hi_open=True))
    seed: int = 0
    parquet_shard_rows: int = field(default=100_000, metadata=bounds(1))
    parquet_shard_bytes: int = field(default=256 << 20, metadata=bounds(1))
    license: str = "other"
    pretty_name: str | None = None
    tokenize_rows: int = field(default=50_000, metadata=bounds(1))
    columns: Names | None = None
    drop_columns: Names = ()
    mixture: Annotated[dict[str, float] | str | None, Parse(_mixture)] = None
    mixture_by: str = "source"
    mixture_tokens: int | None = field(default=None, metadata=bounds(1))
    mixture_unconfirmed: bool = False

    def validate(self) -> None:
        """Token formats need a tokenizer; a bare word must be a known tokenizer name (a typo of ``gpt2``,
        a hub id: nothing resolves online); the weights need a column to name."""
        token_formats = [f for f in self.formats if f in formats.names(tokens=True)]
        if token_formats and not self.tokenizer:
            raise invalid("tokenizer", need_tokenizer_message(token_formats).removeprefix("export: "))
        ref = self.tokenizer
        if ref and ref not in named_tokenizers.NAMES and named_tokenizers.looks_like_name(ref):
            raise invalid(
                "tokenizer", named_tokenizers.unknown_name_message(ref).removeprefix("export.tokenizer: ")
            )
        if not self.mixture_by:
            raise invalid("mixture_by", "expected a column name, got ''")

    @classmethod
    def parse(cls, raw: Any, *, pipeline_path: str | None = None, load: bool = False) -> Self:
        """The section, its formats defaulted by whether a tokenizer is named and a tokenizer file
        resolved once (:func:`curate.io.paths.locate`). At ``load`` (a pipeline about to run, whose
        tokenizer also counts its tokens) a file named must exist even without a token format; a verb on
        a finished run needs it only for a token format."""
        if isinstance(raw, dict) and "formats" not in raw:
            raw = {**raw, "formats": list(formats.defaults(tokenizer=bool(raw.get("tokenizer"))))}
        opts = build_section(cls, raw, "export")
        ref = opts.tokenizer
        if not ref or ref in named_tokenizers.NAMES:
            return opts
        try:
            return dataclasses.replace(
                opts, tokenizer=paths.locate(ref, pipeline_path, key="export.tokenizer")
            )
        except paths.PathNotFound as e:
            if load or any(f in formats.names(tokens=True) for f in opts.formats):
                raise SectionError(
                    "export",
                    ("tokenizer",),
                    f"{str(e).removeprefix(f'{e.key}: ')}; give a Hugging Face tokenizer.json (a path or a "
                    f"URL) or a name ({', '.join(named_tokenizers.NAMES)})",
                ) from None
        return opts

    @classmethod
    def from_section(
        cls, section: dict[str, Any] | None, pipeline_path: str | None = None, *, run: bool = False
    ) -> Self:
        """:meth:`parse` (``run``: a pipeline about to run)."""
        return cls.parse(section, pipeline_path=pipeline_path, load=run)

    def tokenizer_named(self) -> str | None:
        return self.tokenizer

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["formats"] = list(self.formats)
        d["columns"] = None if self.columns is None else list(self.columns)
        d["drop_columns"] = list(self.drop_columns)
        return d
