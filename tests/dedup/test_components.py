"""Distributed connected components (large-star / small-star on the engine) equal the driver's.

Graphs with long chains (the worst case for label propagation), a giant component and many small
ones; node labels carry a part index in their high bits like real row orders.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dedup import _common as c
from curate.dedup import components as cc
from curate.dedup.minhash import MinhashDedup, MinhashParams
from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import corpora_path, make_table


def _graph(chain: int, giant: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A chain of ``chain`` nodes in random label order, a connected random graph of ``giant`` nodes
    with 4x as many edges, 100 separate pairs and 100 triangles; labels are ``part << 32 | row`` over 7 parts."""
    rng = np.random.default_rng(seed)
    n = chain + giant + 500
    labels = np.unique(
        (rng.integers(0, 7, 3 * n).astype(np.uint64) << c.PART_SHIFT)
        | rng.integers(0, 1 << 20, 3 * n).astype(np.uint64)
    )
    labels = rng.permutation(labels)[:n]
    walk = labels[:chain]
    a, b = [walk[:-1]], [walk[1:]]
    g = labels[chain : chain + giant]
    a.append(g[rng.integers(0, giant, 3 * giant)])
    b.append(g[rng.integers(0, giant, 3 * giant)])
    a.append(g[1:])  # a random spanning tree keeps the giant component one component
    b.append(g[rng.integers(0, np.arange(1, giant))])
    small = labels[chain + giant :]
    a += [small[0:200:2], small[200:500:3], small[201:500:3]]
    b += [small[1:200:2], small[201:500:3], small[202:500:3]]
    return np.concatenate(a), np.concatenate(b)


def _write_edges(a: np.ndarray, b: np.ndarray, tmp: Path, files: int) -> list[str]:
    tmp.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, idx in enumerate(np.array_split(np.arange(len(a)), files)):
        paths.append(cc.write_table(cc.adjacency(a[idx], b[idx]), tmp / f"edges-{i}.parquet"))
    return paths


def _labels(comp: cc.Components) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = pa.concat_tables([pq.read_table(p) for p in comp.label_paths])
    order = np.argsort(t.column(cc.NODE).to_numpy())
    return (
        t.column(cc.NODE).to_numpy()[order],
        t.column(cc.ROOT).to_numpy()[order],
        t.column(cc.SIZE).to_numpy()[order],
    )


def _check_against_driver(comp: cc.Components, a: np.ndarray, b: np.ndarray) -> None:
    nodes, root = c.connected_components(a, b)
    got_nodes, got_root, got_size = _labels(comp)
    assert np.array_equal(got_nodes, nodes)
    assert np.array_equal(got_root, root)
    _, inv, counts = np.unique(root, return_inverse=True, return_counts=True)
    assert np.array_equal(got_size, counts[inv])
    assert comp.clusters == len(counts)
    assert comp.clustered_docs == len(nodes)


def test_chain_giant_and_small_components_inline(inline_engine, tmp_path):
    a, b = _graph(chain=3000, giant=2000)
    comp = cc.star_components(
        _write_edges(a, b, tmp_path / "in", 5), inline_engine, tmp_path / "cc", num_partitions=3
    )
    _check_against_driver(comp, a, b)
    _, _, size = _labels(comp)
    assert sorted(np.unique(size).tolist()) == [2, 3, 2000, 3000]
    assert (comp.clusters, comp.clustered_docs) == (202, 5500)
    assert 2 <= comp.rounds <= 20
    assert [d.name for d in (tmp_path / "cc").iterdir()] == ["labels"]  # spent rounds are deleted


def test_empty_graph_and_self_loops(inline_engine, tmp_path):
    comp = cc.star_components([], inline_engine, tmp_path / "cc", num_partitions=2)
    assert (comp.label_paths, comp.clusters, comp.clustered_docs) == ([], 0, 0)
    x = np.array([5, 5, 7], np.uint64)
    y = np.array([5, 6, 6], np.uint64)  # a self-loop and the chain 5 - 6 - 7
    comp = cc.star_components(
        _write_edges(x, y, tmp_path / "in", 1), inline_engine, tmp_path / "cc", num_partitions=2
    )
    assert [v.tolist() for v in _labels(comp)] == [[5, 6, 7], [5, 5, 5], [3, 3, 3]]


def test_drop_lists_one_file_per_part(inline_engine, tmp_path):
    keys = []
    for part, ids in enumerate([["a0", "a1", "a2"], ["b0", "b1"], ["c0"]]):
        t = pa.table({"id": ids, c.ROW: pa.array(np.arange(len(ids), dtype=np.uint32))})
        keys.append(cc.write_table(t, tmp_path / f"k{part}.parquet"))
    o = lambda part, row: (part << 32) | row  # noqa: E731
    a = np.array([o(0, 1), o(1, 0), o(0, 0)], np.uint64)  # a1 - b0 - b1 ; a0 - c0
    b = np.array([o(1, 0), o(1, 1), o(2, 0)], np.uint64)
    comp = cc.star_components(
        _write_edges(a, b, tmp_path / "in", 2), inline_engine, tmp_path / "cc", num_partitions=2
    )
    out = Path(cc.drop_lists(comp, keys, inline_engine, tmp_path / "drops", num_partitions=2))
    assert sorted(f.name for f in out.iterdir()) == ["p00000.parquet", "p00001.parquet", "p00002.parquet"]
    assert pq.read_table(out / "p00000.parquet").to_pydict() == {
        "id": ["a0", "a1"],
        "cluster_id": ["a0", "a1"],
        "cluster_size": [2, 3],
    }
    assert pq.read_table(out / "p00001.parquet").to_pydict() == {
        "id": ["b0", "b1"],
        "cluster_id": ["a1", "a1"],
        "cluster_size": [3, 3],
    }
    assert pq.read_table(out / "p00002.parquet").to_pydict() == {
        "id": ["c0"],
        "cluster_id": ["a0"],
        "cluster_size": [2],
    }


def _chain_corpus(seed: int = 3) -> list[str]:
    """Chains of near-duplicates (each copy changes 3 more of 150 words), shuffled, plus unrelated docs."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(400)]
    texts = []
    for _ in range(4):
        doc = list(rng.choice(words, 150))
        for _ in range(12):
            texts.append(" ".join(doc))
            for k in rng.integers(0, 150, 3):
                doc[k] = f"x{rng.integers(1 << 30)}"
    texts += [" ".join(rng.choice(words, 150)) for _ in range(20)]
    return [texts[i] for i in rng.permutation(len(texts))]


COLS = ("__reject__", "duplicate_of", "minhash_dedup_v1.cluster_id", "minhash_dedup_v1.cluster_size")


def _engine_vs_driver(engine, tmp_path: Path, num_partitions: int, verify: bool = False) -> None:
    table = make_table(_chain_corpus())
    sizes = [20, 0, 31, 17]
    want, sw = run_global(
        MinhashDedup(MinhashParams(components="driver", verify=verify)),
        split(table, sizes),
        engine,
        tmp_path / "d",
    )
    got, sg = run_global(
        MinhashDedup(MinhashParams(num_partitions=num_partitions, verify=verify)),
        split(table, sizes),
        engine,
        tmp_path / "e",
    )
    for col in COLS:
        assert column(got, col) == column(want, col), col
    assert {k: v for k, v in sg.facts.items() if k not in ("components", "component_rounds")} == sw.facts
    assert sg.facts["components"] == "engine"
    assert sg.drop_dir is not None
    assert max(column(got, COLS[3])) >= 8  # chains did cluster
    assert sw.facts["duplicates"] == column(got, COLS[0]).count("minhash_dedup_v1:near_duplicate") > 15


@pytest.mark.parametrize("verify", [False, True])
def test_minhash_engine_components_equal_driver_inline(verify, inline_engine, tmp_path):
    _engine_vs_driver(inline_engine, tmp_path, num_partitions=3, verify=verify)


def test_unknown_components_mode_is_refused():
    with pytest.raises(ValueError, match="components must be 'engine' or 'driver', not 'gpu'"):
        MinhashDedup(MinhashParams(components="gpu"))


@pytest.mark.ray
def test_ray_components_and_minhash_equal_driver(ray_engine, tmp_path):
    a, b = _graph(chain=1500, giant=1500, seed=1)
    comp = cc.star_components(
        _write_edges(a, b, tmp_path / "in", 4), ray_engine, tmp_path / "cc", num_partitions=4
    )
    _check_against_driver(comp, a, b)
    _engine_vs_driver(ray_engine, tmp_path / "m", num_partitions=4)
    _engine_vs_driver(ray_engine, tmp_path / "v", num_partitions=4, verify=True)


@pytest.mark.corpora
@pytest.mark.parametrize("verify", [False, True])
def test_real_near_duplicates_engine_equals_driver(verify, inline_engine, tmp_path):
    """Polished abstracts (near-duplicate pairs by construction) and SMS spam (templated messages)."""
    from curate.io.readers import read_table

    tables = [
        read_table(str(corpora_path("neardup", "hppt_polished_abstracts.jsonl.gz"))),
        read_table(str(corpora_path("web", "sms_spam.jsonl.gz"))),
    ]
    table = pa.concat_tables([t.select(["id", "text", "source"]) for t in tables])
    n = table.num_rows
    sizes = [n // 4, n // 4, n // 4, n - 3 * (n // 4)]
    params = dict(verify=verify)
    want, sw = run_global(
        MinhashDedup(MinhashParams(components="driver", **params)),
        split(table, sizes),
        inline_engine,
        tmp_path / "d",
    )
    got, sg = run_global(
        MinhashDedup(MinhashParams(num_partitions=3, **params)),
        split(table, sizes),
        inline_engine,
        tmp_path / "e",
    )
    for col in COLS:
        assert column(got, col) == column(want, col), col
    assert sg.facts["duplicates"] == sw.facts["duplicates"] > 500
