"""Edges of the CPU reductions, the builders' candidate selection and the sampling settings, on both
sides of each rule (issue 52), through public entry points only: ``first_argmax`` (NaN counts as the
maximum, the first maximum wins, empty rows), ``top_candidates`` (the numpy and the torch paths give the
same values at ``m`` = 1, ``V - 1`` and ``V``, ties, infinities and NaN), the builders' value checks
(``LOGPROB_ATOL`` at, below and above; rows with no finite entry), and each filter's threshold at its
edge in the engine (torch) and in the theory (numpy, Fraction): top-k with ties across the ``k``-th
place, top-p's strict ``<`` at a mass exactly on the bar, min-p's ``>=`` exactly on ``m max``, the two
filter orders where they differ, and the ranges of every setting just inside and just outside."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from exitlaw.engine.builders import build_chain, build_ddtree
from exitlaw.engine.builders.single import top_candidates
from exitlaw.engine.decode.reductions import first_argmax
from exitlaw.engine.decode.sampling_settings import filter_logits
from exitlaw.engine.decode.sampling_settings import keep_mask as torch_keep
from exitlaw.theory import DistributionError, SamplingSettings, process_logits, process_rows_exact
from exitlaw.theory.sampling_settings import HF_ORDER, MIN_TEMPERATURE, VLLM_ORDER
from exitlaw.theory.sampling_settings import keep_mask as numpy_keep

NAN, INF = float("nan"), float("inf")


# ------------------------------------------------------------------ first_argmax
_ROWS = [
    ([1.0, NAN, NAN, 5.0], 1),  # a NaN is the maximum, the first one wins
    ([NAN, INF], 0),
    ([INF, NAN], 1),
    ([-INF, -INF, -INF], 0),  # all equal: the first
    ([2.0, 7.0, 7.0, 7.0], 1),
    ([0.0, -0.0], 0),  # -0.0 == 0.0: a tie, the first
    ([3.0], 0),
    ([-1.0, INF, INF], 1),
]
_CASES = [
    (row, want, dtype)
    for row, want in _ROWS
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.int64)
    if dtype != torch.int64 or all(math.isfinite(x) for x in row)  # no NaN or inf in an int row
]


@pytest.mark.parametrize("row, want, dtype", _CASES)
def test_first_argmax_rules_on_every_dtype(row, want, dtype):
    x = torch.tensor([row, row[::-1]], dtype=torch.float64).to(dtype)
    got = first_argmax(x)
    assert got.dtype == torch.int64 and got.device == x.device and got.shape == (2,)
    assert int(got[0]) == want
    assert torch.equal(got, x.argmax(-1))


def test_first_argmax_on_empty_inputs_does_what_torch_does():
    assert first_argmax(torch.empty(0, 4)).shape == (0,)
    assert first_argmax(torch.empty(0, 4)).dtype == torch.int64
    for dtype in (torch.float32, torch.float64):
        with pytest.raises(IndexError):  # torch's own error for an empty reduction
            first_argmax(torch.empty(2, 0, dtype=dtype))
        with pytest.raises(IndexError):
            torch.empty(2, 0, dtype=dtype).argmax(-1)


def test_first_argmax_of_a_one_dimensional_row_is_a_zero_dimensional_index():
    x = torch.tensor([0.5, 2.0, 2.0])
    got = first_argmax(x)
    assert got.shape == () and int(got) == 1 and got.dtype == torch.int64


def test_first_argmax_of_a_scalar_is_torch_argmax():
    assert int(first_argmax(torch.tensor(3.0))) == int(torch.tensor(3.0).argmax(-1)) == 0


# ------------------------------------------------------------------ top_candidates
def _both_paths(x: torch.Tensor, m: int):
    """The numpy path (float32 on the CPU, NaN-free) and the torch path (bfloat16 holds these
    small integers exactly)."""
    return top_candidates(x, m), top_candidates(x.to(torch.bfloat16), m)


@pytest.mark.parametrize("m", [1, 4, 5])  # 1, V - 1 and V
def test_top_candidates_at_every_width_edge_agree_between_paths(m):
    x = torch.tensor([[3.0, -INF, 7.0, 1.0, 5.0], [0.0, 0.0, -1.0, 2.0, -INF]])
    (hv, ht), (dv, dt) = _both_paths(x, m)
    assert hv.shape == ht.shape == (2, m) and hv.dtype == np.float64 and ht.dtype == np.int64
    want = np.sort(x.numpy().astype(np.float64), axis=-1)[:, ::-1][:, :m]
    assert np.array_equal(hv, want) and np.array_equal(dv, want)
    rows = x.numpy()
    for v, t in ((hv, ht), (dv, dt)):
        assert np.array_equal(np.take_along_axis(rows, t, -1).astype(np.float64), v)
        assert all(len(set(r)) == m for r in t.tolist())  # each token once


def test_top_candidates_with_ties_across_the_mth_place_keep_values_and_legal_tokens():
    x = torch.tensor([[1.0, 4.0, 4.0, 4.0, 0.0]])
    for v, t in _both_paths(x, 2):
        assert v.tolist() == [[4.0, 4.0]] and set(t[0]) <= {1, 2, 3} and len(set(t[0])) == 2


def test_top_candidates_put_a_nan_first_on_every_path():
    x = torch.tensor([[1.0, NAN, 3.0, 2.0]])
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        v, t = top_candidates(x.to(dtype), 2)
        assert math.isnan(v[0, 0]) and t[0, 0] == 1 and v[0, 1] == 3.0 and t[0, 1] == 2


def test_top_candidates_with_m_zero_is_empty_on_both_paths():
    x = torch.tensor([[1.0, 2.0, 3.0]])
    for v, t in _both_paths(x, 0):
        assert v.shape == t.shape == (1, 0)


def test_top_candidates_with_m_above_the_vocabulary_is_refused_on_both_paths():
    x = torch.tensor([[1.0, 2.0, 3.0]])
    for dtype in (torch.float32, torch.bfloat16):
        with pytest.raises((ValueError, RuntimeError, DistributionError)):
            top_candidates(x.to(dtype), 4)


# ------------------------------------------------------------------ builders' value checks
@pytest.mark.parametrize("build", ["ddtree", "chain"])
def test_an_entry_at_logprob_atol_is_accepted_and_just_above_is_refused(build):
    from exitlaw.engine.builders.single import LOGPROB_ATOL

    def run(top):
        rows = torch.log_softmax(torch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]]), -1).double()
        rows[1, 2] = top
        if build == "ddtree":
            return build_ddtree(rows, 3, 0)
        return build_chain(rows, 0)

    run(0.0)
    run(LOGPROB_ATOL)  # log_softmax may round a little above 0: at the tolerance, accepted
    with pytest.raises(DistributionError, match="log-probabilities"):
        run(np.nextafter(LOGPROB_ATOL, 1.0))
    with pytest.raises(DistributionError, match="log-probabilities"):
        run(0.5)


def test_rows_without_a_finite_entry_end_the_chain_and_the_tree_there():
    rows = torch.tensor([[-0.1, -2.5, -INF], [-INF, -INF, -INF], [-0.2, -1.0, -3.0]])
    tree, logq = build_chain(rows, 9)
    assert tree.num_nodes == 2 and tree.token.tolist() == [9, 0]
    assert logq.tolist() == [0.0, pytest.approx(-0.1, abs=1e-7)]
    tree, logq = build_ddtree(rows, 5, 9)  # only two prefixes have a finite score
    assert tree.num_nodes == 3 and sorted(tree.token.tolist()[1:]) == [0, 1]
    assert np.isfinite(logq).all()
    first = torch.full((2, 3), -INF)
    tree, logq = build_chain(first, 4)  # the first row has none: the root alone
    assert tree.num_nodes == 1 and logq.tolist() == [0.0]
    assert build_ddtree(first, 5, 4)[0].num_nodes == 1


@pytest.mark.parametrize("budget, nodes", [(1, 2), (2, 3), (6, 7), (7, 7)])
def test_ddtree_budget_edges_give_that_many_nodes_up_to_the_finite_prefixes(budget, nodes):
    """Two rows of three tokens: 3 + 9 = 12 prefixes, of which the -inf entries leave 6 finite."""
    rows = torch.log(torch.tensor([[0.5, 0.5, 0.0], [0.6, 0.4, 0.0]]))
    tree, logq = build_ddtree(rows, budget, 0)
    assert tree.num_nodes == min(nodes, 7) and np.isfinite(logq).all()


def test_ddtree_budget_zero_is_the_root_alone_and_a_negative_budget_or_root_is_refused():
    rows = torch.log_softmax(torch.zeros(2, 3), -1)
    tree, logq = build_ddtree(rows, 0, 5)
    assert tree.num_nodes == 1 and tree.token.tolist() == [5] and logq.tolist() == [0.0]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="budget"):
            build_ddtree(rows, bad, 0)
    build_ddtree(rows, 2, -1)
    with pytest.raises(DistributionError, match="root_token"):
        build_ddtree(rows, 2, -2)


# ------------------------------------------------------------------ filter thresholds at their edges
def _kept(weights, settings) -> dict[str, list[int]]:
    """The kept tokens by the numpy mask, the torch mask, the Fraction reference and filter_logits."""
    w = np.array(weights, dtype=np.float64)
    exact = process_rows_exact([[Fraction(x) for x in weights]], settings)[0]
    logits = torch.log(torch.tensor(w)) * settings.temperature
    out = {
        "numpy": np.flatnonzero(numpy_keep(w, settings)).tolist(),
        "torch": torch.nonzero(torch_keep(torch.tensor(w), settings)).flatten().tolist(),
        "exact": [i for i, p in enumerate(exact) if p > 0],
        "logits": torch.nonzero(torch.isfinite(filter_logits(logits, settings))).flatten().tolist(),
    }
    return out


def _all_keep(weights, settings, want, boundary=False):
    """``boundary``: a mass or weight sits exactly on the bar; the logits path (weights recomputed as
    ``exp(z - max z)``, rounded) is left out there, where rounding decides."""
    got = _kept(weights, settings)
    if boundary:
        del got["logits"]
    assert all(v == want for v in got.values()), (settings, got)


@pytest.mark.parametrize(
    "k, want",
    [
        (1, [0]),
        (2, [0, 1, 2]),
        (3, [0, 1, 2]),
        (4, [0, 1, 2, 3]),
        (5, [0, 1, 2, 3]),
        (50, [0, 1, 2, 3]),
    ],
)
def test_top_k_keeps_every_tie_at_the_kth_place_and_k_at_or_above_the_live_count_keeps_all(k, want):
    _all_keep([4, 2, 2, 1, 0], SamplingSettings(1.0, top_k=k), want)


@pytest.mark.parametrize(
    "top_p, want, boundary",
    [
        (0.25, [0], False),
        (0.5, [0], True),
        (np.nextafter(0.5, 1.0), [0, 1], False),
        (0.75, [0, 1], True),
        (np.nextafter(0.75, 1.0), [0, 1, 2, 3], False),  # the two 1s are tied: both kept
        (1.0, [0, 1, 2, 3], False),
    ],
)
def test_top_p_keeps_a_token_iff_the_mass_strictly_above_it_is_below_the_bar(top_p, want, boundary):
    """Weights 4, 2, 1, 1 (sum 8, every mass exact in binary): the mass strictly above each value is
    0, 4, 6, 6; at top-p 0.5 and 0.75 the mass above the next token equals the bar and it is not kept;
    just above, it is (with every token tied with it)."""
    _all_keep([4, 2, 1, 1], SamplingSettings(1.0, top_p=top_p), want, boundary)


def test_top_p_keeps_every_token_tied_with_its_smallest_member():
    _all_keep([3, 3, 3, 1], SamplingSettings(1.0, top_p=0.1), [0, 1, 2])


@pytest.mark.parametrize(
    "min_p, want, boundary",
    [
        (0.25, [0, 1, 2, 3], True),
        (np.nextafter(0.25, 1.0), [0, 1, 2], False),
        (0.5, [0, 1, 2], True),
        (np.nextafter(0.5, 1.0), [0, 1], False),
        (0.75, [0, 1], True),
        (0.76, [0], False),
    ],
)
def test_min_p_keeps_a_token_iff_it_is_at_least_min_p_times_the_maximum(min_p, want, boundary):
    """Weights 4, 3, 2, 1: at min-p 0.25, 0.5 and 0.75 a weight equals ``m max`` exactly and is kept."""
    _all_keep([4, 3, 2, 1], SamplingSettings(1.0, min_p=min_p), want, boundary)


def test_the_two_orders_differ_exactly_where_top_p_sits_against_min_p():
    """Weights 5, 4, 1: min-p 0.25 removes the 1. vLLM (min-p first) runs top-p 0.55 on 5, 4 (bar 4.95:
    the 4 has 5 above it) and keeps the 5 alone; HF (top-p first) runs it on 5, 4, 1 (bar 5.5) and keeps
    5 and 4."""
    w = [5, 4, 1]
    _all_keep(w, SamplingSettings(1.0, top_p=0.55, min_p=0.25, order=VLLM_ORDER), [0])
    _all_keep(w, SamplingSettings(1.0, top_p=0.55, min_p=0.25, order=HF_ORDER), [0, 1])
    # top-k and min-p commute: the same in both orders
    for order in (VLLM_ORDER, HF_ORDER):
        _all_keep([5, 4, 2, 1], SamplingSettings(1.0, top_k=3, min_p=0.3, order=order), [0, 1, 2])


def test_a_filter_never_revives_a_zero_weight():
    _all_keep([4, 0, 0, 0], SamplingSettings(1.0, top_k=3), [0])
    _all_keep([0, 2, 0, 1], SamplingSettings(1.0, top_p=1.0, min_p=0.0, top_k=4), [1, 3])


# ------------------------------------------------------------------ setting ranges, just in and just out
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(top_k=1),
        dict(top_k=np.int64(2)),
        dict(top_p=1.0),
        dict(top_p=5e-324),
        dict(min_p=0.0),
        dict(min_p=np.nextafter(1.0, 0.0)),
        dict(temperature=0.0),
        dict(temperature=MIN_TEMPERATURE),
        dict(temperature=1e300),
    ],
)
def test_settings_just_inside_their_ranges_are_accepted(kwargs):
    s = SamplingSettings(**{"temperature": 1.0, **kwargs})
    for k, v in kwargs.items():
        assert getattr(s, k) == v


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(top_k=0), "top_k"),
        (dict(top_k=True), "top_k"),
        (dict(top_k=2.0), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=np.nextafter(1.0, 2.0)), "top_p"),
        (dict(top_p=NAN), "top_p"),
        (dict(min_p=1.0), "min_p"),
        (dict(min_p=-1e-300), "min_p"),
        (dict(min_p=NAN), "min_p"),
        (dict(temperature=np.nextafter(MIN_TEMPERATURE, 0.0)), "floor"),
        (dict(temperature=-1e-300), "temperature"),
        (dict(temperature=INF), "temperature"),
        (dict(temperature=NAN), "temperature"),
        (dict(order=("top_k", "top_p")), "order"),
        (dict(order=("top_k", "top_p", "top_p")), "order"),
        (dict(order="top_k"), "order"),
    ],
)
def test_settings_just_outside_their_ranges_are_refused_by_name(kwargs, word):
    with pytest.raises(DistributionError, match=word):
        SamplingSettings(**{"temperature": 1.0, **kwargs})


def test_a_filter_at_its_off_value_is_not_active_and_just_past_it_is():
    assert SamplingSettings(1.0, top_p=1.0, min_p=0.0).active() == ()
    assert not SamplingSettings(1.0, top_p=1.0, min_p=0.0).filtered
    assert SamplingSettings(1.0, top_p=np.nextafter(1.0, 0.0)).active() == ("top_p",)
    assert SamplingSettings(1.0, min_p=5e-324).active() == ("min_p",)
    assert SamplingSettings(1.0, top_k=1, top_p=0.5, min_p=0.1).active() == VLLM_ORDER
    s = SamplingSettings(1.0, top_k=1, top_p=0.5, min_p=0.1, order=HF_ORDER)
    assert s.active() == HF_ORDER
    assert SamplingSettings.from_record(s.as_dict()) == s


def test_greedy_and_unfiltered_settings_leave_the_logits_untouched_and_a_filter_does_not():
    z = torch.tensor([[1.0, 2.0, 3.0]])
    assert filter_logits(z, SamplingSettings(0.0, top_k=1)) is z
    assert filter_logits(z, SamplingSettings(1.0, top_p=1.0)) is z
    out = filter_logits(z, SamplingSettings(1.0, top_k=2))
    assert out is not z and out.tolist() == [[-INF, 2.0, 3.0]] and z.tolist() == [[1.0, 2.0, 3.0]]


@pytest.mark.parametrize(
    "settings",
    [
        SamplingSettings(1.0, top_p=0.5),
        SamplingSettings(1.0, min_p=0.3),
        SamplingSettings(0.5, top_p=0.9, min_p=0.01),
        SamplingSettings(1.0, top_k=2, top_p=0.8),
    ],
    ids=lambda s: str(s.active()),
)
@pytest.mark.parametrize("shift", [-600.0, 0.0, 600.0])
def test_filters_are_shift_invariant_even_where_exp_of_a_logit_overflows(settings, shift):
    """The weights are exp((z - max z) / T): adding a constant to every logit changes nothing, also at
    logits whose exp overflows float64 (exp(600 / 0.5) is inf); the numpy definition agrees."""
    z = torch.tensor([[3.0, 2.0, 0.5, -1.0, -8.0]], dtype=torch.float64)
    want = torch.isfinite(filter_logits(z, settings))
    got = torch.isfinite(filter_logits(z + shift, settings))
    assert torch.equal(got, want), (shift, got, want)
    probs = process_logits((z + shift).numpy(), settings)
    assert np.array_equal(probs > 0, want.numpy())
