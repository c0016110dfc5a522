"""The proxy section's configuration error, apart from :mod:`curate.proxy.spec.config` so that what it parses
(:mod:`curate.proxy.spec.search`) can raise it without importing the config back."""

from __future__ import annotations

from typing import Any

from curate.core.errors import PhaseError


class ProxyConfigError(PhaseError):
    """A ``proxy:`` section that cannot run; ``keys`` locate it under ``proxy`` (for file:line errors)."""

    def __init__(self, keys: tuple[str | int, ...], msg: str) -> None:
        self.keys, self.msg = keys, msg
        where = "proxy" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys)
        super().__init__(f"{where}: {msg}")


class EmptyRecipeError(PhaseError):
    """A recipe with too little data to train a run on (``tokens``): a search drops such a candidate."""

    def __init__(self, recipe: str, tokens: int) -> None:
        self.recipe, self.tokens = recipe, tokens
        super().__init__(f"proxy.recipes.{recipe}: only {tokens} tokens of data")


def check_keys(raw: Any, valid: list[str], where: str) -> dict[str, Any]:
    """``raw`` as a mapping whose keys are all in ``valid``; else an error naming ``where`` and the valid keys."""
    if not isinstance(raw, dict):
        raise PhaseError(f"{where}: expected a mapping, got {type(raw).__name__} {raw!r}")
    unknown = sorted(set(raw) - set(valid))
    if unknown:
        raise PhaseError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
    return raw
