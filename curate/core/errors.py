"""The errors every layer may raise: a pipeline that cannot run, a phase whose section or work failed."""

from __future__ import annotations

import difflib


class ConfigError(ValueError):
    """A pipeline file that cannot run; the message names file, line and key."""


class PhaseError(RuntimeError):
    """A phase's section of the pipeline config is wrong, or its work failed; the message says which."""


def closest(word: str, choices: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""
