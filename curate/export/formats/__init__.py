"""The export formats: one module each, registered by name (:data:`base.WRITERS`).

Every public module of this package (no leading underscore; ``base`` holds the interface) is imported
here, so each registers its writer; a new format is a new module, with no list to edit. Everything else
the export knows of its formats is asked of the registry when needed:

* :func:`names`: the formats (or those of one kind), in the order help and errors list them: the default
  formats first, text before tokens, then by name;
* :func:`defaults`: what an export writes when ``export.formats`` is not given;
* :func:`writers`: a writer for each format asked for;
* :func:`owned`: the names under ``export/`` the formats write.
"""

from __future__ import annotations

import importlib
import pkgutil

from curate.export.formats.base import WRITERS, Writer


def _register_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_register_all()


def registered() -> list[type[Writer]]:
    """Every registered writer class, in listing order (:func:`names`)."""
    classes: list[type[Writer]] = [WRITERS.get(n) for n in WRITERS.names()]
    return sorted(classes, key=lambda w: (not w.default, w.tokens, w.name))


def names(*, tokens: bool | None = None) -> tuple[str, ...]:
    """The formats' names; ``tokens``: only the token formats (True) or the text formats (False)."""
    return tuple(w.name for w in registered() if tokens is None or w.tokens == tokens)


def defaults(*, tokenizer: bool, tokens: bool | None = None) -> tuple[str, ...]:
    """The formats written when ``export.formats`` is not given: the default ones, less the token formats
    when no tokenizer is named; ``tokens`` as for :func:`names`."""
    return tuple(
        w.name
        for w in registered()
        if w.default and (tokenizer or not w.tokens) and (tokens is None or w.tokens == tokens)
    )


def writers(formats: tuple[str, ...] | list[str]) -> list[Writer]:
    """A writer for each of ``formats`` (registered names), in listing order; an unknown name raises
    :class:`~curate.core.registry.RegistryError` listing the known ones."""
    wanted = {WRITERS.get(name).name for name in formats}
    return [w() for w in registered() if w.name in wanted]


def owned() -> tuple[str, ...]:
    """Every name directly under ``export/`` that some format writes."""
    return tuple(dict.fromkeys(name for w in registered() for name in w.owns))
