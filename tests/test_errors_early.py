"""Mistakes found before any work, as one line with exit 2: a source without its text field, a proxy budget
too small, a bad ``--set`` value, a cluster without its token (Ray's refusal turned into that line; the
refusal of a real cluster is in tests/test_cluster.py, which starts the cluster); and a folder that stays
reusable (a run that finished nothing is no lock, ``--restart`` starts over, a resumed run says so)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main
from tests.helpers import write_inputs


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", *args, "--engine", "inline", "-q", "--no-phases"])
    got = capsys.readouterr()
    return code, got.out, got.err


def _pipeline(tmp_path: Path, inp: str, extra: str = "") -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(
        f"name: t\ninput: {inp}\nstages:\n  - transform: normalize_v1\n  - dedup: exact_dedup_v1\n{extra}"
    )
    return p


def test_a_parquet_file_without_the_text_column_is_one_line_before_any_work(tmp_path, capsys) -> None:
    data = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": ["1", "2"], "content": ["a b", "c d"], "url": ["u", "v"]}), data)
    pipe = _pipeline(tmp_path, f"{{path: '{data}', format: parquet}}")
    code, out, err = _run(capsys, str(pipe), "--output", str(tmp_path / "run"))
    assert (code, out) == (2, "")
    assert err == (
        f"curate run: error: input: {data} has no column 'text' (columns: id, content, url) "
        "(did you mean 'content'?); set input.text_field\n"
    )
    assert not (tmp_path / "run" / "_work" / "run.json").exists()  # nothing claimed, nothing run
    code, out, _ = _run(
        capsys, str(pipe), "--output", str(tmp_path / "run"), "--set", "input.text_field=content"
    )
    assert code == 0
    assert "input 2 = kept 2 + rejected 0 + quarantined 0  (balanced)" in out


def test_a_jsonl_text_field_no_record_has_names_the_fields_it_has(tmp_path, capsys) -> None:
    write_inputs(tmp_path / "in", n_files=1, n_docs=5)
    pipe = _pipeline(tmp_path, f"{{path: '{tmp_path}/in/*.jsonl', format: jsonl, text_field: body}}")
    code, out, err = _run(capsys, str(pipe), "--output", str(tmp_path / "run"))
    assert (code, out) == (2, "")
    assert err == (
        f"curate run: error: input: {tmp_path}/in/in-0.jsonl has no field 'body' in its first 20 records "
        "(fields: id, text); set input.text_field\n"
    )


def test_a_budget_too_small_and_bad_set_values_name_the_set(tmp_path, capsys) -> None:
    write_inputs(tmp_path / "in", n_files=1, n_docs=5)
    pipe = _pipeline(
        tmp_path, f"{{path: '{tmp_path}/in/*.jsonl', format: jsonl}}", "proxy:\n  budget: 300000\n"
    )
    expected = {
        "proxy.budget=1000": "--set proxy.budget=1000: budget 1000 tokens < 4 steps of 2048 "
        "tokens; raise proxy.budget",
        "proxy.seeds=abc": "--set proxy.seeds=abc: expected a count (e.g. 3) or a list of seeds "
        "(e.g. [0, 1, 2]), got 'abc'",
        "proxy.model=nope": "--set proxy.model=nope: expected one of 'proxy_tiny', 'proxy_1m', 'proxy_5m', "
        "'proxy_14m', 'proxy_30m', 'proxy_90m', got 'nope'",
    }
    for item, msg in expected.items():
        code, out, err = _run(capsys, str(pipe), "--output", str(tmp_path / "run"), "--set", item)
        assert (code, out, err) == (2, "", f"curate run: error: {msg}\n")
    pipe.write_text(pipe.read_text().replace("300000", "1000"))
    code, _, err = _run(capsys, str(pipe), "--output", str(tmp_path / "run"))
    assert (code, err) == (
        2,
        f"curate run: error: {pipe}:7: proxy.budget: budget 1000 tokens < 4 steps of 2048 "
        "tokens; raise proxy.budget\n",
    )


def test_a_folder_is_fingerprint_locked_only_once_a_unit_finished(tmp_path, capsys) -> None:
    write_inputs(tmp_path / "in", n_files=2, n_docs=5)
    pipe = _pipeline(tmp_path, f"{{path: '{tmp_path}/in/*.jsonl', format: jsonl}}")
    run = tmp_path / "run"
    (run / "_work" / "s0").mkdir(parents=True)  # an earlier pipeline's run that finished no unit
    (run / "_work" / "run.json").write_text(json.dumps({"fingerprint": "0" * 16, "pipeline": "t"}))
    (run / "_work" / "s0" / "p00000-half.parquet").write_bytes(b"half")
    code, out, err = _run(capsys, str(pipe), "--output", str(run))
    assert (code, err) == (0, "")
    assert "input 14 = kept 10 + rejected 2 + quarantined 2  (balanced)" in out
    assert not (run / "_work" / "s0" / "p00000-half.parquet").exists()
    code, out, err = _run(capsys, str(pipe), "--output", str(run))
    assert (code, err) == (0, "resuming: 4 of 4 units done\n")
    changed = ["--set", "stages.0.params.form=NFKC"]
    code, out, err = _run(capsys, str(pipe), "--output", str(run), *changed)
    assert code == 2
    assert out == ""
    assert err.startswith(
        f"curate run: error: {run} holds a run of a different pipeline or input (fingerprint "
    )
    assert err.endswith(
        ") that finished 4 of 4 units; rerun with --restart to discard it and start over, or choose "
        "another --output\n"
    )
    code, out, err = _run(capsys, str(pipe), "--output", str(run), *changed, "--restart")
    assert (code, err) == (0, f"restart: removed the earlier run in {run}; starting over\n")
    assert json.loads((run / "manifest.json").read_text())["config"]["stages"][0]["params"] == {
        "form": "NFKC"
    }
    assert len(json.loads((run / "_work" / "attempts.json").read_text())) == 1


def test_a_refusal_ray_wraps_in_a_connection_error_is_still_the_token_line(monkeypatch) -> None:
    import ray

    from curate.core.engine import EngineError
    from curate.core.ray_engine import _connect

    def refuse(**kwargs):
        try:
            raise ray.exceptions.AuthenticationError("RPC error: InvalidAuthToken")
        except ray.exceptions.AuthenticationError as e:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379") from e

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    with pytest.raises(
        EngineError,
        match=r"^the Ray cluster at 10.0.0.1:6379 requires token authentication .*"
        "this client's token is not the cluster's",
    ):
        _connect(ray, "10.0.0.1:6379", {})

    def unreachable(**kwargs):
        raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379")

    monkeypatch.setattr(ray, "init", unreachable)
    with pytest.raises(EngineError) as e:
        _connect(ray, "10.0.0.1:6379", {})
    assert str(e.value) == (
        "cannot connect to the Ray cluster at 10.0.0.1:6379 (Failed to connect to Ray cluster at 10.0.0.1:6379); "
        "check --address / RAY_ADDRESS and that the cluster is up (`ray status` on the head)"
    )


def test_each_source_of_a_list_input_is_checked_and_named(tmp_path, capsys) -> None:
    datasets = pytest.importorskip("datasets")
    write_inputs(tmp_path / "in", n_files=1, n_docs=5)
    datasets.Dataset.from_dict({"content": ["a b c", "d e f"], "id": ["1", "2"]}).save_to_disk(
        tmp_path / "ds"
    )
    capsys.readouterr()  # datasets' progress bar
    pipe = _pipeline(
        tmp_path,
        f"\n  - {{name: web, format: jsonl, path: '{tmp_path}/in/*.jsonl'}}"
        f"\n  - {{name: hub, format: hf, path: '{tmp_path}/ds'}}",
    )
    code, out, err = _run(capsys, str(pipe), "--output", str(tmp_path / "run"))
    assert (code, out) == (2, "")
    assert err == (
        f"curate run: error: input hub: {tmp_path}/ds has no column 'text' (columns: content, id) "
        "(did you mean 'content'?); set input[1].text_field\n"
    )
    assert not (tmp_path / "run").exists()
    code, out, err = _run(
        capsys, str(pipe), "--output", str(tmp_path / "run"), "--set", "input.1.text_field=content"
    )
    assert (code, err) == (0, "")


def test_a_run_that_quarantined_everything_for_missing_text_asks_about_text_field() -> None:
    from curate.pipeline.validate import EmptyRunError, check_not_empty

    manifest = {
        "accounting": {"input": 30, "kept": 0, "quarantined": 30},
        "removed_by_reason": {"quarantine:missing_text": 30},
        "config": {"input": [{"name": "a", "format": "jsonl"}, {"name": "b", "format": "parquet"}]},
    }
    with pytest.raises(EmptyRunError) as e:
        check_not_empty(manifest, "runs/x")
    assert str(e.value) == (
        "runs/x: all 30 documents were quarantined (quarantine:missing_text 30): is input.text_field right for "
        "these files? See `curate inspect runs/x --reason quarantine`, or set allow_empty: true "
        "(--set allow_empty=true) to accept an empty result"
    )
    manifest["removed_by_reason"] = {"quarantine:malformed_json": 30}
    with pytest.raises(EmptyRunError, match=r"is input.format \(jsonl, parquet\) right for these files\?"):
        check_not_empty(manifest, "runs/x")
