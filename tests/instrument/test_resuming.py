"""The driver says which proxy runs resume from a checkpoint an earlier attempt left: a worker's own log
does not reach the driver's terminal, so the driver reads it from the runs' folders (or their storage)."""

from __future__ import annotations

from pathlib import Path

from curate.instrument.runs import RunItem, resuming
from curate.instrument.train_config import TrainConfig


def _item(out: Path, recipe: str, seed: int, remote=None) -> RunItem:
    return RunItem(
        recipe=recipe,
        seed=seed,
        train_prefix=str(out / "train"),
        eval_prefixes={},
        out_dir=str(out / recipe / f"seed{seed}"),
        train_cfg=TrainConfig(),
        vocab_size=300,
        eos_id=0,
        threads=1,
        remote=remote,
    )


class Storage:
    """A run's storage holding the files named, by path."""

    def __init__(self, files: set[Path]) -> None:
        self.files = files

    def exists(self, path: str | Path) -> bool:
        return Path(path) in self.files


def test_a_run_with_a_checkpoint_and_no_result_resumes_and_no_other_does(tmp_path):
    fresh, stopped, done = (_item(tmp_path, r, 0) for r in ("raw", "curated", "null"))
    for it, names in ((stopped, ["ckpt.pt", "config.json"]), (done, ["ckpt.pt", "result.json"])):
        Path(it.out_dir).mkdir(parents=True)
        for n in names:
            (Path(it.out_dir) / n).write_text("x")
    assert resuming([fresh, stopped, done]) == [stopped]
    # in object storage: read there, not on the driver's disk
    run = Path(str(tmp_path / "s3" / "raw" / "seed1"))
    remote = Storage({run / "ckpt.pt"})
    far = _item(tmp_path / "s3", "raw", 1, remote=remote)
    assert resuming([far]) == [far]
    remote.files.add(run / "result.json")
    assert resuming([far]) == []


def test_the_measurement_names_them_on_the_driver(tmp_path):
    from curate.proxy.design.measure import resume_notice

    items = [_item(tmp_path, "curated", s) for s in range(8)]
    assert resume_notice(items) is None
    for it in items[1:]:
        Path(it.out_dir).mkdir(parents=True)
        (Path(it.out_dir) / "ckpt.pt").write_text("x")
    assert resume_notice(items) == (
        "proxy: 7 run(s) resume from the checkpoint an earlier attempt left: curated/seed1, curated/seed2, "
        "curated/seed3, curated/seed4, curated/seed5, curated/seed6, ..."
    )
