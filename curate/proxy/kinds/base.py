"""Recipe kinds: what one recipe or control of a measurement trains on, and what it adds to the report.

A *recipe* is a candidate dataset (raw input, curated rows, a selection over stored scores, ...); a
*control* is a dataset the measurement builds to check the instrument itself (a random subsample of raw,
raw with a known share corrupted, the rejected rows). Each kind is one class in one module of this
package, registered in :data:`KINDS` by its ``KIND`` name; nothing outside its module compares a recipe's
kind with a string. A kind says:

* where its rows come from: :meth:`Recipe.file_jobs` (token-shard jobs over the run's ``kept/`` and
  ``rejected/`` files, built together in one pass per file), or :meth:`Recipe.derive` (built afterwards
  from other recipes' shards, e.g. a per-seed document draw);
* where each run reads and writes: :meth:`Recipe.train_prefix` (its shard at a seed) and
  :meth:`Recipe.run_folder`;
* the ``proxy:`` keys it owns, if any (``SETTINGS``: a dataclass built like stage parameters, read with
  :meth:`Recipe.own`; a control's dose, its calibrated spread), so its settings live in its module;
* its role (``ROLE``: ``recipe``, ``control``, or ``arm``: a run of the data-limited arm, reported apart),
  whether curation cost counts against it (``CURATED``) and whether it trains at the main point only
  (``MAIN_ONLY``);
* what it adds to its ``goodput.json`` entry (:meth:`Recipe.report_fields`);
* for a control, its check (:meth:`Recipe.check`: its block of ``goodput.json``'s ``controls``), whether
  and why its result forbids a decision (``GATE``, :meth:`Recipe.failure`), the warning it raises
  (:meth:`Recipe.warning`) and where on the scale ladder it fails (:meth:`Recipe.ladder_failure`).

``proxy.recipes`` entries name a user kind with ``from:``, the rest of the entry built into the kind's
``Params`` dataclass (:meth:`Recipe.from_spec`); ``proxy.controls``
names control kinds. Adding a kind is one module here (registered with ``@register``, imported by this
package's ``__init__``) and one test: ``docs/adding-a-recipe.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import numpy as np

from curate.core.errors import PhaseError
from curate.core.params import build_params, invalid

if TYPE_CHECKING:
    from curate.instrument.shards import ShardJob

R = TypeVar("R", bound="type[Recipe]")


class Settings(Protocol):
    """What a kind reads of the measurement's settings (:class:`curate.proxy.spec.config.ProxyConfig`)."""

    baseline: str
    null_draw: int
    null_margin: float | None
    noise: Any
    kind_settings: dict[str, Any]  # each kind's own keys, by its KIND (:func:`kind_settings`)

    def points(self) -> list[Any]: ...


KINDS: dict[str, type[Recipe]] = {}


def register(cls: R) -> R:
    """Class decorator: register a kind under its ``KIND`` name (which must be new)."""
    name = cls.KIND
    if not name or (name in KINDS and KINDS[name] is not cls):
        raise ValueError(f"recipe kind {name!r}: empty or registered twice")
    KINDS[name] = cls
    return cls


def kind(name: str, *, where: str = "recipe kind") -> type[Recipe]:
    """The kind registered as ``name``; an unknown name lists the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        raise PhaseError(f"{where}: {name!r}; valid: {', '.join(sorted(KINDS))}") from None


def user_kinds() -> list[str]:
    """The kinds a ``proxy.recipes`` entry may name with ``from:``."""
    return [k for k, c in KINDS.items() if c.USER]


def owned_keys() -> dict[str, str]:
    """The ``proxy:`` keys the kinds own (their ``SETTINGS`` fields), each with its kind's name."""
    return {f.name: k for k, c in KINDS.items() if c.SETTINGS is not None for f in fields(c.SETTINGS)}


def kind_settings(raw: Mapping[str, Any] | None, *, where: str = "proxy") -> dict[str, Any]:
    """Every kind's own keys of the ``proxy:`` mapping ``raw``, built into its ``SETTINGS`` dataclass by the
    machinery of stage parameters (types, ranges, its ``validate()``; errors at ``proxy.<key>``), the
    kind's defaults where a key is not written."""
    written = dict(raw or {})
    out: dict[str, Any] = {}
    for name, cls in KINDS.items():
        if cls.SETTINGS is not None:
            keys = {f.name for f in fields(cls.SETTINGS)}
            mine = {k: v for k, v in written.items() if k in keys}
            out[name] = build_params(cls.SETTINGS, mine, where=where, noun="key")
    return out


def control_kinds() -> list[str]:
    """The kinds ``proxy.controls`` may name, in the order the phase builds them."""
    return [k for k, c in sorted(KINDS.items(), key=lambda kv: kv[1].ORDER) if c.ROLE == "control"]


# The power at which a control's miss is evidence the instrument is blind: below it, a working instrument
# misses the control often enough that a miss makes the run inconclusive (a control's stated power)
FIRM_POWER = 0.95


@dataclass
class Evidence:
    """What a control's check reads at the main point: the baseline's measured curve (``base``, a
    :class:`curate.proxy.statistics.analysis.Baseline`), every recipe's headline bpb per seed (``heads``: seeds x
    eval points, the last at T), the baseline's and the controlled recipe's names, each recipe's epochs at
    T, each recipe's stream shared with the baseline (``shares``) and the settings."""

    base: Any
    heads: dict[str, np.ndarray]
    baseline: str
    controlled: str | None
    epochs: dict[str, float]
    shares: dict[str, dict[str, Any]]
    settings: Settings


@dataclass(frozen=True)
class RunFiles:
    """The finished run's files a recipe's rows are read from."""

    kept: list[Path]
    rejected: list[Path]


@dataclass
class Recipe:
    """One recipe or control of a measurement: its ``name`` (unique in the measurement) and its kind."""

    name: str

    KIND: ClassVar[str] = ""
    ROLE: ClassVar[str] = "recipe"  # or "control": built by the phase, never ranked or chosen
    USER: ClassVar[bool] = False  # may be written under proxy.recipes as `from: <KIND>`
    CURATED: ClassVar[bool] = True  # its rows went through the pipeline's stages: curation cost counts
    FROM_FILES: ClassVar[bool] = True  # its shard is built from the run's files (else derived)
    ORDER: ClassVar[int] = 0  # controls are built in this order
    MAIN_ONLY: ClassVar[bool] = False  # trained at the main point only, not at the ladder's other points
    GATE: ClassVar[int | None] = None  # a control that gates the decision: its place among the reasons
    NOT_FOR_MIXTURES: ClassVar[str] = ""  # a control a mixture search cannot build: why (else built there)
    Params: ClassVar[type[Any] | None] = None  # a USER kind's entry as written (from_spec), a dataclass
    SETTINGS: ClassVar[type[Any] | None] = None  # the proxy: keys this kind owns, a dataclass (own())

    @classmethod
    def own(cls, cfg: Settings) -> Any:
        """This kind's own ``proxy:`` keys (its ``SETTINGS``) in the measurement ``cfg``: as written, else
        the kind's defaults."""
        assert cls.SETTINGS is not None, f"{cls.KIND!r} owns no proxy: keys"
        got = cfg.kind_settings.get(cls.KIND)
        return got if got is not None else cls.SETTINGS()

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> list[Recipe]:
        """The recipes one ``proxy.recipes`` entry of this kind stands for (a sweep stands for several): the
        entry's keys (besides ``from:``) built into the kind's ``Params`` dataclass by the machinery of
        stage parameters (:func:`curate.core.params.build_params`: types, ranges, choices, unknown keys,
        its ``validate()``), then :meth:`from_params`. Errors are
        :class:`curate.core.params.RegistryError` located under the entry (``select[0].minimum``)."""
        if cls.Params is None:
            raise invalid("from", f"{cls.KIND!r} is not a recipe a pipeline can name")
        return cls.from_params(name, build_params(cls.Params, spec, where="", noun="key", ignore=("from",)))

    @classmethod
    def from_params(cls, name: str, params: Any) -> list[Recipe]:
        """The recipes of one entry, from its built ``Params``."""
        return [cls(name)]

    def requires(self) -> list[str]:
        """The recipes this one is derived from (built from the run's files first)."""
        return []

    def rules(self) -> list[dict[str, Any]]:
        """The select rules over stored scores this recipe applies (none but for a selection)."""
        return []

    def stages_left_out(self) -> list[str]:
        """The stages whose rejected rows this recipe takes back (none but for an ablation)."""
        return []

    def resolved(self, files: RunFiles) -> Recipe:
        """This recipe ready to build: its selection's quantile bounds resolved over the run's rows."""
        return self

    def data_folder(self, cfg: Settings) -> str:
        """Its token shards' folder under ``proxy/data/``."""
        return self.name

    def file_jobs(self, cfg: Settings, files: RunFiles, out: Path, common: dict[str, Any]) -> list[ShardJob]:
        """The token-shard jobs over the run's files (``out``: the shards' folder; ``common``: the
        tokenizer and decontamination every job shares)."""
        return []

    def derive(
        self, cfg: Settings, pdir: Path, data: dict[str, dict[str, Any]], controlled: str | None
    ) -> dict[str, Any] | None:
        """Its training data built from other recipes' (``data``: their shards' meta), once every
        file-based shard is built; None: it has none of its own beyond :meth:`file_jobs`'."""
        return None

    def skip_reason(self, data: dict[str, dict[str, Any]], min_tokens: int) -> str | None:
        """Why this control cannot be trained after all (too little data), else None."""
        return None

    def requirement(self, baseline: Recipe) -> str | None:
        """Why this control cannot be built against ``baseline``, else None."""
        return None

    def train_prefix(self, cfg: Settings, pdir: Path, seed: int) -> Path:
        """The shard a run of this recipe at ``seed`` trains on."""
        return pdir / "data" / self.data_folder(cfg) / "train"

    def run_folder(self, cfg: Settings) -> str:
        """Its runs' folder (``<folder>/seed<k>``) at a ladder point."""
        return self.name

    def report_fields(self, data: dict[str, Any], baseline: str) -> dict[str, Any]:
        """What it adds to its ``goodput.json`` entry besides every recipe's numbers."""
        return {}

    def check(self, ev: Evidence) -> dict[str, Any] | None:
        """A control's block of ``goodput.json``'s ``controls`` (None: no check, or not enough to check)."""
        return None

    def failure(self, block: dict[str, Any]) -> str | None:
        """Why this control's result (its ``block``) means the run cannot support a decision, else None."""
        return None

    def underpowered(self, block: dict[str, Any]) -> bool:
        """Whether this control's failure is a miss at a stated power below :data:`FIRM_POWER`: a working
        instrument fails it that often, so the miss makes the run inconclusive, not shown broken."""
        return False

    def warning(self, block: dict[str, Any]) -> str | None:
        """The warning the run opens with because of this control's result, else None."""
        return None

    def ladder_failure(
        self, points: list[dict[str, Any]], cfg: Settings
    ) -> tuple[str, list[str], str] | None:
        """Where this control fails at the ladder's other ``points``: the ladder block's key, the points'
        names and the warning; None where it fails nowhere."""
        return None

    def record(self) -> dict[str, Any]:
        """The recipe as a JSON record (its kind and fields)."""
        return {"name": self.name, "kind": self.KIND}
