"""Calibration and power of the statistics the kit relies on.

Rates are themselves checked with calibrated bounds: a rejection rate over
``R`` repetitions is compared with the nominal rate through a binomial tail at
``1e-6``, so these tests fail by chance with probability below ``1e-6``.
Seeds come from ``seed_for(test id)`` and are printed on failure.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from exitlaw.simulate.stats import (
    cell_binomial,
    cell_power,
    chisquare_power,
    describe_seed,
    dkw_check,
    dkw_epsilon,
    pooled_chisquare,
    power_against,
    sample_size,
    seed_for,
)


def _rng(request):
    seq = seed_for(request.node.nodeid)
    return np.random.default_rng(seq), describe_seed(seq)


def test_chisquare_false_failure_rate_is_at_most_alpha(request):
    rng, seed = _rng(request)
    probs = np.array([0.4, 0.3, 0.15, 0.1, 0.04, 0.009, 0.001])
    reps, alpha = 2000, 0.05
    rejections = sum(
        pooled_chisquare(rng.multinomial(300, probs), probs).pvalue < alpha for _ in range(reps)
    )
    # binomial upper tail at 1e-6 around the nominal rate (small slack for the chi-square approximation)
    bound = sps.binom.isf(1e-6, reps, alpha * 1.2)
    assert rejections <= bound, f"{rejections}/{reps} rejections at alpha={alpha}; {seed}"


def test_pooling_is_decided_from_expected_counts_only():
    probs = np.array([0.5, 0.3, 0.15, 0.03, 0.015, 0.005])
    n = 100
    a = pooled_chisquare(np.array([50, 30, 15, 3, 1, 1]), probs)
    b = pooled_chisquare(np.array([40, 30, 15, 0, 0, 15]), probs)
    assert set(a.pooled) == set(b.pooled) == {3, 4, 5}  # n p < 5 exactly for cells 3, 4, 5
    assert a.cells == b.cells == 4
    assert all(n * probs[i] < 5 for i in a.pooled)


def test_an_observation_in_a_zero_probability_cell_fails_at_once():
    probs = np.array([0.5, 0.5, 0.0])
    res = pooled_chisquare(np.array([5000, 5000, 1]), probs)
    assert res.pvalue == 0.0 and res.zero_cell_hits == (2,)
    assert cell_binomial(np.array([5000, 5000, 1]), probs, alpha=1e-6).cell == 2


def test_bonferroni_cells_name_the_cell_that_is_off(request):
    rng, seed = _rng(request)
    probs = np.full(20, 0.05)
    alt = probs.copy()
    alt[7] += 0.03
    alt[3] -= 0.03
    counts = rng.multinomial(50_000, alt)
    rep = cell_binomial(counts, probs, alpha=1e-6)
    assert rep.cell in (3, 7) and set(rep.flagged) <= {3, 7} and rep.flagged, seed


def test_bonferroni_cells_false_failure_rate(request):
    rng, seed = _rng(request)
    probs = np.array([0.3, 0.3, 0.2, 0.1, 0.05, 0.05])
    reps, alpha = 2000, 0.05
    flagged = sum(
        bool(cell_binomial(rng.multinomial(500, probs), probs, alpha=alpha).flagged)
        for _ in range(reps)
    )
    assert flagged <= sps.binom.isf(1e-6, reps, alpha), f"{flagged}/{reps}; {seed}"


def test_dkw_band_holds_at_its_level(request):
    rng, seed = _rng(request)
    cdf = np.cumsum([0.2, 0.5, 0.2, 0.1])
    reps, alpha, misses = 1000, 0.05, 0
    for _ in range(reps):
        sup, eps = dkw_check(rng.choice(4, size=400, p=[0.2, 0.5, 0.2, 0.1]), cdf, alpha=alpha)
        misses += sup > eps
    assert misses <= sps.binom.isf(1e-6, reps, alpha), f"{misses}/{reps}; {seed}"
    assert dkw_epsilon(400, alpha) == pytest.approx(np.sqrt(np.log(40) / 800))


@given(
    cells=st.integers(2, 200),
    alpha=st.sampled_from([1e-3, 1e-6, 1e-8]),
    power=st.sampled_from([0.9, 0.999]),
    delta=st.sampled_from([0.05, 0.1, 0.2]),
)
def test_sample_size_is_the_smallest_n_reaching_the_power(cells, alpha, power, delta):
    n = sample_size(cells, alpha, power, delta)
    assert chisquare_power(n, cells, alpha, delta) >= power
    assert n == 1 or chisquare_power(n - 1, cells, alpha, delta) < power


def test_power_bound_holds_empirically_at_tv_delta(request):
    """Against an alternative at TV exactly delta the chi-square rejects at least as often as the
    noncentral-chi-square bound says (the bound uses the smallest noncentrality at that TV)."""
    rng, seed = _rng(request)
    probs = np.array([0.25, 0.25, 0.25, 0.25])
    delta, alpha = 0.1, 1e-3
    alt = probs + np.array([delta, -delta, 0, 0])
    n = sample_size(4, alpha, 0.9, delta)
    reps = 400
    hits = sum(pooled_chisquare(rng.multinomial(n, alt), probs).pvalue < alpha for _ in range(reps))
    predicted = power_against(n, probs, alt, alpha)
    assert predicted >= chisquare_power(n, 4, alpha, delta) - 1e-9
    assert hits >= sps.binom.ppf(1e-6, reps, 0.9), f"{hits}/{reps} at n={n}; {seed}"


def test_cell_power_of_a_zero_probability_cell():
    assert cell_power(1000, [0.5, 0.5, 0.0], [0.499, 0.5, 0.001], 1e-6) == pytest.approx(
        1 - 0.999**1000
    )


def test_seeds_are_derived_per_test_id_and_stable():
    a, b = seed_for("test_x"), seed_for("test_x")
    assert a.entropy == b.entropy and seed_for("test_y").entropy != a.entropy
    assert "SeedSequence(entropy=" in describe_seed(a)
