"""Keep/drop agreement with datatrove 0.10 on the real web corpora (and UDHR for language ID).

Samples: the first 25 documents of each ``web/*.jsonl.gz`` file (quick), the first 300 (``slow``,
2,400 documents) and every web document (``slow``, 60,909 documents; ~12 minutes here). ``-s`` prints
the agreement counts.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from curate.filters.c4 import C4Quality
from curate.filters.fineweb import FineWebQuality
from curate.filters.gopher_quality import GopherQuality
from curate.filters.gopher_repetition import GopherRepetition
from curate.filters.lang import LanguageId, LanguageParams, lid176_path
from curate.filters.url import UrlFilter
from curate.io.readers import read_table
from tests.filters.parity import agreement, run_datatrove, run_filter, web_files
from tests.helpers import corpora_path

PAIRS = {
    "gopher_quality": (GopherQuality, "GopherQualityFilter", "gopher_"),
    "gopher_repetition": (GopherRepetition, "GopherRepetitionFilter", ""),
    "c4_quality": (C4Quality, "C4QualityFilter", ""),
    "fineweb_quality": (FineWebQuality, "FineWebQualityFilter", ""),
}


def _check(name: str, limit: int | None, min_docs: int = 2400) -> None:
    import datatrove.pipeline.filters as dtf

    root = corpora_path("web").parent
    ours_cls, dt_name, strip = PAIRS[name]
    stage = ours_cls()
    ours, ref = [], []
    for f in web_files(Path(root)):
        table = read_table(f, limit=limit)
        ours += run_filter(stage, table)
        ref += run_datatrove(getattr(dtf, dt_name)(), table)
    a = agreement(ours, ref, strip=strip)
    print(f"parity {name}: {a.same_decision}/{a.n} same decision, {a.same_reason} same first reason")  # -s
    assert a.n >= min_docs
    assert a.rate >= 0.995, (name, a.rate, a.disagreements[:10])
    # Where both drop, the first-failing reason is datatrove's too.
    assert a.same_reason >= 0.995 * a.n, (name, a.same_reason, a.n)


@pytest.mark.corpora
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_parity_quick(name: str) -> None:
    _check(name, 25, min_docs=200)


@pytest.mark.corpora
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_parity_sample(name: str) -> None:
    _check(name, 300)


@pytest.mark.corpora
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_parity_full(name: str) -> None:
    _check(name, None)


@pytest.mark.corpora
@pytest.mark.parametrize("languages", [["en"], ["en", "de", "fr"], []])
def test_language_parity_udhr(languages: list[str]) -> None:
    from datatrove.pipeline.filters import LanguageFilter
    from fasttext.FastText import _FastText

    table = read_table(str(corpora_path("lang", "udhr.jsonl.gz")))
    ours = run_filter(LanguageId(LanguageParams(languages=languages)), table)
    dt = LanguageFilter(languages=languages or None)
    dt.model._model = _FastText(lid176_path())  # the same model file, no download
    a = agreement(ours, run_datatrove(dt, table))
    assert a.n == 387
    assert a.rate >= 0.995, a.disagreements[:10]
    assert sum(o is None for o in ours) >= 3  # the English UDHR versions are kept


@pytest.mark.corpora
@pytest.mark.slow
def test_url_parity() -> None:
    pytest.importorskip("ahocorasick")
    import tldextract
    from datatrove.pipeline.filters import URLFilter

    stage = UrlFilter()
    dt = URLFilter()
    dt.tldextractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    n = dropped = agree = 0
    for name in ("c4_en.jsonl.gz", "commoncrawl_2019.jsonl.gz"):
        table = read_table(str(corpora_path("web", name)))
        table = table.filter(pc.invert(pc.is_null(table.column("url"))))
        ours = run_filter(stage, table)
        a = agreement(ours, run_datatrove(dt, table, url=True))
        n += a.n
        agree += a.same_decision
        dropped += sum(o is not None for o in ours)
    assert n == 1670
    assert agree / n >= 0.995
    assert dropped >= 1
