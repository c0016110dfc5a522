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
