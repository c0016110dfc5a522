"""language_v1 and url_filter_v1 on hand-written documents: exact reasons and columns."""

from __future__ import annotations

import pyarrow as pa

from curate.core import schema
from curate.core.select import Select
from curate.filters.lang import LanguageId, LanguageParams
from curate.filters.url import UrlFilter
from tests.helpers import make_table


def _reasons(stage, table: pa.Table) -> tuple[pa.Table, list[str | None]]:
    stage.ensure_setup()
    out = stage.process(table)
    out = Select(rules=stage.reference_rules(), prefix=stage.label).process(out)
    return out, out.column(schema.REJECT).to_pylist()


def test_language_columns_and_reasons() -> None:
    texts = [
        "This is a plain English sentence about the weather today.\nIt is sunny.",
        "Dies ist ein ganz normaler deutscher Satz über das Wetter heute.",
        "",
    ]
    out, reasons = _reasons(LanguageId(LanguageParams(languages=["en"])), make_table(texts))
    assert out.column("language_v1.language").to_pylist()[:2] == ["en", "de"]
    assert out.column("language_v1.language_score").to_pylist()[0] > 0.65
    assert reasons == [None, "language_v1:language", "language_v1:language"]
    _, reasons = _reasons(LanguageId(LanguageParams(languages=[])), make_table(texts[:2]))
    assert reasons == [None, None]


def test_url_filter_checks_in_order() -> None:
    table = make_table(["a"] * 6).append_column(
        "url",
        pa.array(
            [
                "https://0-1avsex.com/page",  # registered domain on the blocklist
                "https://www.example.com/porn/x",  # banned word in the URL words
                "https://sub.example.org/a",  # clean
                "https://example.com/news/today",
                None,  # no url: passes
                "",
            ]
        ),
    )
    out, reasons = _reasons(UrlFilter(), table)
    assert reasons[0] == "url_filter_v1:domain"
    assert reasons[1] == "url_filter_v1:hard_blacklisted"
    assert reasons[3:] == [None, None, None]
    assert out.column("url_filter_v1.domain").to_pylist() == [1, 0, 0, 0, 0, 0]


def test_url_filter_without_url_column() -> None:
    _, reasons = _reasons(UrlFilter(), make_table(["x", "y"]))
    assert reasons == [None, None]


def test_url_blocklists_load_as_a_plain_python_parse_reads_them(tmp_path, monkeypatch) -> None:
    """The blocklists read in one streaming pass and split in polars hold exactly the lines a plain
    Python parse of the archive gives (stripped, ``#`` comments dropped), extra entries included; the
    second setup reads the same hashes from the cache file the first one wrote, not the archive."""
    import os
    import tarfile

    import numpy as np
    import polars as pl

    from curate.filters import url as U
    from curate.filters.url import UrlFilterParams, _sorted_hashes, datatrove_assets

    monkeypatch.setenv("CURATE_CACHE", str(tmp_path))

    lists: dict[str, list[str]] = {"domains": ["extra.example"], "urls": ["https://x.example/a"]}
    path = os.path.join(datatrove_assets(), "url_filterblacklistsv0_3_0.tar.gz")
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            f = tar.extractfile(member)
            if f is not None and member.name in lists:
                lines = [x.strip() for x in f.read().decode().split("\n")]
                lists[member.name] += [x for x in lines if not x.startswith("#")]
    stage = UrlFilter(UrlFilterParams(extra_domains=["extra.example"], extra_urls=["https://x.example/a"]))
    stage.ensure_setup()
    assert len(stage._domains) == len(lists["domains"]) == 4_558_940 + 1
    assert np.array_equal(stage._domains, _sorted_hashes(pl.Series(lists["domains"])))
    assert np.array_equal(stage._urls, _sorted_hashes(pl.Series(lists["urls"])))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n[:15] for n in names] == ["url-blocklists-"] * 2
    assert [n.split(".", 1)[1] for n in names] == ["domains.npy", "urls.npy"]

    def unread(path: str) -> None:
        raise AssertionError(f"{path} read again although cached")

    monkeypatch.setattr(U, "_read_archive", unread)
    again = UrlFilter(UrlFilterParams(extra_domains=["extra.example"], extra_urls=["https://x.example/a"]))
    again.ensure_setup()
    assert np.array_equal(again._domains, stage._domains)
    assert np.array_equal(again._urls, stage._urls)
    # Without extra entries the cached lists are used as they are: mapped from the cache, not read.
    plain = UrlFilter(UrlFilterParams())
    plain.ensure_setup()
    assert isinstance(plain._domains, np.memmap)
    assert isinstance(plain._urls, np.memmap)
    assert len(plain._domains) == 4_558_940
