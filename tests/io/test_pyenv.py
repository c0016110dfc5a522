"""The ``python_env`` source on a tree the test builds: its rows, and which shards can hold a source label."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from curate.core import schema
from curate.io.pyenv import PythonEnvParams, PythonEnvSource, _walk_defs

LONG = "Explains what this object does, at length. " * 6  # 258 characters: over min_chars (200)


def _tree(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "other").mkdir()
    (root / "top.py").write_text(f'"""{LONG}"""\n')
    (root / "pkg" / "a.py").write_text(f'"""{LONG}"""\n\ndef f():\n    """{LONG}"""\n')
    (root / "pkg" / "short.py").write_text('"""too short"""\n')
    (root / "other" / "b.py").write_text(f'class C:\n    """{LONG}"""\n')
    (root / "other" / "broken.py").write_text("def (:\n")


def _source(root: Path) -> PythonEnvSource:
    return PythonEnvSource(
        PythonEnvParams(roots=[str(root)], include=["docstrings", "topics"], files_per_shard=1)
    )


def _rows(src: PythonEnvSource, shards: list) -> list[tuple[str, str]]:
    out = []
    for s in shards:
        for t in src.read(s):
            out += list(
                zip(t.column(schema.ID).to_pylist(), t.column(schema.SOURCE).to_pylist(), strict=True)
            )
    return out


def test_docstrings_are_labelled_by_package(tmp_path):
    _tree(tmp_path)
    src = _source(tmp_path)
    rows = _rows(src, [s for s in src.shards() if s.key.startswith("docstrings")])
    assert rows == [  # a root's own files first, then its folders in name order; short or broken: none
        ("site-packages/top.py:<module>", "docstring:site-packages"),
        ("site-packages/other/b.py:C", "docstring:other"),
        ("site-packages/pkg/a.py:<module>", "docstring:pkg"),
        ("site-packages/pkg/a.py:f", "docstring:pkg"),
    ]


def test_may_hold_picks_the_shards_holding_that_label(tmp_path):
    _tree(tmp_path)
    src = _source(tmp_path)
    shards = src.shards()
    assert len(shards) == 6  # five Python files, one per shard, then the topics shard
    for name in ("docstring:pkg", "docstring:other", "docstring:site-packages", "pydoc_topic"):
        picked = [s for s in shards if src.may_hold(s, name)]
        every = [r for r in _rows(src, shards) if r[1] == name]
        assert every
        assert _rows(src, picked) == every  # the same rows, in the same order
    assert [s.key for s in shards if src.may_hold(s, "docstring:pkg")] == [
        "docstrings-0003",
        "docstrings-0004",
    ]
    assert not any(src.may_hold(s, "docstring:nowhere") for s in shards)
    assert not any(
        src.may_hold(s, "readme") for s in shards
    )  # no distributions shard without readmes/licenses


def _target_run(tmp_path: Path) -> None:
    """Three packages of three files (four docstrings each) and a pipeline whose target is one package."""
    root = tmp_path / "env"
    for pkg, word in (("alpha", "river"), ("beta", "market"), ("gamma", "engine")):
        (root / pkg).mkdir(parents=True)
        for i in range(3):
            body = "\n".join(
                f'def f{j}():\n    """{" ".join([word, "flows", str(i), str(j)] * 20)}"""\n' for j in range(4)
            )
            (root / pkg / f"m{i}.py").write_text(body)
    (tmp_path / "p.yaml").write_text(
        f"""
name: pyenv_target
input: {{format: python_env, roots: [{root}], include: [docstrings], files_per_shard: 2}}
engine: {{kind: inline}}
target: {{source: "docstring:beta", raw_docs: 10}}
stages:
  - score: dsir_v1
"""
    )


def _count_reads(monkeypatch) -> list[str]:
    """The keys of the shards ``PythonEnvSource.read`` is called for, from now on, in call order."""
    reads: list[str] = []
    real = PythonEnvSource.read

    def counted(self, shard):
        reads.append(shard.key)
        yield from real(self, shard)

    monkeypatch.setattr(PythonEnvSource, "read", counted)
    return reads


def test_the_target_pass_reads_only_the_shards_of_the_target_source(tmp_path, monkeypatch):
    """The target pass reads only the target source's shards; the raw-sample scan reads every shard and
    keeps its batches, which segment 0 reads instead of parsing the files again (curate.io.shardcache);
    the run's output is the same bytes as with every shard read twice, and the kept batches are gone."""
    import curate

    _target_run(tmp_path)
    reads = _count_reads(monkeypatch)
    m = curate.run(tmp_path / "p.yaml", output=tmp_path / "run", phases=False)
    every = [f"docstrings-{i:04d}" for i in range(5)]  # 9 files, 2 a shard
    beta = ["docstrings-0001", "docstrings-0002"]  # alpha/m2 + beta/m0, beta/m1 + beta/m2
    assert reads == beta + every  # target pass, raw-sample scan; the stages read the scan's batches
    assert m["target"]["target"]["docs"] == 12
    assert m["accounting"]["input"] == 36
    assert (tmp_path / "run" / "_work").is_dir()
    assert not (tmp_path / "run" / "_work" / "source").exists()

    reads.clear()
    monkeypatch.setattr(PythonEnvSource, "costly_read", False)
    plain = curate.run(tmp_path / "p.yaml", output=tmp_path / "plain", phases=False)
    assert reads == beta + every + every  # without the kept batches, the stages read every shard again
    assert plain["accounting"] == m["accounting"]
    for d in ("kept", "rejected"):
        got = {f.name: f.read_bytes() for f in (tmp_path / "run" / d).glob("*.parquet")}
        assert got or d == "rejected"  # dsir_v1 scores, rejects nothing
        assert got == {f.name: f.read_bytes() for f in (tmp_path / "plain" / d).glob("*.parquet")}, d


def test_defs_are_walked_breadth_first_through_bodies_only() -> None:
    """Module, then classes and functions in a module's, class's or function's body, breadth first with
    qualified names; a def under ``if`` / ``try`` is not a documented definition and is not walked."""
    src = """
def f():
    def inner(): pass
class C:
    def m(self): pass
    class D:
        async def am(self): pass
if True:
    def hidden(): pass
try:
    class Hidden: pass
except Exception:
    pass
async def g(): pass
"""
    got = [q for q, _ in _walk_defs(ast.parse(src))]
    assert got == ["<module>", "f", "C", "g", "f.inner", "C.m", "C.D", "C.D.am"]


def test_kept_batches_go_through_a_bucket_run_directory(tmp_path, s3, monkeypatch):
    """With the run directory in object storage, the scan keeps each shard's batches in the bucket (where
    every node can read them), segment 0 reads them from there, and they are deleted after it."""
    import curate

    _target_run(tmp_path)
    reads = _count_reads(monkeypatch)
    m = curate.run(tmp_path / "p.yaml", output=f"s3://{s3.bucket}/run", phases=False)
    assert reads == [  # target pass, raw-sample scan; the stages read the scan's batches
        "docstrings-0001",
        "docstrings-0002",
        *[f"docstrings-{i:04d}" for i in range(5)],
    ]
    assert m["accounting"]["input"] == 36
    assert s3.fs.exists(f"{s3.bucket}/run/_work/run.json")
    assert not s3.fs.glob(f"{s3.bucket}/run/_work/source/*")


def test_excluded_distributions_lose_their_readme_and_licences_only() -> None:
    """``exclude_distributions`` matches names as the package index does (case, ``-`` / ``_`` / ``.``) and
    drops exactly those distributions' rows (this project's own README is one: the demo leaves it out)."""

    def ids(exclude: list[str]) -> list[str]:
        src = PythonEnvSource(PythonEnvParams(include=["readmes", "licenses"], exclude_distributions=exclude))
        shard = next(s for s in src.shards() if dict(s.extra)["kind"] == "distributions")
        return [i for t in src.read(shard) for i in t.column(schema.ID).to_pylist()]

    every = ids([])
    assert "readme:curate" in every
    assert "readme:pytest-xdist" in every
    left = ids(["CURATE", "pytest_xdist"])
    dropped = [i for i in every if i not in left]
    assert all(i.split(":")[1].split("/")[0] in ("curate", "pytest-xdist") for i in dropped)
    assert "readme:curate" in dropped
    assert "readme:pytest-xdist" in dropped
    assert left == [i for i in every if i not in dropped]  # the others unchanged, in order


def test_a_root_that_is_not_a_directory_is_an_error(tmp_path):
    src = PythonEnvSource(PythonEnvParams(roots=[str(tmp_path / "nowhere")], include=["docstrings"]))
    with pytest.raises(ValueError, match=r"python_env.roots: .*/nowhere is not a directory"):
        src.shards()


def test_a_listed_file_unreadable_where_it_is_read_is_an_error_not_a_loss(tmp_path):
    """A shard lists its files when the run is planned (on the driver); a node that cannot read one of
    them holds another environment: the read fails and names the file, instead of dropping its
    docstrings. A broken link is never listed."""
    _tree(tmp_path)
    (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "pkg" / "missing.py")
    src = _source(tmp_path)
    shards = src.shards()
    assert not [s for s in shards if "gone.py" in str(dict(s.extra).get("files"))]
    a = next(s for s in shards if "pkg/a.py" in str(dict(s.extra).get("files")))
    (tmp_path / "pkg" / "a.py").unlink()
    with pytest.raises(
        RuntimeError, match=r"pkg/a.py was listed when the shards were planned but cannot be read"
    ):
        list(src.read(a))


def test_kept_batches_match_only_the_shard_that_was_read(tmp_path):
    """Kept batches are found for the shard that was read and for nothing else: another key, or the same
    key over other files (the source re-planned after its files changed), reads from the source."""
    import pyarrow as pa

    from curate.io import shardcache
    from curate.io.sources import Shard

    files = (("kind", "docstrings"), ("files", (("/env/a.py", "site-packages/a.py"),)))
    shard = Shard(3, "/env/a.py", "docstrings-0003", extra=files)
    cache = str(tmp_path / "source")
    shardcache.write(cache, shard, [pa.table({"x": [1, 2]}), pa.table({"x": [3]})])
    got = shardcache.batches(cache, shard)
    assert got is not None
    assert [t.column("x").to_pylist() for t in got] == [[1, 2], [3]]
    other_files = (("kind", "docstrings"), ("files", (("/env/b.py", "site-packages/b.py"),)))
    assert shardcache.batches(cache, Shard(3, "/env/a.py", "docstrings-0003", extra=other_files)) is None
    assert shardcache.batches(cache, Shard(3, "/env/a.py", "docstrings-0004", extra=files)) is None
    assert shardcache.batches(cache, Shard(4, "/env/a.py", "docstrings-0003", extra=files)) is None
