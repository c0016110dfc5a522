"""Recipe and control kinds (:mod:`curate.proxy.kinds.base`), one module each; importing the package
registers the built-in ones (a new kind's module is added to the import below)."""

from curate.proxy.kinds import kept, limited, mixture, null, planted, raw, rejected, sample
from curate.proxy.kinds.base import KINDS, Recipe, RunFiles, control_kinds, kind, register, user_kinds

__all__ = [
    "KINDS",
    "Recipe",
    "RunFiles",
    "control_kinds",
    "kept",
    "kind",
    "limited",
    "mixture",
    "null",
    "planted",
    "raw",
    "register",
    "rejected",
    "sample",
    "user_kinds",
]
