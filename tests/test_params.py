"""The one machinery that types every configuration a pipeline writes (:mod:`curate.core.params`): nested
dataclasses and lists of them, typed mappings, a count or a list, run-time choices, ranges of list items,
cross-field checks in ``validate()``, and every error with the key path of the value at fault."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest

from curate.core.errors import PhaseError
from curate.core.params import (
    OneOf,
    Parse,
    RegistryError,
    Section,
    SectionError,
    bounds,
    build_params,
    build_section,
    internal,
    invalid,
)


def _count_or_list(value: object) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"expected a count of at least 1, got {value!r}")
        return tuple(range(value))
    if not isinstance(value, list) or not all(type(x) is int for x in value):
        raise ValueError(f"expected a count or a list of seeds, got {value!r}")
    return tuple(value)


Seeds = Annotated[tuple[int, ...], Parse(_count_or_list)]


@dataclass(frozen=True)
class Point:
    model: Annotated[str, OneOf(lambda: ["tiny", "small"])]
    budget: int = field(metadata=bounds(1))
    seeds: Seeds = (0,)


@dataclass(frozen=True)
class Tok:
    path: str | None = None
    sha256: str | None = None

    def validate(self) -> None:
        if self.sha256 and not self.path:
            raise invalid("sha256", "pins a file: give path too")


@dataclass(kw_only=True)
class Settings:
    kind: Literal["text", "choice"] = "text"
    points: list[Point] = field(default_factory=list)
    tok: Tok | None = None
    weights: dict[str, float] = field(default_factory=dict)
    curve: list[float] = field(default_factory=lambda: [1.0], metadata=bounds(0, lo_open=True))
    share: float = field(default=0.5, metadata=bounds(0, 1, lo_open=True, hi_open=True))
    where: str = field(default="", metadata=internal())
    baseline: str = "raw"
    names: list[str] = field(default_factory=lambda: ["raw"])

    def validate(self) -> None:
        if self.baseline not in self.names:
            raise invalid("baseline", f"{self.baseline!r} is not one of {self.names}")


def _error(raw: object) -> RegistryError:
    with pytest.raises(RegistryError) as e:
        build_params(Settings, raw, where="sec", noun="key")  # type: ignore[arg-type]
    return e.value


def test_nested_dataclasses_lists_of_them_and_typed_mappings_are_built() -> None:
    s = build_params(
        Settings,
        {
            "points": [
                {"model": "tiny", "budget": 10, "seeds": 3},
                {"model": "small", "budget": 20, "seeds": [5]},
            ],
            "tok": {"path": "t.json", "sha256": "ab"},
            "weights": {"a": 1, "b": 0.5},
        },
        where="sec",
    )
    assert s.points == [Point("tiny", 10, (0, 1, 2)), Point("small", 20, (5,))]
    assert s.tok == Tok("t.json", "ab")
    assert s.weights == {"a": 1.0, "b": 0.5}
    assert isinstance(s.weights["a"], float)
    assert build_params(Settings, None, where="sec") == Settings()


@pytest.mark.parametrize(
    ("raw", "keys", "detail"),
    [
        (
            {"kin": "text"},
            ("kin",),
            "unknown key; valid keys: baseline, curve, kind, names, points, share, tok, weights",
        ),
        (
            {"where": "x"},
            ("where",),
            "unknown key; valid keys: baseline, curve, kind, names, points, share, tok, weights",
        ),
        (
            {"kind": "choise"},
            ("kind",),
            "expected one of 'text', 'choice', got 'choise' (did you mean 'choice'?)",
        ),
        (
            {"points": [{"model": "tiny", "budget": 1}, {"model": "smal", "budget": 1}]},
            ("points", 1, "model"),
            "expected one of 'tiny', 'small', got 'smal' (did you mean 'small'?)",
        ),
        (
            {"points": [{"model": "tiny", "budget": 0}]},
            ("points", 0, "budget"),
            "expected a value >= 1, got 0",
        ),
        ({"points": [{"model": "tiny"}]}, ("points", 0, "budget"), "required (it has no default)"),
        (
            {"points": [{"model": "tiny", "budget": 1, "seeds": 0}]},
            ("points", 0, "seeds"),
            "expected a count of at least 1, got 0",
        ),
        ({"points": {"model": "tiny"}}, ("points",), "expected a list, got dict {'model': 'tiny'}"),
        ({"tok": {"sha256": "ab"}}, ("tok", "sha256"), "pins a file: give path too"),
        ({"tok": {"path": 3}}, ("tok", "path"), "expected str, got int 3"),
        ({"tok": "t.json"}, ("tok",), "expected a mapping, got str 't.json'"),
        ({"weights": {"a": "x"}}, ("weights", "a"), "expected float, got str 'x'"),
        ({"curve": [1, 0]}, ("curve", 1), "expected a value > 0, got 0.0"),
        ({"share": 1}, ("share",), "expected a value in (0, 1), got 1.0"),
        ({"baseline": "x"}, ("baseline",), "'x' is not one of ['raw']"),
        ({"share": True}, ("share",), "expected float, got bool True"),
    ],
)
def test_every_error_names_the_key_path_of_the_value_at_fault(raw, keys, detail) -> None:
    e = _error(raw)
    assert (e.keys, e.detail) == (keys, detail)
    path = "sec" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys)
    assert str(e) == f"{path}: {detail}"


def test_ignored_and_excluded_keys() -> None:
    assert build_params(Tok, {"from": "x", "path": "p"}, where="t", noun="key", ignore=("from",)) == Tok("p")
    with pytest.raises(RegistryError) as e:
        build_params(Tok, {"sha256": "a"}, where="t", noun="key", exclude=("sha256",))
    assert str(e.value) == "t.sha256: unknown key; valid keys: path"


@dataclass(frozen=True)
class Opts(Section):
    bins: int = field(default=40, metadata=bounds(1))


Opts.name = "opts"


def test_a_section_parses_by_the_machinery_and_a_phase_narrows_it() -> None:
    assert Opts.parse({"bins": 3}) == Opts(3)
    assert Opts.parse(None) == Opts()
    with pytest.raises(SectionError) as e:
        Opts.parse({"bins": 0})
    assert (str(e.value), e.value.keys, e.value.detail) == (
        "opts.bins: expected a value >= 1, got 0",
        ("bins",),
        "expected a value >= 1, got 0",
    )
    assert isinstance(e.value, PhaseError)  # a verb on a finished run shows it as it is
    with pytest.raises(SectionError, match=r"^opts: expected a mapping, got list \[1\]$"):
        build_section(Opts, [1], "opts")
    section: Section | None = Opts(2)
    assert Opts.narrow(section).bins == 2
    with pytest.raises(
        PhaseError, match=r"^opts: expected the parsed opts: section \(Opts\), got no section$"
    ):
        Opts.narrow(None)
