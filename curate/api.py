"""The Python API: run a pipeline, or filter a few texts in a notebook, without the command line.

    import curate
    manifest = curate.run("pipelines/web.yaml", output="runs/web", set={"input.path": "data/*.jsonl"})
    table = curate.filter(["some text", "more text"], "gopher_quality_v1", "c4_quality_v1")
    table.to_pandas()[["keep", "reason", "gopher_quality_v1.word_count"]]

Both check their arguments exactly as ``curate run`` does (unknown stages and parameters, bounds, select
columns) and raise the same exceptions (:class:`curate.pipeline.config.ConfigError`, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if (
    TYPE_CHECKING
):  # pyarrow loads on first use: `import curate` must start no thread (see curate/runtime/netns.py)
    import pyarrow as pa

    from curate.pipeline.keys import Override

KEEP, REASON = "keep", "reason"
EMPTY_TEXT = "quarantine:empty_text"  # the reason curate.run's readers give an empty document


def run(
    pipeline: str | Path,
    *,
    output: str | Path | None = None,
    set: dict[str, Any] | None = None,
    input: str | None = None,
    engine: str | None = None,
    progress: bool = False,
    phases: bool = True,
) -> dict[str, Any]:
    """Run the pipeline YAML ``pipeline`` into ``output`` (default ``runs/<name>``); return its manifest.

    ``set`` overrides config keys by dotted path, as ``--set`` does (``{"stages.0.params.form": "NFKC"}``;
    list items by index), with Python values set as they are;
    ``input`` replaces ``input.path``; ``engine`` is ``ray`` (embedded, or ``RAY_ADDRESS``) or
    ``inline`` (this process, no Ray). ``phases=False`` skips proxy runs, export and report. A rerun
    into the same ``output`` resumes. Raises :class:`curate.pipeline.validate.EmptyRunError` when the run kept
    nothing (unless the pipeline sets ``allow_empty: true``).
    """
    from curate.compose import PHASES
    from curate.pipeline.config import load_pipeline
    from curate.runtime.runner import run_pipeline

    # Python values are set as they are (no round trip through YAML text): the pipeline's override setter
    overrides: list[Override] = list((set or {}).items())
    if input is not None:
        overrides.append(("input.path", input))
    cfg = load_pipeline(pipeline, overrides)
    if engine is not None:
        cfg.engine.kind = engine
    out = output or (cfg.raw.get("output") or {}).get("dir") or f"runs/{cfg.name}"
    return run_pipeline(cfg, out, progress=progress, phases=PHASES if phases else ())


def filter(
    docs: Sequence[str] | pa.Table,
    *stages: str,
    params: dict[str, dict[str, Any]] | None = None,
) -> pa.Table:
    """Score and decide ``docs`` (a list of strings, or a table with a ``text`` column) with ``stages``.

    Each stage runs on every document, so every row gets every score; a stage with reference
    thresholds (e.g. ``gopher_quality_v1``) also decides, as ``filter:`` does in a pipeline, and a
    document's ``reason`` is the first failing check in stage order, exactly as a run records it.
    ``params`` maps a stage name to its parameters (``{"gopher_quality_v1": {"min_doc_words": 20}}``).
    Global stages (dedup) need a whole corpus: use :func:`run`.

    Returns the input columns (``id`` ``<n>`` and ``source`` ``api`` added when absent), ``keep``
    (bool), ``reason`` (null when kept) and the score columns ``<stage>.<field>``, in input order.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import yaml

    from curate.core import schema
    from curate.core.errors import ConfigError
    from curate.core.registry import STAGES, RegistryError, build_params
    from curate.pipeline.config import build_stages, parse_pipeline

    if not stages:
        raise ValueError(
            "curate.filter: name at least one stage, e.g. curate.filter(texts, 'gopher_quality_v1')"
        )
    params = dict(params or {})
    unknown = sorted(set(params) - set(stages))
    if unknown:
        raise ValueError(
            f"curate.filter: params for {', '.join(unknown)}, which is not among the stages {', '.join(stages)}"
        )
    table = _as_table(docs)
    entries = []
    for name in stages:
        cls = STAGES.get(name)
        kind = {"score": "score", "transform": "transform"}.get(cls.kind)
        if kind is None:
            raise ValueError(
                f"curate.filter: {name} is a {cls.kind} stage (it needs every document); use curate.run"
            )
        try:
            if (
                kind == "score"
                and cls(build_params(cls.Params, params.get(name), where=name)).reference_rules()
            ):
                kind = "filter"  # a scorer with reference thresholds decides, as `filter:` does
        except RegistryError:
            pass  # parse_pipeline below reports it with the key
        entries.append({kind: name, "params": params.get(name) or {}})
    doc = {"name": "api", "input": {"format": "jsonl", "path": "-"}, "stages": entries}
    try:
        cfg = parse_pipeline(yaml.safe_dump(doc, sort_keys=False), path="curate.filter")
    except ConfigError as e:
        # The "file:line" of a generated YAML means nothing to the caller; the stage and key do.
        *_, key, msg = ["", "", *str(e).split(": ", 2)]
        i, _, rest = key.removeprefix("stages[").partition("]")
        if i.isdigit() and int(i) < len(stages):
            key = stages[int(i)] + rest
        raise ConfigError(f"curate.filter: {key}: {msg}" if key else f"curate.filter: {msg}") from None
    # One rule with curate.run: a document whose text is empty or whitespace is quarantined by the
    # reader there, before any stage sees it, so it gets that reason here too (not a stage's check).
    text = table.column(schema.TEXT)
    empty = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(pc.fill_null(text, "")), ""), True)
    for st in build_stages(cfg):
        st.ensure_setup()
        table = st.process(table) if table.num_rows else table
    reject = (
        table.column(schema.REJECT)
        if schema.REJECT in table.column_names
        else pa.nulls(table.num_rows, pa.string())
    )
    if table.num_rows:
        reject = pc.if_else(empty, pa.scalar(EMPTY_TEXT, pa.string()), reject.cast(pa.string()))
    table = table.drop_columns([c for c in (schema.REJECT,) if c in table.column_names])
    scores = [c for c in table.column_names if c not in docs_columns(docs, table)]
    base = table.select(docs_columns(docs, table))
    base = base.append_column(KEEP, pc.is_null(reject)).append_column(REASON, reject.cast(pa.string()))
    for c in scores:
        base = base.append_column(c, table.column(c))
    return base


def docs_columns(docs: Sequence[str] | pa.Table, table: pa.Table) -> list[str]:
    """The columns the caller gave plus the base ones added for them."""
    import pyarrow as pa

    from curate.core import schema

    given = list(docs.column_names) if isinstance(docs, pa.Table) else [schema.TEXT]
    return [schema.ID, schema.SOURCE] + [c for c in given if c not in (schema.ID, schema.SOURCE)]


def _as_table(docs: Sequence[str] | pa.Table) -> pa.Table:
    import pyarrow as pa

    from curate.core import schema

    if isinstance(docs, str):
        raise TypeError(
            "curate.filter: docs is a list of strings or a table, not one string; wrap it in a list"
        )
    if isinstance(docs, pa.Table):
        if schema.TEXT not in docs.column_names:
            raise ValueError(
                f"curate.filter: the table has no {schema.TEXT!r} column; columns: {', '.join(docs.column_names)}"
            )
        table = docs
    else:
        texts = list(docs)
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise TypeError(
                f"curate.filter: docs[{bad[0]}] is a {type(texts[bad[0]]).__name__}, not a string"
            )
        table = pa.table({schema.TEXT: pa.array(texts, pa.string())})
    n = table.num_rows
    if schema.ID not in table.column_names:
        table = table.append_column(schema.ID, pa.array([str(i) for i in range(n)], pa.string()))
    if schema.SOURCE not in table.column_names:
        table = table.append_column(schema.SOURCE, pa.array(["api"] * n, pa.string()))
    return table
