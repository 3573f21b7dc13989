"""The processed target distribution (theory.sampling_settings): validation, hand cases, ties,
orders, the float64 twin against the exact Fraction reference, T = 0, and laws under settings."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import exitlaw.theory as theory
from exitlaw.theory import DistributionError, DraftTree, reference_law, softmax_with_temperature
from exitlaw.theory import sampling_settings as ss
from exitlaw.theory.sampling_settings import (
    HF_ORDER,
    VLLM_ORDER,
    SamplingSettings,
    process_logits,
    process_rows,
    process_rows_exact,
    processed_target,
)


# ----------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(temperature=-0.1), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(temperature=float("inf")), "temperature"),
        (dict(temperature="1"), "temperature"),
        (dict(temperature=1, top_k=0), "top_k"),
        (dict(temperature=1, top_k=2.5), "top_k"),
        (dict(temperature=1, top_k=True), "top_k"),
        (dict(temperature=1, top_p=0.0), "top_p"),
        (dict(temperature=1, top_p=1.5), "top_p"),
        (dict(temperature=1, top_p=float("nan")), "top_p"),
        (dict(temperature=1, min_p=1.0), "min_p"),
        (dict(temperature=1, min_p=-0.1), "min_p"),
        (dict(temperature=1, min_p=float("nan")), "min_p"),
        (dict(temperature=1, order=("top_k", "top_p", "typical")), "typical"),
        (dict(temperature=1, order=("top_k", "top_p")), "exactly once"),
        (dict(temperature=1, order="top_k"), "order"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, word):
    with pytest.raises(DistributionError, match=word):
        SamplingSettings(**kwargs)


BELOW_FLOOR = float(np.nextafter(ss.MIN_TEMPERATURE, 0.0))


@pytest.mark.parametrize("t", [BELOW_FLOOR, 1e-308, 5e-324])
def test_a_temperature_below_the_floor_is_refused_naming_it_the_floor_and_greedy(t):
    with pytest.raises(DistributionError) as err:
        SamplingSettings(t)
    msg = str(err.value)
    assert repr(t) in msg and "MIN_TEMPERATURE = 1e-06" in msg and "use 0 for greedy" in msg


@pytest.mark.parametrize(
    "enter",
    [
        SamplingSettings(1.0, top_k=2).at,
        lambda t: SamplingSettings.from_record({"temperature": t}),
        lambda t: SamplingSettings.from_record({"top_p": 0.5}, temperature=t),
        lambda t: theory.check_temperature(t, allow_zero=True),
        lambda t: softmax_with_temperature([[0.0, 1.0]], t),
        lambda t: theory.probs_from_logits(np.array([[0.0, 1.0]]), t),
    ],
    ids=["at", "from_record", "from_record_default", "check_temperature", "softmax", "law"],
)
def test_every_bare_temperature_entry_refuses_the_same_floor(enter):
    with pytest.raises(DistributionError, match="below the floor MIN_TEMPERATURE = 1e-06"):
        enter(BELOW_FLOOR)
    enter(ss.MIN_TEMPERATURE)  # the floor itself is a temperature


def test_the_floor_without_greedy_does_not_offer_zero():
    with pytest.raises(DistributionError) as err:
        theory.check_temperature(BELOW_FLOOR, allow_zero=False)
    assert "below the floor" in str(err.value) and "greedy" not in str(err.value)


@given(t=st.sampled_from([0.0, ss.MIN_TEMPERATURE, float(np.nextafter(ss.MIN_TEMPERATURE, 1))]))
def test_zero_the_floor_and_just_above_are_accepted_unchanged(t):
    assert (
        SamplingSettings(t).temperature == t and theory.check_temperature(t, allow_zero=True) == t
    )


@given(
    z=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=8), top_k=st.none() | st.integers(1, 8)
)
def test_processing_at_the_floor_is_a_distribution_on_the_maxima(z, top_k):
    """At ``T = MIN_TEMPERATURE`` logits up to 1e3 give a finite row summing to 1 whose mass sits on
    tokens within ``40 T`` of the maximum (any other weight is below ``exp(-40)``)."""
    p = process_logits([z], SamplingSettings(ss.MIN_TEMPERATURE, top_k=top_k))[0]
    assert np.isfinite(p).all() and abs(p.sum() - 1) < 1e-12
    near = np.asarray(z) >= max(z) - 40 * ss.MIN_TEMPERATURE
    assert p[~near].sum() < 1e-15 * len(z)


def test_orders_and_default():
    assert VLLM_ORDER == ("min_p", "top_k", "top_p") and HF_ORDER == ("top_k", "top_p", "min_p")
    assert SamplingSettings(1.0).order == ss.DEFAULT_ORDER == VLLM_ORDER
    assert SamplingSettings(1.0, top_p=1.0, min_p=0.0).active() == ()
    assert SamplingSettings(1.0, top_k=3, top_p=0.9, order=HF_ORDER).active() == ("top_k", "top_p")
    assert theory.SamplingSettings is SamplingSettings and theory.process_logits is process_logits


# ----------------------------------------------------------------- hand cases (exact)
def F(*xs):
    return [Fraction(x) for x in xs]


@pytest.mark.parametrize(
    "settings, row, want",
    [
        # top-k keeps every token tied at the k-th place
        (SamplingSettings(1, top_k=2), F(4, 2, 2, 1), F("1/2", "1/4", "1/4", 0)),
        (SamplingSettings(1, top_k=1), F(1, 3, 3), F(0, "1/2", "1/2")),
        (SamplingSettings(1, top_k=9), F(1, 3), F("1/4", "3/4")),
        # top-p: smallest head reaching t S, plus ties of its last member
        (SamplingSettings(1, top_p=0.5), F(1, 1, 2), F(0, 0, 1)),
        (SamplingSettings(1, top_p=0.75), F(1, 1, 2), F("1/4", "1/4", "1/2")),
        (SamplingSettings(1, top_p=0.625), F(2, 1, 1, 4), F("1/3", 0, 0, "2/3")),
        (SamplingSettings(1, top_p=0.25), F(5, 1, 1, 1), F(1, 0, 0, 0)),
        # min-p relative to the max, ties kept
        (SamplingSettings(1, min_p=0.5), F(4, 2, 1, 2), F("1/2", "1/4", 0, "1/4")),
        # orders differ when top-p and min-p are both on: row 8,4,3,1 (S = 16)
        # vLLM: min-p 0.4 (bar 3.2) -> {8, 4}; top-p 0.6 of 12 = 7.2 -> {8}
        (SamplingSettings(1, top_p=0.6, min_p=0.4, order=VLLM_ORDER), F(8, 4, 3, 1), F(1, 0, 0, 0)),
        # HF: top-p 0.6 of 16 = 9.6 -> {8, 4}; min-p 0.4 -> {8, 4}
        (
            SamplingSettings(1, top_p=0.6, min_p=0.4, order=HF_ORDER),
            F(8, 4, 3, 1),
            F("2/3", "1/3", 0, 0),
        ),
        # top-k then top-p renormalises: top-k 2 -> {6, 3} (S = 9); top-p 0.6 of 9 = 5.4 -> {6}
        (SamplingSettings(1, top_k=2, top_p=0.6), F(6, 3, 2, 1), F(1, 0, 0, 0)),
        (SamplingSettings(1, top_k=3, top_p=0.5), F(6, 3, 2, 1), F(1, 0, 0, 0)),  # 5.5 of 11
        (SamplingSettings(1, top_k=3, top_p=0.7), F(6, 3, 2, 1), F("2/3", "1/3", 0, 0)),
    ],
)
def test_exact_hand_cases(settings, row, want):
    assert process_rows_exact([row], settings) == [want]
    np.testing.assert_allclose(
        process_rows([[float(x) for x in row]], settings)[0],
        [float(x) for x in want],
        rtol=0,
        atol=1e-15,
    )


def test_zero_entries_stay_zero_and_bad_rows_are_refused():
    assert process_rows_exact([F(0, 1, 0, 1)], SamplingSettings(1, top_k=3)) == [
        F(0, "1/2", 0, "1/2")
    ]
    with pytest.raises(DistributionError, match="row 0"):
        process_rows_exact([F(0, 0)], SamplingSettings(1, top_k=1))
    with pytest.raises(DistributionError, match="row 1"):
        process_rows_exact([F(1), ["x"]], SamplingSettings(1))
    with pytest.raises(DistributionError, match="NaN"):
        process_logits([[0.0, float("nan")]], SamplingSettings(1))
    with pytest.raises(DistributionError, match="all -inf"):
        process_logits([[-np.inf, -np.inf]], SamplingSettings(1))
    with pytest.raises(TypeError, match="SamplingSettings"):
        process_logits([[0.0, 1.0]], {"temperature": 1})


# ----------------------------------------------------------------- definitional properties (exact)
settings_st = st.builds(
    SamplingSettings,
    temperature=st.just(1.0),
    top_k=st.none() | st.integers(1, 6),
    top_p=st.none() | st.sampled_from([0.125, 0.25, 0.5, 0.625, 0.75, 0.875, 1.0]),
    min_p=st.none() | st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.75]),
    order=st.permutations(ss.FILTERS).map(tuple),
)
rows_st = st.lists(st.integers(0, 6), min_size=1, max_size=7).filter(any)  # small ints: many ties


@given(row=rows_st, top_p=st.sampled_from([0.125, 0.25, 0.5, 0.625, 0.75, 0.875, 1.0]))
def test_top_p_is_the_smallest_tie_closed_head_reaching_t(row, top_p):
    """Brute force over thresholds: the kept set is ``{p >= c}`` for the largest level ``c`` whose
    set holds mass ``>= t S`` (so the next level up holds ``< t S``)."""
    out = process_rows_exact([row], SamplingSettings(1, top_p=top_p))[0]
    S, t = sum(row), Fraction(top_p)
    levels = sorted({x for x in row if x > 0}, reverse=True)
    c = next(c for c in levels if sum(x for x in row if x >= c) >= t * S)
    assert [o > 0 for o in out] == [x >= c and x > 0 for x in row]


@given(row=rows_st, settings=settings_st)
def test_float_twin_equals_exact_on_integer_rows(row, settings):
    """Integer rows and dyadic thresholds are exact in float64, so the twin must agree exactly
    (support) and to rounding (values); every result is a distribution that keeps the argmax."""
    exact = process_rows_exact([row], settings)[0]
    flt = process_rows([row], settings)[0]
    assert [x > 0 for x in exact] == list(flt > 0)
    np.testing.assert_allclose(flt, [float(x) for x in exact], rtol=0, atol=1e-15)
    assert sum(exact) == 1 and exact[int(np.argmax(row))] > 0


@given(row=rows_st, settings=settings_st)
def test_top_k_and_min_p_commute(row, settings):
    a = SamplingSettings(
        1, top_k=settings.top_k, min_p=settings.min_p, order=("top_k", "min_p", "top_p")
    )
    b = SamplingSettings(
        1, top_k=settings.top_k, min_p=settings.min_p, order=("min_p", "top_k", "top_p")
    )
    assert process_rows_exact([row], a) == process_rows_exact([row], b)


@given(
    seed=st.integers(0, 2**32 - 1),
    settings=settings_st,
    temperature=st.sampled_from([0.3, 1.0, 1.7]),
)
def test_process_logits_is_temperature_then_filters(seed, settings, temperature):
    """On continuous logits: ``process_logits = process_rows(softmax(z / T))``, and equal to the exact
    reference on the (rationalised) tempered rows up to float rounding."""
    z = np.random.default_rng(seed).normal(size=(3, 6)) * 2
    s = SamplingSettings(
        temperature, settings.top_k, settings.top_p, settings.min_p, settings.order
    )
    got = process_logits(z, s)
    tempered = softmax_with_temperature(z, temperature)
    np.testing.assert_allclose(got, process_rows(tempered, s), rtol=0, atol=1e-14)
    exact = process_rows_exact([[Fraction(float(x)) for x in r] for r in tempered], s)
    np.testing.assert_allclose(got, np.array(exact, dtype=np.float64), rtol=0, atol=1e-12)


def test_no_filter_is_plain_softmax_and_t0_is_first_argmax():
    z = np.array([[0.3, 2.0, 2.0, -1.0], [1.0, 0.0, 5.0, -np.inf]])
    np.testing.assert_allclose(
        process_logits(z, SamplingSettings(0.7)), softmax_with_temperature(z, 0.7), atol=1e-15
    )
    for s in (SamplingSettings(0.0), SamplingSettings(0.0, top_k=3, top_p=0.2, min_p=0.5)):
        np.testing.assert_array_equal(process_logits(z, s), [[0, 1, 0, 0], [0, 0, 1, 0]])
    # at T = 1 top-k = 1 is the one-hot argmax when the maximum is unique, and keeps ties otherwise
    np.testing.assert_allclose(
        process_logits(z, SamplingSettings(1.0, top_k=1)), [[0, 0.5, 0.5, 0], [0, 0, 1, 0]]
    )


# ----------------------------------------------------------------- laws under settings
def test_processed_exit_law_and_ceiling():
    tree = DraftTree.from_paths([[1], [1, 0], [1, 2], [0], [2], [2, 2], [2, 2, 1]])
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(tree.num_nodes, 4)) * 2
    s = SamplingSettings(0.8, top_k=3, top_p=0.8, min_p=0.1)
    rows = process_logits(logits, s)
    law = theory.processed_exit_law(tree, logits, s)
    ref = reference_law(tree, [[Fraction(float(x)) for x in r] for r in rows])
    np.testing.assert_allclose(np.asarray(law.w), [float(x) for x in ref.w], atol=1e-12)
    assert math.isclose(float(law.coverage), float(sum(ref.prefix[1:])), abs_tol=1e-12)
    # filters change the law here (else the test could not see a dropped setting)
    assert not np.allclose(
        np.asarray(law.w),
        [
            float(x)
            for x in reference_law(tree, softmax_with_temperature(logits, 0.8).tolist(), one=1.0).w
        ],
        atol=1e-6,
    )

    def logits_of(prefix):
        return np.random.default_rng([9, len(prefix), *prefix]).normal(size=3) * 2

    target = processed_target(logits_of, SamplingSettings(1.0, top_k=2))
    best = theory.oracle_tree(target, 3)
    assert all(
        r.sum() == pytest.approx(1) and (r > 0).sum() <= 2 for r in (target(()), target((0,)))
    )
    assert (
        theory.coverage_under(target, best)
        >= theory.coverage_under(target, DraftTree.chain([0, 0, 0])) - 1e-12
    )
    assert theory.allocation_gap(target, best) == pytest.approx(0, abs=1e-12)
