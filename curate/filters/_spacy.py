"""Importing spaCy for its tokenizer and sentencizer rules without importing torch.

spaCy imports thinc, and thinc's ``compat`` module imports torch when it is installed (torch is in our
environment for the proxy models), which costs ~2.5 CPU-s per process (and per Ray worker) although the
heuristic filters use spaCy's rule-based tokenizer and sentencizer only, which never touch thinc's
models. :func:`import_spacy` imports spaCy with torch made unimportable for the duration of that import;
thinc then records ``has_torch = False`` for this process, and torch itself stays importable by anyone
else afterwards. Where torch is already imported, nothing is blocked (there is nothing left to save).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


class _NoTorch(importlib.abc.MetaPathFinder):
    """A finder that refuses ``torch`` and its submodules (an ``ImportError``, as if not installed)."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "torch" or fullname.startswith("torch."):
            raise ImportError(f"{fullname} is not imported while spaCy loads (curate.filters._spacy)")
        return None


def import_spacy() -> ModuleType:
    """``spacy``, imported (once) without pulling in torch through thinc."""
    with _LOCK:
        if "spacy" in sys.modules or "torch" in sys.modules:
            import spacy

            return spacy
        finder = _NoTorch()
        sys.meta_path.insert(0, finder)
        try:
            import spacy
            import spacy.lang.en  # spacy.blank("en") would import it later, torch unblocked
            import spacy.pipeline
        finally:
            sys.meta_path.remove(finder)
        return spacy
