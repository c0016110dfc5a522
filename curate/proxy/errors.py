"""The proxy section's configuration error, apart from :mod:`curate.proxy.spec.config` so that what it parses
(:mod:`curate.proxy.spec.search`) can raise it without importing the config back."""

from __future__ import annotations

from curate.core.errors import PhaseError
from curate.core.params import Keys, SectionError


class ProxyConfigError(SectionError):
    """A ``proxy:`` section that cannot run; ``keys`` locate it under ``proxy`` (for file:line errors),
    ``msg`` (``detail``) says what is wrong."""

    def __init__(self, keys: Keys, msg: str) -> None:
        super().__init__("proxy", keys, msg)
        self.msg = msg


class EmptyRecipeError(PhaseError):
    """A recipe with too little data to train a run on (``tokens``): a search drops such a candidate."""

    def __init__(self, recipe: str, tokens: int) -> None:
        self.recipe, self.tokens = recipe, tokens
        super().__init__(f"proxy.recipes.{recipe}: only {tokens} tokens of data")
