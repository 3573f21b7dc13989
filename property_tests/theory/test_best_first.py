"""The one best-first rule (exitlaw.theory.best_first) equals its enumerated twin, ties and shortage included."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import exitlaw.theory.best_first as best_first_module
from exitlaw.theory import (
    DistributionError,
    RankingError,
    TreeError,
    ddtree_from_rows,
    ddtree_prefixes,
    oracle_tree,
    ranked_top_k,
    top_prefixes,
)
from helpers.best_first_twin import (
    SHORTAGE_CASES,
    TIE_CASES,
    brute_force_ddtree,
    enumerate_prefixes,
    first_of_order,
    ordered_paths,
    tied_rows,
)


def _log(q: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(q)


def assert_ddtree_matches_brute_force(q: np.ndarray, budget: int) -> None:
    """Node order, scores and own log-probabilities of ``ddtree_from_rows`` equal the enumerated order."""
    logq = _log(q)
    bf = ddtree_from_rows(logq, budget, root_token=-1)
    ref = brute_force_ddtree(logq, budget)
    assert ordered_paths(bf.tree) == [p for _, p in ref], (
        f"chosen {ordered_paths(bf.tree)}, expected {ref}"
    )
    assert bf.score.tolist() == [0.0] + [s for s, _ in ref]
    t = bf.tree
    assert bf.value.tolist() == [0.0] + [
        float(logq[t.depth[v] - 1, t.token[v]]) for v in range(1, t.num_nodes)
    ]


@given(q=tied_rows(), data=st.data())
def test_ddtree_is_the_first_budget_prefixes_of_the_stated_order(q, data):
    total = sum(q.shape[1] ** d for d in range(1, q.shape[0] + 1))
    budget = data.draw(st.integers(0, total + 3))
    assert_ddtree_matches_brute_force(q, budget)


@pytest.mark.parametrize("q, budget", TIE_CASES + SHORTAGE_CASES)
def test_constructed_ties_and_shortages_match_the_twin(q, budget):
    assert_ddtree_matches_brute_force(q, budget)


def test_ties_go_to_the_shallower_prefix_then_the_better_ranked_token():
    bf = ddtree_from_rows(_log(np.array([[0.5, 0.5], [1.0, 0.0]])), 3)
    assert ordered_paths(bf.tree) == [(0,), (1,), (0, 0)]
    bf = ddtree_from_rows(_log(np.array([[0.5, 0.5], [0.5, 0.5]])), 6)
    assert ordered_paths(bf.tree) == [
        (0,),
        (1,),
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]  # equal values: lower token
    # log(1/4) + log(3/4) == log(3/4) + log(1/4): where (1,1) and (0,0) first differ, token 1 has the higher value
    bf = ddtree_from_rows(_log(np.array([[0.25, 0.75], [0.75, 0.25]])), 4)
    assert ordered_paths(bf.tree) == [(1,), (1, 0), (0,), (1, 1)]


def test_shortage_returns_the_full_smaller_tree():
    bf = ddtree_from_rows(_log(np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])), 10)
    assert ordered_paths(bf.tree) == [(0,), (1,), (0, 1), (1, 1)]
    assert ddtree_from_rows(_log(np.array([[0.5, 0.5]])), 0).tree.num_nodes == 1


@pytest.mark.parametrize(
    "planted",
    [
        lambda s, r: (-s, -len(r), r),  # ties to the deeper prefix
        lambda s, r: (-s, len(r), tuple(-i for i in r)),  # ties to the worse-ranked token
    ],
    ids=["deeper_first", "worse_rank_first"],
)
def test_a_planted_swapped_tie_rule_fails_the_comparison(planted, monkeypatch):
    monkeypatch.setattr(best_first_module, "_order_key", planted)
    failures = 0
    for q, budget in TIE_CASES:
        try:
            assert_ddtree_matches_brute_force(q, budget)
        except AssertionError:
            failures += 1
    assert failures > 0, "the twin comparison did not notice a swapped tie rule"


def _grid_row(seed: int, vocab: int, path: tuple[int, ...]) -> np.ndarray:
    """A per-prefix row on a coarse grid (so scores tie), zeros allowed."""
    c = (
        np.random.default_rng([seed, len(path), *path])
        .integers(0, 3, size=vocab)
        .astype(np.float64)
    )
    c[(len(path) + sum(path)) % vocab] += 1  # never all zero
    return c / c.sum()


@given(
    seed=st.integers(0, 10_000),
    vocab=st.integers(1, 3),
    horizon=st.integers(1, 3),
    budget=st.integers(0, 45),
    multiplicative=st.booleans(),
)
def test_best_first_on_a_per_prefix_score_equals_the_twin(
    seed, vocab, horizon, budget, multiplicative
):
    """The generic rule on a score that does not factorise (one row per prefix), additive or multiplicative."""
    combine, root = (operator.mul, 1.0) if multiplicative else (operator.add, 0.0)

    def row(path):
        if len(path) >= horizon:
            return None
        r = _grid_row(seed, vocab, path)
        return r if multiplicative else _log(r)

    def children(path):
        r = row(path)
        if r is None:
            return (), ()
        vals, toks = ranked_top_k(r[None, :], vocab)
        return toks[0].tolist(), vals[0].tolist()

    bf = top_prefixes(children, budget, combine=combine, root_score=root)
    ref = first_of_order(enumerate_prefixes(row, combine=combine, root_score=root), budget)
    assert ordered_paths(bf.tree) == [p for _, p in ref]
    assert bf.score.tolist() == [root] + [s for s, _ in ref]


@given(seed=st.integers(0, 10_000), vocab=st.integers(1, 3), budget=st.integers(0, 5))
def test_oracle_tree_holds_the_first_budget_prefixes_by_target_probability(seed, vocab, budget):
    target = lambda path: _grid_row(seed, vocab, path)  # noqa: E731
    tree = oracle_tree(target, budget)
    # a top-B prefix is at most B deep; zero-probability prefixes are candidates (P = 0 is not -inf)
    ref = first_of_order(
        enumerate_prefixes(
            lambda p: target(p) if len(p) < budget else None, combine=operator.mul, root_score=1.0
        ),
        budget,
    )
    assert set(ordered_paths(tree)) == {p for _, p in ref}
    assert tree.budget == budget and list(tree.depth[1:]) == sorted(tree.depth[1:])  # breadth first


@given(q=tied_rows(max_vocab=6, max_depth=3), data=st.data())
def test_ranked_top_k_is_the_stable_full_sort_cut_at_k(q, data):
    logq = _log(q)
    k = data.draw(st.integers(1, q.shape[1]))
    vals, toks = ranked_top_k(logq, k)
    full = np.argsort(-logq, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(toks, full)
    np.testing.assert_array_equal(vals, np.take_along_axis(logq, full, axis=1))


def test_bad_inputs_raise_named_errors():
    with pytest.raises(RankingError, match="not ranked best first"):
        top_prefixes(lambda p: ([0, 1], [-2.0, -1.0]) if not p else ((), ()), 2)
    with pytest.raises(RankingError, match="not ranked best first"):
        top_prefixes(
            lambda p: ([1, 0], [-1.0, -1.0]) if not p else ((), ()), 2
        )  # tie to the higher token
    with pytest.raises(RankingError, match="tokens but"):
        top_prefixes(lambda p: ([0, 1], [-1.0]), 2)
    with pytest.raises(DistributionError, match="NaN"):
        top_prefixes(lambda p: ([0], [float("nan")]), 1)
    with pytest.raises(ValueError, match="budget must be >= 0"):
        ddtree_from_rows(np.zeros((1, 2)), -1)
    with pytest.raises(ValueError, match="budget must be >= 0"):
        ddtree_from_rows(np.zeros((1, 2)), 2.0)
    with pytest.raises(DistributionError, match="NaN"):
        ranked_top_k(np.array([[0.0, np.nan]]), 1)
    with pytest.raises(ValueError, match="k must lie"):
        ranked_top_k(np.zeros((1, 2)), 3)
    with pytest.raises(TreeError, match="same token"):
        ddtree_prefixes(np.array([[-1.0, -2.0]]), np.array([[1, 1]]), 2)
    with pytest.raises(DistributionError, match="integers"):
        ddtree_prefixes(np.zeros((1, 2)), np.zeros((1, 2)), 2)
    with pytest.raises(DistributionError, match=r"\[D, V\]"):
        ddtree_from_rows(np.zeros(3), 2)
