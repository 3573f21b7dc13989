"""The oracle tree beats every prefix-closed tree of the same budget (enumerated)."""

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from exitlaw.theory import DraftTree, allocation_gap, coverage_under, oracle_tree


def make_target(seed: int, vocab: int):
    """A context-dependent target: every prefix gets its own row."""

    @lru_cache(maxsize=None)
    def target(prefix: tuple) -> np.ndarray:
        rng = np.random.default_rng([seed, len(prefix), *prefix])
        return rng.dirichlet(np.full(vocab, 0.5))

    return target


def all_prefix_closed_trees(vocab: int, budget: int):
    """Every prefix-closed set of ``budget`` non-empty token sequences (depth <= budget)."""

    def grow(chosen: frozenset, frontier_from: int):
        if len(chosen) == budget:
            yield chosen
            return
        candidates = sorted({p + (y,) for p in chosen | {()} for y in range(vocab)} - chosen)
        for i, c in enumerate(candidates):
            if i < frontier_from:
                continue
            yield from grow(chosen | {c}, 0)

    seen = set()
    for s in grow(frozenset(), 0):
        if s not in seen:
            seen.add(s)
            yield s


@given(seed=st.integers(0, 10_000), vocab=st.integers(2, 3), budget=st.integers(1, 4))
def test_oracle_tree_beats_every_prefix_closed_tree(seed, vocab, budget):
    target = make_target(seed, vocab)
    best = oracle_tree(target, budget)
    assert best.budget == budget
    c_star = coverage_under(target, best)
    count = 0
    for paths in all_prefix_closed_trees(vocab, budget):
        tree = DraftTree.from_paths(paths)
        c = coverage_under(target, tree)
        note(f"tree {sorted(paths)} coverage {c} vs oracle {c_star}")
        assert c <= c_star + 1e-12
        count += 1
    assert count > 0


def test_enumeration_counts_all_trees():
    # binary vocabulary, budget 2: {a}, {b} roots then: {0,1},{0,00},{0,01},{1,10},{1,11} -> 5 trees
    assert len(list(all_prefix_closed_trees(2, 2))) == 5


@given(seed=st.integers(0, 10_000), budget=st.integers(1, 12))
def test_allocation_gap_is_nonnegative_and_zero_for_oracle(seed, budget):
    target = make_target(seed, 4)
    best = oracle_tree(target, budget)
    assert abs(allocation_gap(target, best)) < 1e-12
    chain = DraftTree.chain([0] * budget)
    assert allocation_gap(target, chain) >= -1e-12


def test_oracle_prefers_shallower_on_ties():
    uniform = lambda prefix: np.array([0.5, 0.5])  # noqa: E731
    tree = oracle_tree(uniform, 3)
    # P: depth-1 nodes 0.5 each, depth-2 nodes 0.25: the two depth-1 nodes first, then one depth-2
    assert sorted(tree.depth[1:].tolist()) == [1, 1, 2]


def test_oracle_rejects_bad_target_rows():
    with pytest.raises(ValueError, match="sums to"):
        oracle_tree(lambda prefix: np.array([0.5, 0.6]), 2)
    with pytest.raises(ValueError, match="budget must be >= 0"):
        oracle_tree(lambda prefix: np.array([0.5, 0.5]), -1)
