"""line_dedup_v1: repeated lines go, unique text stays, counts recorded, short leftovers rejected."""

from __future__ import annotations

import pytest

from curate.dedup.lines import LineDedup, LineDedupParams
from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import corpora_path, make_table

NAV = "Home | About | Contact"
FOOT = "© 2019 Example Corp. All rights reserved."


def _texts() -> list[str]:
    return [
        f"{NAV}\nThe first article talks about rivers and the sea at some length here.\n{FOOT}",
        f"{NAV}\nA second article, about mountains, with enough words to stay a document.\n\n{FOOT}",
        f"home |  about | CONTACT\nThird text on forests and the trees that live in them for years.\n{FOOT}",
        f"{NAV}\n{FOOT}\nshort",
        "An article without any boilerplate at all, which must not change in any way.",
    ]


def test_repeated_lines_removed_and_counted(inline_engine, tmp_path):
    parts, state = run_global(LineDedup(), split(make_table(_texts()), [2, 3]), inline_engine, tmp_path)
    text = column(parts, "text")
    assert text[0] == "The first article talks about rivers and the sea at some length here."
    assert text[1] == "A second article, about mountains, with enough words to stay a document."
    assert text[2] == "Third text on forests and the trees that live in them for years."
    assert text[4] == _texts()[4]
    assert column(parts, "line_dedup_v1.lines_removed") == [2, 2, 2, 2, 0]
    assert column(parts, "line_dedup_v1.chars_removed")[0] == len(NAV) + len(FOOT) + 2
    assert column(parts, "__reject__") == [None, None, None, "line_dedup_v1:too_short", None]
    assert state.facts["boilerplate_lines"] == 2


def test_keep_first_and_min_docs(inline_engine, tmp_path):
    stage = LineDedup(LineDedupParams(keep_first=True, min_chars=0))
    parts, _ = run_global(stage, [make_table(_texts())], inline_engine, tmp_path / "a")
    text = column(parts, "text")
    assert text[0] == _texts()[0]  # first occurrence kept
    assert NAV not in text[1]
    assert FOOT not in text[2]
    high = LineDedup(LineDedupParams(min_docs=5, min_chars=0))
    parts, state = run_global(high, [make_table(_texts())], inline_engine, tmp_path / "b")
    assert column(parts, "text") == _texts()
    assert state.facts["boilerplate_lines"] == 0


def test_paragraph_unit(inline_engine, tmp_path):
    para = "Share this page on social networks\nFollow us"
    texts = [f"{para}\n\nBody number {i} with its own words and sentences, long enough." for i in range(3)]
    parts, _ = run_global(
        LineDedup(LineDedupParams(unit="paragraph")), [make_table(texts)], inline_engine, tmp_path
    )
    assert column(parts, "text") == [
        f"Body number {i} with its own words and sentences, long enough." for i in range(3)
    ]


@pytest.mark.ray
def test_ray_matches_inline(ray_engine, inline_engine, tmp_path):
    table = make_table(_texts() * 20)
    a, _ = run_global(LineDedup(), split(table, [40, 60]), inline_engine, tmp_path / "a")
    b, _ = run_global(
        LineDedup(LineDedupParams(num_partitions=3)), split(table, [40, 60]), ray_engine, tmp_path / "b"
    )
    assert column(a, "text") == column(b, "text")
    assert column(a, "__reject__") == column(b, "__reject__")


@pytest.mark.corpora
def test_commoncrawl_navigation_goes_article_stays(inline_engine, tmp_path):
    from curate.io.readers import read_table

    table = read_table(str(corpora_path("web", "commoncrawl_2019.jsonl.gz")))
    parts, _state = run_global(LineDedup(), split(table, [335, 335]), inline_engine, tmp_path)
    old = dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=True))
    new = dict(zip(column(parts, "id"), column(parts, "text"), strict=True))
    # Real MediaWiki navigation and archive-page furniture, repeated across sites' pages.
    for doc_id in ("cc2019-264", "cc2019-265"):
        assert "Jump to navigation Jump to search" in old[doc_id]
        assert "Jump to navigation Jump to search" not in new[doc_id]
        assert "З пляцоўкі Вікіпедыя" not in new[doc_id]
    assert new["cc2019-265"].startswith('Лен\n\nЛен (ням.: Lehn ад ням.: leihen "займаць")')
    assert 'Так узнікае "леннае права".' in new["cc2019-265"]
    removed = sum(column(parts, "line_dedup_v1.chars_removed"))
    total = sum(len(t) for t in old.values())
    assert 0.01 < removed / total < 0.10
    assert sum(1 for n in column(parts, "line_dedup_v1.lines_removed") if n) > 200
