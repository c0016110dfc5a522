"""This project's mixture regression on RegMix's own runs (``tests/proxy/data/regmix``: 96 of its 512
training mixtures and 64 of its 256 held-out ones, MIT licence, Sea AI Lab): fitted through
``curate.proxy.mixfit`` as ``curate mix`` fits, LightGBM and the log-linear law rank the held-out runs'
Pile-CC loss at a Spearman above 0.95, as the paper reports; a linear fit does not. The full check is
``benchmarks/regmix_check.py --data <RegMix's data/>`` (``benchmarks/results/regmix_check-*.json``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import regmix_check
from curate.proxy import mixfit

DATA = Path(__file__).parent / "data" / "regmix"


def test_the_subset_is_regmixs_and_keeps_its_licence():
    d = regmix_check.load(DATA)
    assert len(d["domains"]) == 17
    assert "pile_cc" in d["domains"]
    assert (d["x_train"].shape, d["x_test"].shape) == ((96, 17), (64, 17))
    assert np.allclose(d["x_train"].sum(axis=1), 1.0, atol=2e-3)  # weights as published, rounded
    assert 0.4 < float((d["x_train"] == 0).mean()) < 0.5  # RegMix's sparse runs: ~45% zero weights
    assert d["y_train"][:2].tolist() == [5.169477939605713, 5.343518733978272]
    assert "Copyright (c) 2024 Sea AI Lab" in (DATA / "LICENSE").read_text()
    assert "MIT License" in (DATA / "LICENSE").read_text()


def test_mixfit_reproduces_regmixs_held_out_rank_correlation():
    d = regmix_check.load(DATA)
    first = np.arange(96)
    got = {m: regmix_check.heldout(d, m, first) for m in ("gbm", "loglinear", "linear")}
    assert got["gbm"] == pytest.approx(0.9597, abs=1e-3)
    assert got["loglinear"] == pytest.approx(0.9665, abs=1e-3)
    assert min(got["gbm"], got["loglinear"]) >= 0.95  # the paper's bar
    assert got["linear"] < 0.92  # a linear fit of the same runs ranks them worse
    # fewer runs rank worse: the learning curve's direction, which sets curate mix's default run count
    assert regmix_check.heldout(d, "gbm", np.arange(16)) < 0.85
    model, errors, _ = mixfit.Procedure("auto").run(d["x_train"], d["y_train"])
    assert model == min(errors, key=lambda m: errors[m])


def test_missing_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        regmix_check.load(tmp_path)
    assert str(e.value) == (
        f"{tmp_path}: missing train_mixture_1m.csv, train_pile_loss_1m.csv, test_mixture_1m.csv, "
        "test_pile_loss_1m.csv (RegMix's data/ folder)"
    )
