"""Signal and noise per eval set: the spread of the recipe means at T against the seed noise of a mean."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.proxy.statistics.signal import signal_noise

# means 1.2, 1.1, 1.0: signal = sd(ddof 1) = 0.1
RAW = np.array([1.0, 1.2, 1.4])  # var 0.04
A = np.array([1.1, 1.1, 1.1])  # var 0
B = np.array([0.9, 1.0, 1.1])  # var 0.01


def test_signal_noise_exact_values():
    sn = signal_noise({"raw": RAW, "a": A, "b": B})
    assert sn["signal"] == pytest.approx(0.1)
    # noise = sqrt(mean(0.04 / 3, 0 / 3, 0.01 / 3)) = sqrt(0.05) / 3
    assert sn["noise"] == pytest.approx(math.sqrt(0.05) / 3)
    assert sn["snr"] == pytest.approx(3 / math.sqrt(5))  # 1.342
    assert sn["too_noisy"] is False
    assert sn["method"].startswith("signal: sd (ddof 1) over the baseline and the non-control recipes")
    # the same means with a noisier baseline: noise = sqrt((0.16 + 0 + 0.01) / 9), snr = 0.3 / sqrt(0.17)
    loud = signal_noise({"raw": np.array([0.8, 1.2, 1.6]), "a": A, "b": B})
    assert loud["noise"] == pytest.approx(math.sqrt(0.17) / 3)
    assert loud["snr"] == pytest.approx(0.3 / math.sqrt(0.17))  # 0.728
    assert loud["too_noisy"] is True


def test_signal_noise_without_two_seeds_or_two_recipes_is_unknown_not_noisy():
    one_seed = signal_noise({"raw": RAW[:1], "a": A[:1]})
    assert (one_seed["noise"], one_seed["snr"], one_seed["too_noisy"]) == (None, None, False)
    assert one_seed["signal"] == pytest.approx(0.1 / math.sqrt(2))
    alone = signal_noise({"raw": RAW})
    assert (alone["signal"], alone["snr"], alone["too_noisy"]) == (None, None, False)
    assert alone["noise"] == pytest.approx(0.2 / math.sqrt(3))
    silent = signal_noise({"raw": A, "a": A - 0.1})  # no seed noise at all: snr undefined, never too noisy
    assert (silent["noise"], silent["snr"], silent["too_noisy"]) == (0.0, None, False)
