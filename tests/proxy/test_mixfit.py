"""The mixture search's numbers on synthetic truths: candidates that cover the simplex's corners and sparse
mixtures, the log-linear law recovered, the permutation p-value small for a real signal and not for
noise, the bootstrap that refits, the split-seed noise ceiling and the out-of-region flag."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy import mixfit
from curate.proxy.mixfit import regress

NAT = np.array([0.4, 0.3, 0.2, 0.1])


def _design(spread: int, local: int = 0, nat: np.ndarray = NAT) -> mixfit.Design:
    return mixfit.Design(
        natural=nat,
        spread=spread,
        local=local,
        strength=(0.3, 10.0),
        temperature=0.5,
        min_weight=0.01,
        concentration=4.0,
    )


def test_candidates_cover_corners_and_sparse_mixtures():
    tokens = np.array([300.0, 250.0, 200.0, 120.0, 80.0, 50.0])
    nat, sources = tokens / tokens.sum(), list("abcdef")
    c = mixfit.candidates(sources, tokens, 200.0, _design(60, nat=nat), max_epochs=4.0, singles=True, seed=0)
    spread = np.array([w for n, w in c.items() if n.startswith("s")])
    assert list(c)[:2] == ["natural", "s00"]
    assert len(spread) == 60
    assert [n for n in c if n.startswith("only-")] == [f"only-{s}" for s in sources]  # every corner
    assert np.allclose(spread.sum(axis=1), 1.0)
    assert not ((spread > 0) & (spread < 0.01)).any()  # weights under min_weight are zeroed
    assert 0.2 <= float((spread == 0).mean()) <= 0.6  # sparse (RegMix's runs: 45% zeros over 17 domains)
    assert ((spread > 0).sum(axis=1) <= 2).sum() >= 10  # edges of the simplex: one or two sources
    assert (spread > 0).sum(axis=1).max() == 6  # and dense mixtures too
    assert (spread.max(axis=0) >= 0.5).all()  # every source the majority somewhere
    far = mixfit.total_variation(nat, spread)
    # the old design (Dirichlet(4 x K x natural)) never leaves the natural mixture's neighbourhood
    local = mixfit.candidates(
        sources, tokens, 200.0, _design(0, 60, nat), max_epochs=4.0, singles=False, seed=0
    )
    near = np.array([w for n, w in local.items() if n.startswith("d")])
    assert len(near) == 60
    assert (near > 0).all()
    assert mixfit.total_variation(nat, near).max() < 0.4 < 0.7 < far.max()
    again = mixfit.candidates(
        sources, tokens, 200.0, _design(60, nat=nat), max_epochs=4.0, singles=True, seed=0
    )
    assert all(np.array_equal(c[n], again[n]) for n in c)  # seeded


def test_candidates_stay_within_the_epoch_limit():
    tokens = np.array([400.0, 300.0, 200.0, 100.0])
    c = mixfit.candidates(list("abcd"), tokens, 1000.0, _design(40), max_epochs=4.0, singles=True, seed=0)
    # c alone would be 5 epochs of its 200 tokens, d alone 10: over the limit, so only a and b stand alone
    assert [n for n in c if n.startswith("only-")] == ["only-a", "only-b"]
    spread = np.array([w for n, w in c.items() if n.startswith("s")])
    assert len(spread) == 40
    assert mixfit.epochs(spread, tokens, 1000.0).max() <= 4.0
    assert spread[:, 3].max() > 0.3  # d up to near its 4-epoch cap of 0.4
    every = mixfit.candidates(list("abcd"), tokens, 1000.0, _design(0), max_epochs=4.0, singles="all", seed=0)
    assert list(every) == ["natural", "only-a", "only-b", "only-c", "only-d"]


def test_the_default_run_count_grows_with_the_sources():
    assert [mixfit.default_runs(k) for k in (2, 3, 8, 17)] == [16, 18, 48, 102]


def _loglinear_truth(n: int, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = _design(n).draw_spread(n, rng)
    truth = 0.8 + np.exp(w @ np.array([0.5, -0.3, 0.2, 0.9]))
    return w, truth + rng.normal(0, noise, n), truth


def test_the_log_linear_law_is_recovered_where_a_linear_fit_is_not():
    w, y, _ = _loglinear_truth(30, 0.0)
    fresh = np.vstack([np.eye(4), _design(10).draw_spread(10, np.random.default_rng(5))])
    truth = 0.8 + np.exp(fresh @ np.array([0.5, -0.3, 0.2, 0.9]))
    assert mixfit.fit_loglinear(w, y)(fresh) == pytest.approx(truth, abs=1e-6)  # corners included
    assert np.abs(mixfit.fit_linear(w, y)(fresh) - truth).max() > 0.1
    # a constant loss has no law to fit: the mean, whatever the weights
    assert mixfit.fit_loglinear(w, np.full(30, 2.5))(fresh).tolist() == [2.5] * 14
    with pytest.raises(
        ValueError, match=r"^mixfit.fit: model 'forest' is not one of linear, gbm, loglinear$"
    ):
        mixfit.fit(w, y, "forest")


def test_auto_chooses_the_model_of_least_held_out_error():
    w, y, truth = _loglinear_truth(30, 0.01)
    model, errors, preds = mixfit.Procedure("auto").run(w, y)
    assert model == "loglinear"
    assert set(errors) == {"loglinear", "gbm"}
    assert errors["loglinear"] < errors["gbm"]
    folds = mixfit.fold_ids(np.arange(30), 10, 0)
    assert preds == pytest.approx(mixfit.heldout_predictions(w, y, "loglinear", folds))
    assert mixfit.spearman(preds, truth) > 0.95
    # a step in one weight: trees fit it, the smooth law does not
    step = np.where(w[:, 0] > 0.3, 1.0, 2.0)
    assert mixfit.Procedure("auto").run(w, step)[0] == "gbm"


def test_folds_keep_every_copy_of_a_mixture_together():
    groups = np.array([0, 1, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    f = mixfit.fold_ids(groups, 5, 0)
    for g in np.unique(groups):
        assert len(set(f[groups == g].tolist())) == 1
    assert sorted(np.bincount(f[np.unique(groups, return_index=True)[1]]).tolist()) == [2, 2, 2, 3, 3]
    assert sorted(mixfit.fold_ids(np.arange(6), 10, 0).tolist()) == list(range(6))  # leave-one-out under 10


def test_the_permutation_p_value_is_small_for_a_signal_and_not_for_noise():
    w, y, _ = _loglinear_truth(20, 0.01)
    proc = mixfit.Procedure("loglinear", folds=5)
    rho = mixfit.spearman(proc.run(w, y)[2], y)
    assert rho > 0.9
    assert mixfit.permutation_p(proc, w, y, rho, 49, 0) == pytest.approx(1 / 50)  # no permutation reaches it
    noise = np.random.default_rng(1).normal(3.0, 0.05, 20)
    r0 = mixfit.spearman(proc.run(w, noise)[2], noise)
    assert mixfit.permutation_p(proc, w, noise, r0, 49, 0) > 0.2
    # the held-out Spearman of a fit to noise sits below 0 on average: the permutations, not 0, are the null
    perms = [proc.rho(w, np.random.default_rng(s).permutation(noise)) for s in range(20)]
    assert float(np.mean(perms)) < -0.05
    assert mixfit.permutation_p(proc, w, y, None, 49, 0) is None


def test_the_bootstrap_refits_on_every_resample(monkeypatch):
    w, y, _ = _loglinear_truth(20, 0.01)
    proc = mixfit.Procedure("loglinear", folds=5)
    fits = []
    real = regress.FITS["loglinear"]
    monkeypatch.setitem(regress.FITS, "loglinear", lambda a, b: fits.append(len(b)) or real(a, b))
    lo, hi = mixfit.refit_bootstrap(proc, w, y, 30, 0)
    assert len(fits) == 30 * 5  # every resample fitted again, fold by fold
    assert all(12 <= n <= 19 for n in fits)  # each fit on the resample's other folds, copies included
    assert lo is not None
    assert hi is not None
    assert 0.8 < lo <= hi <= 1.0
    monkeypatch.setitem(regress.FITS, "loglinear", real)
    noise = np.random.default_rng(2).normal(3.0, 0.05, 20)
    lo, hi = mixfit.refit_bootstrap(proc, w, noise, 40, 0)
    assert lo is not None
    assert hi is not None
    assert lo < 0 < hi
    assert mixfit.refit_bootstrap(proc, w[:2], y[:2], 30, 0) == (None, None)
    assert mixfit.refit_bootstrap(proc, w, y, 30, 4) == mixfit.refit_bootstrap(proc, w, y, 30, 4)


def test_the_split_seed_noise_ceiling():
    a = np.arange(8.0)
    assert mixfit.split_seed_ceiling(a, a) == {"mixtures": 8, "split_spearman": 1.0, "ceiling": 1.0}
    assert mixfit.split_seed_ceiling(a, -a)["ceiling"] == 0.0  # seeds that disagree: nothing to rank
    b = np.array([1.0, 0.0, 3.0, 2.0, 5.0, 4.0, 7.0, 6.0])  # neighbours swapped: rho = 1 - 6*8/(8*63)
    out = mixfit.split_seed_ceiling(a, b)
    assert out["split_spearman"] == pytest.approx(1 - 48 / 504)
    assert out["ceiling"] == pytest.approx(math.sqrt(1 - 48 / 504))
    assert mixfit.split_seed_ceiling(a[:2], b[:2])["ceiling"] is None


def test_weights_outside_the_sampled_region_are_flagged():
    fitted = np.array(
        [[0.341, 0.659, 0.0], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]]
    )
    names = ["forum", "news", "web"]
    out = mixfit.region(np.array([0.556, 0.344, 0.1]), fitted, names)
    assert out["inside"] is False
    assert out["outside_range"] == {"forum": {"weight": 0.556, "sampled": [0.05, 0.341]}}
    assert mixfit.region(fitted[1], fitted, names)["inside"] is True
    assert mixfit.region(fitted[1], fitted, names)["nearest_tv"] == 0.0
    # within every source's range, yet in a hole: farther from every fitted mixture than they are apart
    corners = np.array(  # pairs near each corner, 0.05 apart: the middle is a hole
        [
            [0.9, 0.05, 0.05],
            [0.85, 0.1, 0.05],
            [0.05, 0.9, 0.05],
            [0.1, 0.85, 0.05],
            [0.05, 0.05, 0.9],
            [0.1, 0.05, 0.85],
        ]
    )
    mid = mixfit.region(np.array([1 / 3, 1 / 3, 1 / 3]), corners, names)
    assert mid["outside_range"] == {}
    assert (mid["nearest_tv"], mid["spacing_tv_p95"]) == (0.516667, 0.05)
    assert mid["inside"] is False


def test_choose_prefers_the_best_within_the_epoch_limit():
    rng = np.random.default_rng(0)
    nat = np.array([0.1, 0.45, 0.45])
    design = _design(40, nat=nat)
    w = design.draw_spread(40, rng)
    y = 3.0 - 0.6 * w[:, 0] + 0.3 * w[:, 2]
    tokens = np.array([100.0, 450.0, 450.0])  # source 0 (the best) alone would be 10 epochs
    c = mixfit.choose(w, y, tokens, 1000.0, design, model="linear", max_epochs=4.0, n_boot=50, seed=0)
    assert c.within_limit
    assert c.epochs.max() <= 4.0 + 1e-9
    assert 0.3 <= c.weights[0] <= 0.4  # toward as much of the best source as 4 epochs allow
    assert c.weights[2] < 0.25  # and less of the worst than its natural 0.45
    assert c.weights.sum() == pytest.approx(1.0)
    f = mixfit.fit_linear(w, y)
    assert c.predicted == pytest.approx(f(c.weights[None, :])[0])
    assert c.interval[0] <= c.predicted + 1e-9 <= c.interval[1] + 2e-9
    assert not hasattr(c, "p_better")  # the decision is the confirmation's, not the bootstrap's
    free = mixfit.choose(w, y, tokens, 1000.0, design, model="linear", max_epochs=20.0, n_boot=20, seed=0)
    assert free.weights[0] > c.weights[0] + 0.1
