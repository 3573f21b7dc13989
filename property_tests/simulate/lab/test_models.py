"""Synthetic targets and drafters: exact, reproducible rows; drafters match their definitions."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.simulate.lab.models import (
    AutoregressiveDrafter,
    NGramTarget,
    PositionWiseDrafter,
    exponent_for_entropy,
    kl_divergence,
    mean_depth1_kl,
    zipf_entropy,
)
from exitlaw.theory import DistributionError, check_rows

contexts = st.lists(st.integers(0, 11), min_size=0, max_size=6).map(tuple)


@given(
    ctx=contexts,
    order=st.integers(1, 4),
    zipf=st.floats(0.3, 3.0),
    temp=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
)
def test_target_rows_are_distributions_determined_by_the_context_suffix(ctx, order, zipf, temp):
    t = NGramTarget(12, order=order, zipf=zipf, temperature=temp, seed=3)
    row = t.probs(ctx)
    check_rows(row[None], atol=1e-12)
    padded = (5, 7, 1, 0, 2, 9) + ctx  # same last order-1 tokens iff ctx is long enough
    if len(ctx) >= order - 1:
        np.testing.assert_array_equal(row, t.probs(padded))
    # a fresh object (empty cache) reproduces the row exactly
    np.testing.assert_array_equal(
        row, NGramTarget(12, order=order, zipf=zipf, temperature=temp, seed=3).probs(ctx)
    )


def test_target_rows_follow_a_permuted_zipf_spectrum_and_differ_across_contexts():
    t = NGramTarget(50, order=2, zipf=1.5, seed=0)
    spectrum = np.arange(1, 51) ** -1.5
    spectrum /= spectrum.sum()
    rows = t.rows([(a,) for a in range(10)])
    for r in rows:
        np.testing.assert_allclose(np.sort(r)[::-1], spectrum, rtol=1e-12)
    assert len({int(np.argmax(r)) for r in rows}) > 3  # the ranking depends on the context


def test_greedy_target_is_the_one_hot_argmax_of_the_sampling_target():
    t1 = NGramTarget(30, order=3, zipf=1.2, seed=4)
    t0 = t1.with_temperature(0.0)
    for ctx in [(1, 2), (3,), (), (7, 7, 7)]:
        row = t0.probs(ctx)
        assert row.max() == 1.0 and row.sum() == 1.0
        assert int(np.argmax(row)) == int(np.argmax(t1.probs(ctx)))


@given(vocab=st.integers(3, 500), frac=st.floats(0.05, 0.95))
def test_exponent_for_entropy_inverts_zipf_entropy(vocab, frac):
    h = frac * np.log(vocab)
    s = exponent_for_entropy(vocab, h)
    assert abs(zipf_entropy(vocab, s) - h) < 1e-6


def _brute_marginals(target, ctx, horizon):
    """q_d(y) = sum over paths of prod p, by enumeration."""
    V = target.vocab
    out = np.zeros((horizon, V))
    for d in range(1, horizon + 1):
        for path in itertools.product(range(V), repeat=d):
            p = 1.0
            for i, tok in enumerate(path):
                p *= target.probs(tuple(ctx) + path[:i])[tok]
            out[d - 1, path[-1]] += p
    return out


@pytest.mark.parametrize("ctx", [(), (2,), (0, 3)])
def test_marginal_drafter_without_mismatch_equals_the_enumerated_d_step_marginals(ctx):
    t = NGramTarget(4, order=2, zipf=0.8, seed=2)
    d = PositionWiseDrafter(t, mode="marginal", noise=0.0, eps=0.0)
    np.testing.assert_allclose(d.marginals(ctx, 3), _brute_marginals(t, ctx, 3), atol=1e-12)


def test_greedy_path_drafter_without_mismatch_follows_the_target_argmax_path():
    t = NGramTarget(20, order=3, zipf=1.3, seed=5)
    d = PositionWiseDrafter(t, mode="greedy_path", noise=0.0, eps=0.0)
    ctx = (4, 9)
    q = d.marginals(ctx, 4)
    path = ctx
    for row in q:
        np.testing.assert_allclose(row, t.probs(path), atol=1e-15)
        path = path + (int(np.argmax(row)),)


def test_autoregressive_drafter_without_mismatch_is_the_target_and_mismatch_grows_with_noise():
    t = NGramTarget(40, order=2, zipf=1.2, seed=1)
    ctxs = [(a,) for a in range(40)]
    exact = AutoregressiveDrafter(t, noise=0.0, temperature=1.0, eps=0.0)
    np.testing.assert_allclose(exact.probs((3, 5)), t.probs((5,)), atol=1e-15)
    assert mean_depth1_kl(t, exact, ctxs) < 1e-12
    kls = [
        mean_depth1_kl(t, AutoregressiveDrafter(t, noise=s, eps=1e-3), ctxs)
        for s in (0.0, 0.5, 1.5)
    ]
    assert kls[0] < kls[1] < kls[2]
    hot = mean_depth1_kl(t, AutoregressiveDrafter(t, noise=0.0, temperature=2.0, eps=0.0), ctxs)
    assert hot > 0.01


def test_drafters_of_a_greedy_target_model_its_temperature_one_law():
    t1 = NGramTarget(30, order=2, zipf=1.2, seed=8)
    t0 = t1.with_temperature(0.0)
    for kind in (
        lambda t: AutoregressiveDrafter(t, noise=0.3, seed=2).probs((4,)),
        lambda t: PositionWiseDrafter(t, noise=0.3, seed=2).marginals((4,), 3),
    ):
        np.testing.assert_array_equal(kind(t0), kind(t1))


def test_drafter_rows_are_distributions_and_reproducible():
    t = NGramTarget(25, order=2, zipf=1.0, seed=7)
    a = PositionWiseDrafter(t, noise=0.7, seed=3).marginals((1, 2), 5)
    b = PositionWiseDrafter(t, noise=0.7, seed=3).marginals((9, 2), 5)  # same suffix (order 2)
    c = PositionWiseDrafter(t, noise=0.7, seed=4).marginals((1, 2), 5)
    check_rows(a, atol=1e-12)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_kl_divergence_is_zero_on_equal_rows_and_handles_zeros():
    p = np.array([[0.5, 0.5, 0.0]])
    assert kl_divergence(p, p)[0] == 0.0
    assert kl_divergence(p, np.array([[0.25, 0.25, 0.5]]))[0] == pytest.approx(np.log(2))


def test_bad_model_parameters_raise_clear_errors():
    with pytest.raises(ValueError, match="vocab"):
        NGramTarget(1)
    with pytest.raises(ValueError, match="order"):
        NGramTarget(5, order=0)
    with pytest.raises(DistributionError, match="temperature"):
        NGramTarget(5, temperature=-1)
    with pytest.raises(ValueError, match="order-2"):
        PositionWiseDrafter(NGramTarget(5, order=3), mode="marginal")
    with pytest.raises(ValueError, match="mode"):
        PositionWiseDrafter(NGramTarget(5), mode="nope")
    with pytest.raises(ValueError, match="entropy"):
        exponent_for_entropy(10, 5.0)


def test_row_cache_stays_within_its_byte_budget_and_eviction_keeps_rows_exact():
    small = NGramTarget(1000, order=2, seed=9, cache_mib=0.05)  # about six rows
    fresh = NGramTarget(1000, order=2, seed=9)
    for a in list(range(40)) + list(range(10)):
        np.testing.assert_array_equal(small.probs((a,)), fresh.probs((a,)))
    assert small._cache.bytes <= 0.05 * 2**20
