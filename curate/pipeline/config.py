"""Pipeline YAML → typed config, checked before any work starts.

Errors name the file, the line and the key, what was expected and the valid choices::

    pipelines/web.yaml:7: stages[2].filter: unknown stage 'gopher_v9'; valid stages: ...

``--set a.b=c`` overrides any key by dotted path (list items by index: ``stages.3.params.threshold=0.7``);
values are parsed as YAML scalars (``curate.run(set=...)`` gives Python values, set as they are).
Stage and source parameters and the sections (``proxy:``, ``export:``, ``report:``, ``target:``) are typed
and checked by one machinery (:mod:`curate.core.params`), and every error is placed the same way
(:func:`curate.pipeline.keys.located`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from curate.core.errors import ConfigError, closest
from curate.core.params import Section, SectionError
from curate.core.registry import SECTIONS, STAGES, RegistryError, build_params
from curate.core.rules import Rule
from curate.core.select import Select
from curate.core.stage import Stage, scoring_stages
from curate.io.paths import resolve_if_found
from curate.pipeline.inputs import build_source as build_source  # importable from here, as before
from curate.pipeline.inputs import check_input, resolved_input
from curate.pipeline.keys import Keys, Override, apply_overrides, dotted, line_index, located
from curate.pipeline.validate import check_select_columns
from curate.targeting.config import TargetSpec
from curate.targeting.fitted import TargetFitted

STAGE_KEYS = ("score", "filter", "transform", "dedup", "select")
TOP_KEYS = {
    "name",
    "description",
    "input",
    "stages",
    "engine",
    "output",
    "proxy",
    "report",
    "export",
    "allow_empty",
    "target",
}
ENGINE_KEYS = {"kind", "address", "num_cpus", "max_retries"}
OUTPUT_KEYS = {"dir"}
RULE_KEYS = ("column", "min", "max", "equals", "reason", "exclusive")


@dataclass
class StageSpec:
    """One entry of ``stages:`` as written: its kind key, registry name, params and location; ``built``
    is its params dataclass, built and validated once at load (file parameters resolved)."""

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    rules: list[dict[str, Any]] = field(default_factory=list)
    where: str = ""
    built: Any = None


@dataclass
class EngineSpec:
    """The ``engine:`` section: which engine runs the stages (``ray`` or ``inline``) and how."""

    kind: str = "ray"
    address: str | None = None
    num_cpus: Any = None
    max_retries: int = 3


@dataclass
class PipelineConfig:
    """A parsed pipeline. ``raw`` is the resolved mapping (overrides applied) recorded in the manifest.

    The sections are typed objects (:class:`curate.core.params.Section`), each built once at load by the
    class registered under its name (:data:`curate.core.registry.SECTIONS`), None where the pipeline has
    no such section: ``proxy`` a ``curate.proxy.spec.config.ProxyConfig``, ``export`` a
    ``curate.export.options.ExportOptions``, ``report`` a ``curate.report.options.ReportOptions`` (typed
    here by their base, which a phase narrows to its own class: this layer imports no package above
    it), ``target`` a :class:`~curate.targeting.config.TargetSpec`.
    """

    name: str
    input: Any  # ``input:`` with its path resolved (curate.io.paths): a mapping, or a list of them
    stages: list[StageSpec]
    engine: EngineSpec
    raw: dict[str, Any]
    path: str = "<string>"
    source_params: Any = None  # the input source's params dataclass, built once from ``input``
    proxy: Section | None = None
    report: Section | None = None
    export: Section | None = None
    allow_empty: bool = False  # a run that keeps nothing (or quarantines everything) is not an error
    target: TargetSpec | None = None  # the sample target-aware scorers fit to

    def fingerprint(self) -> str:
        """Hash of what determines the curated output (input, stages and target; not engine or phases)."""
        key = {"input": self.raw.get("input"), "stages": self.raw.get("stages")}
        if self.raw.get("target") is not None:
            key["target"] = self.raw["target"]
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_pipeline(path: str | Path, overrides: Sequence[Override] | None = None) -> PipelineConfig:
    """Read, override and validate a pipeline file. Nothing is run. ``overrides``: ``KEY=VALUE`` as
    written after ``--set``, or ``(KEY, value)`` with a Python value (:func:`curate.pipeline.keys.apply_overrides`)."""
    path = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read pipeline file: {e.strerror}") from None
    return parse_pipeline(text, path=path, overrides=overrides)


def parse_pipeline(
    text: str, *, path: str = "<string>", overrides: Sequence[Override] | None = None
) -> PipelineConfig:
    """Parse and validate a pipeline's YAML ``text`` (``path`` names it in errors); nothing is run."""
    written: dict[Keys, str] = {}
    raw, lines = _read_yaml(text, path, overrides or [], written)
    err = located(path, lines, written)
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise err((unknown[0],), f"unknown key; valid keys: {', '.join(sorted(TOP_KEYS))}")
    source_params = check_input(raw.get("input"), path, err)
    input_fields = list(getattr(source_params, "keep_fields", []))
    specs = _parse_stages(raw.get("stages") or [], path, err)
    stages = [build_stage(spec) for spec in specs]
    check_select_columns(stages, list(range(len(stages))), input_fields, err)
    allow_empty = raw.get("allow_empty", False)
    if not isinstance(allow_empty, bool):
        raise err(("allow_empty",), f"expected true or false, got {allow_empty!r}")
    sections = _check_sections(raw, path, lines, err)
    _check_target_fits(sections["target"], stages, specs, err)
    return PipelineConfig(
        name=str(raw.get("name") or Path(path).stem),
        input=resolved_input(raw["input"], source_params),
        stages=specs,
        engine=_check_engine(raw.get("engine"), err),
        raw=raw,
        path=path,
        source_params=source_params,
        allow_empty=allow_empty,
        proxy=sections["proxy"],
        export=sections["export"],
        report=sections["report"],
        target=TargetSpec.narrow(sections["target"]) if sections["target"] else None,
    )


def _read_yaml(
    text: str, path: str, overrides: Sequence[Override], written: dict[Keys, str]
) -> tuple[dict[str, Any], dict[Keys, int]]:
    """The YAML mapping with ``overrides`` applied (each key path they wrote into ``written``), and
    the line of every key path in ``text``."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a pipeline is a mapping with keys name, input, stages")
    return apply_overrides(raw, overrides, written), line_index(text)


PATH_PARAMS = ("model", "tokenizer", "seed_path", "eval_paths")  # stage parameters that name files


def _resolved_paths(params: dict[str, Any], pipeline_path: str) -> dict[str, Any]:
    """A stage's file parameters resolved by the same rule as ``input.path`` when they name a file."""
    out: dict[str, Any] = {}
    for key in PATH_PARAMS:
        value = params.get(key)
        if isinstance(value, str):
            out[key] = resolve_if_found(value, pipeline_path)
        elif isinstance(value, list):
            out[key] = [resolve_if_found(v, pipeline_path) if isinstance(v, str) else v for v in value]
    return out


def _parse_stages(entries: Any, path: str, err: Any) -> list[StageSpec]:
    """Each ``stages:`` entry, checked (its file parameters resolved against the pipeline's ``path``);
    two stages may not share a label (it names columns and reasons)."""
    if not isinstance(entries, list):
        raise err(("stages",), "expected a list of stages")
    specs = [_parse_stage(i, entry, path, err) for i, entry in enumerate(entries)]
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        label = spec.label or spec.name
        if label in seen:
            raise err(
                ("stages", i),
                f"{label!r} is already stages[{seen[label]}]; give one of them a distinct "
                f"'label:' (it names the columns and the reasons)",
            )
        seen[label] = i
    return specs


def _check_engine(section: Any, err: Any) -> EngineSpec:
    """The ``engine:`` section: known keys, an engine kind, a retry count."""
    engine = dict(section or {})
    bad = sorted(set(engine) - ENGINE_KEYS)
    if bad:
        raise err(("engine", bad[0]), f"unknown key; valid keys: {', '.join(sorted(ENGINE_KEYS))}")
    retries = engine.get("max_retries", 3)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise err(("engine", "max_retries"), f"expected an integer >= 0, got {retries!r}")
    if engine.get("kind", "ray") not in ("ray", "inline"):
        raise err(("engine", "kind"), f"expected ray or inline, got {engine['kind']!r}")
    return EngineSpec(**engine)


SECTION_KEYS = ("proxy", "export", "report", "target")


def _check_sections(
    raw: dict[str, Any], path: str, lines: dict[Keys, int], err: Callable[[Keys, str], ConfigError]
) -> dict[str, Section | None]:
    """The sections, each parsed once into its typed object by the class registered under its name, so a
    typo fails before any work rather than after the run; an error names the key's file and line, or the
    ``--set`` that wrote it. ``target``'s object keeps the section's ``file:line`` for later errors."""
    out: dict[str, Section | None] = {}
    for key in SECTION_KEYS:
        if raw.get(key) is None:
            out[key] = None
            continue
        try:
            out[key] = SECTIONS.get(key).parse(raw[key], pipeline_path=path, load=True)
        except SectionError as e:
            raise err((key, *e.keys), e.detail) from None
    if out["target"] is not None:
        line = lines.get(("target",))
        out["target"] = dataclasses.replace(
            TargetSpec.narrow(out["target"]), where=f"{path}:{line}" if line else path
        )
    return out


def _check_target_fits(
    target: Section | None,
    stages: list[Stage],
    specs: list[StageSpec],
    err: Callable[[Keys, str], ConfigError],
) -> None:
    """A target-aware stage without a model needs a ``target:`` section (:mod:`curate.targeting.config`)."""
    if target is not None:
        return
    for i, stage in enumerate(scoring_stages(stages)):
        if isinstance(stage, TargetFitted) and stage.needs_fit():
            raise err(
                ("stages", i, specs[i].kind),
                f"{stage.name} is fitted to a target sample: add a target: section (path or source; "
                "docs/goodput.md) or set params.model to a fitted model",
            )


def _parse_stage(i: int, entry: Any, pipeline_path: str, err: Any) -> StageSpec:
    """Entry ``i`` of ``stages:``: one kind key naming a registered stage of that kind, valid params
    (built and validated once, then their file parameters resolved against ``pipeline_path``)."""
    where = ("stages", i)
    if not isinstance(entry, dict):
        raise err(where, f"expected a mapping with one of {', '.join(STAGE_KEYS)}")
    kinds = [k for k in STAGE_KEYS if k in entry]
    if len(kinds) != 1:
        raise err(
            where, f"expected exactly one of {', '.join(STAGE_KEYS)}; got keys {', '.join(map(str, entry))}"
        )
    kind = kinds[0]
    extra = sorted(set(entry) - {kind, "params", "label"})
    if extra:
        raise err((*where, extra[0]), "unknown key; valid keys: " + f"{kind}, params, label")
    if kind == "select":
        return _parse_select(where, entry, err)
    name = entry[kind]
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise err((*where, "params"), "expected a mapping")
    try:
        cls = STAGES.get(str(name))
    except RegistryError as e:
        raise err((*where, kind), str(e)) from None
    allowed = {
        "score": ("score",),
        "filter": ("score",),
        "transform": ("transform", "dedup"),
        "dedup": ("dedup", "transform"),
    }[kind]
    if cls.kind not in allowed:
        raise err((*where, kind), f"{name!r} is a {cls.kind} stage; use '{cls.kind}: {name}'")
    try:
        built = build_params(cls.Params, params, where=f"{name}.params")
        stage = cls(built)
        stage.validate()
    except RegistryError as e:
        raise err((*where, "params", *e.keys), e.detail) from None
    except ValueError as e:  # validate() names the parameter first: "threshold: expected ..."
        names = (str(name), str(entry.get("label") or name))
        raise _params_error(err, where, params, str(e), names) from None
    if kind == "filter" and not stage.reference_rules():
        raise err((*where, kind), f"{name!r} has no reference thresholds; use 'score:' and a 'select:'")
    resolved = _resolved_paths(params, pipeline_path)
    if resolved:
        kept_types = {
            k: type(getattr(built, k))(v) if isinstance(v, list) else v for k, v in resolved.items()
        }
        built = dataclasses.replace(built, **kept_types)
    return StageSpec(
        kind=kind,
        name=str(name),
        params={**params, **resolved},
        label=entry.get("label"),
        where=dotted(where),
        built=built,
    )


def _params_error(
    err: Callable[[Keys, str], ConfigError],
    where: Keys,
    params: dict[str, Any],
    message: str,
    names: tuple[str, ...],
) -> ConfigError:
    """A stage's ``validate()`` error at the parameter it names (``threshold: expected ...``, or
    ``model 'x' is not ...``), after the stage's name or label some stages put first (``names``: the key
    path says which stage it is); at ``params`` when it names none of them."""
    first, sep, rest = message.partition(": ")
    detail = rest if sep and first in names else message
    field_name, sep, rest = detail.partition(": ")
    if sep and field_name in params:
        return err((*where, "params", field_name), rest)
    named = re.match(r"[A-Za-z_]\w*", detail)
    if named and named.group() in params:
        return err((*where, "params", named.group()), detail)
    return err((*where, "params"), detail)


def _parse_select(where: tuple[Any, ...], entry: dict[str, Any], err: Any) -> StageSpec:
    """A ``select:`` entry: a non-empty list of rule mappings, each a valid :class:`Rule`."""
    rules = entry["select"]
    if not isinstance(rules, list) or not rules:
        raise err((*where, "select"), "expected a non-empty list of rules {column, min, max, equals}")
    keys = "keys: " + ", ".join(RULE_KEYS)
    for j, r in enumerate(rules):
        at = (*where, "select", j)
        if not isinstance(r, dict):
            raise err(at, f"bad rule: a rule is a mapping; {keys}")
        try:  # types (a bound is a number) as for stage parameters, then the rule's own checks
            build_params(Rule, r, where="rule")
        except RegistryError as e:
            msg = e.detail
            if e.key not in RULE_KEYS:
                msg = f"unknown key{closest(str(e.key), list(RULE_KEYS))}"
            elif e.key in ("min", "max"):
                msg = f"expected a number, got {type(r[e.key]).__name__} {r[e.key]!r}"
            raise err((*at, e.key) if e.key else at, f"bad rule: {msg}; {keys}") from None
        except ValueError as e:
            raise err(at, f"bad rule: {e}; {keys}") from None
    return StageSpec(
        kind="select", name="select", rules=list(rules), label=entry.get("label"), where=dotted(where)
    )


def build_stages(cfg: PipelineConfig) -> list[Any]:
    """Instantiate the stages, one per ``stages:`` entry (no setup: models load on the workers)."""
    return [build_stage(spec) for spec in cfg.stages]


def build_stage(spec: StageSpec) -> Stage:
    """The stage of one ``stages:`` entry; ``filter: NAME`` is the scorer as one filter stage."""
    if spec.kind == "select":
        label = spec.label or "select"
        return Select(Select.Params(rules=spec.rules), label=label, prefix=label)
    cls = STAGES.get(spec.name)
    # a copy of the params built at load: a fit points its own stage's copy at the fitted model
    stage = cls(dataclasses.replace(spec.built), label=spec.label)
    return stage.as_filter() if spec.kind == "filter" else stage
