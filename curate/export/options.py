"""The pipeline's ``export:`` section: what to export and how (:class:`ExportOptions`), validated.

Its parser is registered as the ``export`` section (:data:`curate.core.registry.SECTIONS`), so a pipeline
checks it at load without importing the export phase.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from curate.core.errors import PhaseError
from curate.core.registry import SECTIONS
from curate.export import formats
from curate.export.mixture import check_option as check_mixture
from curate.export.tokenizer_spec import need_tokenizer_message
from curate.io import named_tokenizers, paths
from curate.pipeline.keys import located_phase_error


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    """What to export and how; the keys of a pipeline's ``export:`` section.

    Attributes:
        formats: any registered format (:mod:`curate.export.formats`: ``parquet``, ``megatron``,
            ``memmap``, ``hf_disk``); default ``parquet``, plus ``megatron`` and ``memmap`` when a
            tokenizer is named (:func:`curate.export.formats.defaults`).
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
            ``{source: weight}`` (:mod:`curate.export.mixture`); default the data as it is.
        mixture_by: the column the weights' names are values of (default ``source``).
        mixture_tokens: train tokens at the weights; default the train split's own.
    """

    formats: tuple[str, ...] = field(default_factory=lambda: formats.defaults(tokenizer=False))
    tokenizer: str | None = None
    eos_token: str | None = None
    shard_tokens: int = 100_000_000
    val_fraction: float = 0.01
    seed: int = 0
    parquet_shard_rows: int = 100_000
    parquet_shard_bytes: int = 256 << 20
    license: str = "other"
    pretty_name: str | None = None
    tokenize_rows: int = 50_000
    columns: tuple[str, ...] | None = None
    drop_columns: tuple[str, ...] = ()
    mixture: dict[str, float] | str | None = None
    mixture_by: str = "source"
    mixture_tokens: int | None = None

    @classmethod
    def from_section(
        cls, section: dict[str, Any] | None, pipeline_path: str | None = None, *, run: bool = False
    ) -> ExportOptions:
        """Validate a pipeline's ``export:`` mapping (unknown keys, types, ranges) into options, with the
        tokenizer's file resolved against ``pipeline_path`` (the pipeline file, or the run's as its
        manifest records it). ``run``: the section of a pipeline about to run, whose tokenizer also
        counts its tokens, so a file named must exist even without a token format (a verb on a finished
        run needs it only for a token format)."""
        section = dict(section or {})
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(section) - set(valid))
        if unknown:
            raise PhaseError(f"export: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
        if "formats" in section:
            fmts = section["formats"]
            fmts = [fmts] if isinstance(fmts, str) else list(fmts or [])
            known = formats.names()
            bad = [f for f in fmts if f not in known]
            if bad or not fmts:
                raise PhaseError(
                    f"export.formats: {bad or 'empty'} not valid; choose from {', '.join(known)}"
                )
            section["formats"] = tuple(dict.fromkeys(fmts))
        for key in ("shard_tokens", "parquet_shard_rows", "parquet_shard_bytes", "tokenize_rows", "seed"):
            if key in section and (
                not isinstance(section[key], int)
                or isinstance(section[key], bool)
                or (section[key] < 1 and key != "seed")
            ):
                raise PhaseError(
                    f"export.{key}: expected {'an' if key == 'seed' else 'a positive'} integer, "
                    f"got {section[key]!r}"
                )
        if "val_fraction" in section:
            v = section["val_fraction"]
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                raise PhaseError(f"export.val_fraction: expected a number in [0, 1), got {v!r}")
            section["val_fraction"] = float(v)
        for key in ("columns", "drop_columns"):
            value = section.get(key)
            if value is None:
                continue
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list | tuple) or not all(isinstance(c, str) and c for c in value):
                raise PhaseError(f"export.{key}: expected a list of column names, got {section[key]!r}")
            section[key] = tuple(value)
        for key in ("tokenizer", "eos_token", "license", "pretty_name"):
            if key in section and section[key] is not None and not isinstance(section[key], str):
                raise PhaseError(f"export.{key}: expected a string, got {section[key]!r}")
        _check_tokenizer(section, pipeline_path, run=run)
        check_mixture(section)
        return cls(**section)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["formats"] = list(self.formats)
        d["columns"] = None if self.columns is None else list(self.columns)
        d["drop_columns"] = list(self.drop_columns)
        return d


def _check_tokenizer(section: dict[str, Any], pipeline_path: str | None, *, run: bool) -> None:
    """Default the formats by whether a tokenizer is named; refuse token formats without one, and a
    bare word that is no known tokenizer name (a typo of ``gpt2``, a hub id: nothing resolves online);
    resolve a tokenizer file once (:func:`curate.io.paths.locate`), refusing one that is nowhere."""
    ref = section.get("tokenizer")
    if "formats" not in section:
        section["formats"] = formats.defaults(tokenizer=bool(ref))
    token_formats = [f for f in section["formats"] if f in formats.names(tokens=True)]
    if token_formats and not ref:
        raise PhaseError(need_tokenizer_message(token_formats))
    if not ref or ref in named_tokenizers.NAMES:
        return
    if named_tokenizers.looks_like_name(ref):
        raise PhaseError(named_tokenizers.unknown_name_message(ref))
    try:
        section["tokenizer"] = paths.locate(ref, pipeline_path, key="export.tokenizer")
    except paths.PathNotFound as e:
        if run or token_formats:
            raise PhaseError(
                f"{e}; give a Hugging Face tokenizer.json (a path or a URL) or a name "
                f"({', '.join(named_tokenizers.NAMES)})"
            ) from None


@SECTIONS.add("export")
def parse_section(section: Any, err: Any = None, path: str | None = None) -> ExportOptions:
    """The registered parser of the ``export:`` section (``path``: the pipeline file, against which the
    tokenizer's file resolves). At pipeline load (``err``: the located error of
    :func:`curate.pipeline.keys.located`) an error names the key's file and line (or its ``--set``);
    without it (a verb on a finished run) it raises the ``PhaseError`` of :meth:`ExportOptions.from_section`."""
    if err is None:
        return ExportOptions.from_section(section, path)
    try:
        return ExportOptions.from_section(section, path, run=True)
    except PhaseError as e:
        raise located_phase_error(e, "export", err) from None
