"""The recipe kinds' registry: every built-in kind registered once, controls in the order the phase builds
them, and an unknown name listing the known ones."""

from __future__ import annotations

import pytest

from curate.core.errors import PhaseError
from curate.proxy.kinds import KINDS, Recipe, control_kinds, kind, register, user_kinds


def test_the_built_in_kinds_and_their_roles():
    assert sorted(KINDS) == ["kept", "limited", "mixture", "null", "planted", "raw", "rejected", "sample"]
    assert user_kinds() == ["kept", "raw", "sample"]
    assert control_kinds() == ["null", "rejected", "planted"]
    with pytest.raises(
        PhaseError,
        match=r"^recipe kind: 'nul'; valid: kept, limited, mixture, null, planted, raw, rejected, sample$",
    ):
        kind("nul")


def test_a_kind_is_registered_once():
    class Twice(Recipe):
        KIND = "raw"

    with pytest.raises(ValueError, match="registered twice"):
        register(Twice)
    assert KINDS["raw"] is not Twice


def test_a_kinds_own_keys_are_built_by_the_kind_and_read_back_with_own():
    from curate.core.params import RegistryError
    from curate.proxy.kinds.base import kind_settings, owned_keys
    from curate.proxy.kinds.planted import Planted, PlantedSettings
    from curate.proxy.spec.config import parse_section

    assert owned_keys() == {"planted": "planted", "planted_corruption": "planted", "planted_noise": "planted"}
    built = kind_settings({"planted": 0.6, "budget": 10, "planted_noise": {"sd": 0.04, "dof": 100}})
    assert built["planted"].planted == 0.6
    assert built["planted"].planted_noise.noise().sd == 0.04
    assert Planted.own(parse_section({"planted": 0.6})).planted == 0.6
    assert Planted.own(parse_section(None)) == PlantedSettings()  # not written: the kind's defaults
    with pytest.raises(RegistryError, match=r"^proxy\.planted_noise\.dof: "):
        kind_settings({"planted_noise": {"sd": 0.04, "dof": 0}})


def test_a_control_is_named_only_in_its_module_its_registration_and_the_reports_label_table():
    """Adding a control is its module (and a row of the label table): no other module of the package names
    the planted control, in code or in words."""
    from pathlib import Path

    import curate

    root = Path(curate.__file__).parent
    named = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "planted" in p.read_text())
    assert named == ["proxy/kinds/__init__.py", "proxy/kinds/planted.py", "report/fmt.py"]
