"""Tree builders (exitlaw.engine.builders): DDTree best-first and chain."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.engine.builders import _brute_force_top_prefixes, build_chain, build_ddtree
from exitlaw.theory import DistributionError


def _draft_rows(seed: int, depth: int, vocab: int, *, zero_frac: float = 0.0) -> torch.Tensor:
    """Per-depth log-probability rows (continuous, so score ties have probability zero)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2.0, size=(depth, vocab))
    dead = rng.random(z.shape) < zero_frac
    dead[:, 0] = False
    z[dead] = -np.inf
    return torch.log_softmax(torch.tensor(z), dim=-1)


def _scores(tree, rows: np.ndarray) -> np.ndarray:
    return np.array([sum(rows[d, y] for d, y in enumerate(tree.path(v))) for v in range(1, tree.num_nodes)])


@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 4), vocab=st.integers(1, 5),
       budget=st.integers(0, 40), zero_frac=st.sampled_from([0.0, 0.3]))
def test_ddtree_equals_brute_force_top_budget_prefixes(seed, depth, vocab, budget, zero_frac):
    rows = _draft_rows(seed, depth, vocab, zero_frac=zero_frac)
    tree, logq = build_ddtree(rows, budget, root_token=7)
    ref = _brute_force_top_prefixes(rows.numpy(), budget)
    assert {tree.path(v) for v in range(1, tree.num_nodes)} == {p for _, p in ref}
    assert tree.budget == len(ref) and int(tree.token[0]) == 7
    # per-node draft log-probability is the row entry of the node's own depth
    r = rows.numpy()
    np.testing.assert_allclose(logq[1:], [r[tree.depth[v] - 1, tree.token[v]] for v in range(1, tree.num_nodes)])
    assert logq[0] == 0.0


@given(seed=st.integers(0, 2**32 - 1), budget=st.integers(1, 64))
def test_ddtree_pops_in_non_increasing_score_order_parents_first(seed, budget):
    rows = _draft_rows(seed, 6, 50)
    tree, _ = build_ddtree(rows, budget, root_token=0)
    s = _scores(tree, rows.numpy())
    assert np.all(np.diff(s) <= 1e-12)
    assert np.all(tree.parent[1:] < np.arange(1, tree.num_nodes))  # topological (DraftTree also checks)
    assert tree.budget == budget


def test_ddtree_with_budget_above_vocab_and_depth_keeps_going_deep():
    """Top-k per depth uses k = min(B, V); with B > V the tree still holds B nodes spread over depths."""
    rows = _draft_rows(0, 8, 3)
    tree, _ = build_ddtree(rows, 30, root_token=0)
    ref = _brute_force_top_prefixes(rows.numpy(), 30)
    assert {tree.path(v) for v in range(1, tree.num_nodes)} == {p for _, p in ref}


@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 6), vocab=st.integers(1, 20))
def test_chain_is_the_argmax_per_depth(seed, depth, vocab):
    rows = _draft_rows(seed, depth, vocab)
    tree, logq = build_chain(rows, root_token=3)
    assert tree.path(tree.num_nodes - 1) == tuple(rows.argmax(-1).tolist())
    np.testing.assert_allclose(logq[1:], rows.max(-1).values.numpy())


def test_builders_reject_bad_rows():
    with pytest.raises(DistributionError, match="shape"):
        build_ddtree(torch.zeros(3), 4, 0)
    with pytest.raises(DistributionError, match="log-probabilities"):
        build_ddtree(torch.ones(2, 3), 4, 0)
    with pytest.raises(DistributionError, match="NaN"):
        build_chain(torch.full((2, 3), float("nan")), 0)
    with pytest.raises(ValueError, match="budget"):
        build_ddtree(torch.zeros(2, 3) - 1, -1, 0)
