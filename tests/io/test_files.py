"""curate.io.files: atomic writes, sha256 of files, paths confined to a root."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from curate.io.files import (
    PathEscapeError,
    atomic_path,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    confined,
    escapes,
    sha256_file,
    temp_path,
)


def test_atomic_path_renames_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path
        assert ".tmp" in tmp.name
        assert tmp.name.startswith("out.bin")
        tmp.write_bytes(b"new")
        assert not target.exists()  # nothing visible until the block ends
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_atomic_path_failure_keeps_old_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")

    def write() -> None:
        with atomic_path(target) as tmp:
            tmp.write_text("half of the new")
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_atomic_path_failure_removes_a_temp_folder(tmp_path: Path) -> None:
    def write() -> None:
        with atomic_path(tmp_path / "model") as tmp:
            (tmp / "sub").mkdir(parents=True)
            (tmp / "sub" / "w.bin").write_bytes(b"x")
            raise OSError("download cut")

    with pytest.raises(OSError, match="download cut"):
        write()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_failure_without_a_temp_file(tmp_path: Path) -> None:
    with pytest.raises(KeyError), atomic_path(tmp_path / "never"):
        raise KeyError("before anything was written")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_helpers_keep_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"a": object()})  # not serializable: fails before the rename
    assert target.read_text() == '{"a": 1}'
    with pytest.raises(ValueError, match="Out of range float values"):
        atomic_write_json(target, {"a": float("nan")}, allow_nan=False)
    assert target.read_text() == '{"a": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_temp_path_is_beside_the_target_and_per_process() -> None:
    tmp = temp_path("/data/run/kept/part-00001.parquet")
    assert tmp.parent == Path("/data/run/kept")
    assert tmp.name.startswith(f"part-00001.parquet.tmp{os.getpid()}-")


def test_write_bytes_and_text(tmp_path: Path) -> None:
    assert atomic_write_bytes(tmp_path / "b", b"\x00\xff") == tmp_path / "b"
    assert (tmp_path / "b").read_bytes() == b"\x00\xff"
    atomic_write_text(tmp_path / "t", "é\nline\r\n")
    assert (tmp_path / "t").read_bytes() == "é\nline\r\n".encode()  # utf-8, no newline translation


def test_write_json_keeps_the_callers_format(tmp_path: Path) -> None:
    obj = {"b": [1, 2], "a": Path("x")}
    atomic_write_json(tmp_path / "j", obj, indent=1, sort_keys=True, default=str, end="\n")
    assert (tmp_path / "j").read_text() == json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n"
    atomic_write_json(tmp_path / "k", {"b": 1, "a": 2})
    assert (tmp_path / "k").read_text() == '{"b": 1, "a": 2}'


def test_sha256_of_known_bytes(tmp_path: Path) -> None:
    (tmp_path / "abc").write_bytes(b"abc")
    assert sha256_file(tmp_path / "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(str(tmp_path / "empty")) == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def test_sha256_across_chunk_boundaries(tmp_path: Path) -> None:
    data = bytes(range(256)) * 41  # 10,496 bytes: many reads of 1,000 and a short last one
    (tmp_path / "d").write_bytes(data)
    assert sha256_file(tmp_path / "d", chunk=1000) == hashlib.sha256(data).hexdigest()


def test_confined_joins_relative_paths(tmp_path: Path) -> None:
    assert confined(tmp_path, "parquet/train-00000.parquet") == tmp_path / "parquet" / "train-00000.parquet"
    assert confined("run", "a/b.json") == Path("run/a/b.json")
    assert confined(tmp_path, "x", resolve=True) == (tmp_path / "x").resolve()


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "a/..", "..\\x", ".."])
def test_confined_rejects_climbing_out(rel: str) -> None:
    with pytest.raises(PathEscapeError) as e:
        confined("/data/run", rel)
    assert str(e.value) == f"{rel!r}: outside /data/run (the path must be relative, without '..' parts)"


@pytest.mark.parametrize("rel", ["/etc/passwd", "\\x", ""])
def test_confined_rejects_absolute_and_empty_paths(rel: str) -> None:
    with pytest.raises(PathEscapeError, match=r"outside /data/run \(the path must be relative"):
        confined("/data/run", rel)
    assert escapes(rel)


def test_confined_resolve_refuses_a_link_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "evil").symlink_to(tmp_path)
    assert confined(root, "evil/y") == root / "evil" / "y"  # lexical: a link is not looked at
    with pytest.raises(PathEscapeError, match=r"^'evil/y': resolves outside .*root \(a link\)$"):
        confined(root, "evil/y", resolve=True)


def test_path_escape_error_is_a_value_error() -> None:
    assert issubclass(PathEscapeError, ValueError)
    assert not escapes("a/b..c/..d")  # only whole '..' parts climb


def test_scratch_parquet_is_lz4_without_dictionaries_on_local_disk(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.io.storage import Location, read_parquet, write_parquet

    table = pa.table({"id": ["a", "b", "a"], "text": ["one two", "three", "one two"]})
    for scratch, codec, dictionary in ((True, "LZ4", False), (False, "ZSTD", True)):
        loc = Location.of(str(tmp_path / f"p{scratch}.parquet"))
        size = write_parquet(table, loc, scratch=scratch)
        assert size == loc.local.stat().st_size
        col = pq.ParquetFile(loc.local).metadata.row_group(0).column(1)
        assert col.compression == codec
        assert ("RLE_DICTIONARY" in col.encodings) is dictionary
        assert read_parquet(loc).equals(table)
