"""Paired objective comparisons: the crossed seeds x prompts interval and the pre-registered verdict rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from exitlaw.paper_repro.mini.stats import (
    VERDICTS,
    PairingError,
    claim_verdict,
    crossed_mean_ci,
    pair_verdict,
    paired_difference,
)


def test_one_seed_is_the_paired_t_interval_over_prompts():
    rng = np.random.default_rng(0)
    d = rng.normal(0.3, 1.0, size=(1, 25))
    res = crossed_mean_ci(d)
    lo, hi = stats.t.interval(0.95, 24, loc=d.mean(), scale=stats.sem(d[0]))
    assert res["lo"] == pytest.approx(lo) and res["hi"] == pytest.approx(hi)
    assert res["seed_variance_estimated"] is False and res["df"] == 24


@pytest.mark.parametrize("sig_seed,sig_prompt", [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.4, 0.4)])
def test_crossed_interval_covers_the_true_mean_at_its_nominal_rate(sig_seed, sig_prompt):
    """Calibrated: 600 simulated 3 x 40 layouts; 95 % coverage within 3.5 binomial s.e. (false-failure ~5e-4)."""
    rng = np.random.default_rng(1)
    n, hits = 600, 0
    for _ in range(n):
        d = (
            0.2
            + rng.normal(0, sig_seed, (3, 1))
            + rng.normal(0, sig_prompt, (1, 40))
            + rng.normal(0, 0.3, (3, 40))
        )
        r = crossed_mean_ci(d)
        hits += r["lo"] <= 0.2 <= r["hi"]
    se = np.sqrt(0.95 * 0.05 / n)
    # truncating negative variance components makes the interval slightly conservative: allow excess coverage
    assert 0.95 - 3.5 * se <= hits / n <= 0.995


def test_a_seed_effect_widens_the_interval_a_prompt_only_interval_would_miss():
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.1, (3, 40))
    shifted = noise + np.array([[-1.0], [0.0], [1.0]])  # seeds disagree strongly
    narrow, wide = crossed_mean_ci(noise), crossed_mean_ci(shifted)
    assert wide["hi"] - wide["lo"] > 10 * (narrow["hi"] - narrow["lo"])
    assert wide["df"] < 3  # Satterthwaite: dominated by the 2-df seed term


def test_mde_is_the_power_multiple_of_the_standard_error():
    r = crossed_mean_ci(np.random.default_rng(3).normal(size=(3, 40)))
    assert r["mde"] == pytest.approx(
        (stats.t.ppf(0.975, r["df"]) + stats.t.ppf(0.8, r["df"])) * r["se"]
    )


def test_paired_difference_is_relative_to_the_second_arm_and_checks_pairing():
    a = {0: [3.0, 5.0], 1: [4.0, 4.0]}
    b = {0: [2.0, 4.0], 1: [3.0, 3.0]}
    r = paired_difference(a, b)
    assert r["mean"] == pytest.approx(1.0) and r["rel_mean"] == pytest.approx(100 / 3)
    with pytest.raises(PairingError, match="seeds"):
        paired_difference(a, {0: [1.0, 1.0], 2: [1.0, 1.0]})
    with pytest.raises(PairingError, match="prompts"):
        paired_difference(a, {0: [1.0, 1.0, 1.0], 1: [1.0, 1.0, 1.0]})
    with pytest.raises(PairingError):
        crossed_mean_ci(np.ones((2, 1)))


@pytest.mark.parametrize(
    "lo,hi,pair,claim",
    [
        (0.5, 6.0, "A > B", "reproduced"),
        (-6.0, -0.5, "A < B", "contradicted"),
        (-2.0, 3.0, "smaller than the paper's effect", "contradicted"),
        (-2.0, 5.0, "inconclusive", "inconclusive"),
        (-9.0, 4.0, "inconclusive", "inconclusive"),
    ],
)
def test_verdict_rule(lo, hi, pair, claim):
    assert pair_verdict(lo, hi, 4.0) == pair and claim_verdict(pair) == claim
    assert pair in VERDICTS


def test_verdict_rule_rejects_bad_input():
    with pytest.raises(ValueError):
        pair_verdict(1.0, 0.0, 4.0)
    with pytest.raises(ValueError):
        pair_verdict(0.0, 1.0, 0.0)
    with pytest.raises(ValueError):
        claim_verdict("maybe")
