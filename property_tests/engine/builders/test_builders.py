"""Tree builders (exitlaw.engine.builders.single): DDTree best-first and chain.

The engine's DDTree computes only the per-depth ``topk`` and hands it to the
numpy rule, so it must build the very tree the simulated builder does on the
same rows, ties and shortage included.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import exitlaw.engine.builders.single as single
from exitlaw.engine.builders.single import build_chain, build_ddtree
from exitlaw.simulate.builders.trees import ddtree
from exitlaw.theory import DistributionError
from helpers.best_first_twin import (
    SHORTAGE_CASES,
    TIE_CASES,
    brute_force_ddtree,
    ordered_paths,
    tied_rows,
)


def _draft_rows(seed: int, depth: int, vocab: int, *, zero_frac: float = 0.0) -> torch.Tensor:
    """Per-depth log-probability rows (continuous, so score ties have probability zero)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2.0, size=(depth, vocab))
    dead = rng.random(z.shape) < zero_frac
    dead[:, 0] = False
    z[dead] = -np.inf
    return torch.log_softmax(torch.tensor(z), dim=-1)


def _scores(tree, rows: np.ndarray) -> np.ndarray:
    return np.array(
        [sum(rows[d, y] for d, y in enumerate(tree.path(v))) for v in range(1, tree.num_nodes)]
    )


@given(
    seed=st.integers(0, 2**32 - 1),
    depth=st.integers(1, 4),
    vocab=st.integers(1, 5),
    budget=st.integers(0, 40),
    zero_frac=st.sampled_from([0.0, 0.3]),
)
def test_ddtree_equals_brute_force_top_budget_prefixes(seed, depth, vocab, budget, zero_frac):
    rows = _draft_rows(seed, depth, vocab, zero_frac=zero_frac)
    tree, logq = build_ddtree(rows, budget, root_token=7)
    ref = brute_force_ddtree(rows.numpy(), budget)
    assert ordered_paths(tree) == [p for _, p in ref]
    assert tree.budget == len(ref) and int(tree.token[0]) == 7
    # per-node draft log-probability is the row entry of the node's own depth
    r = rows.numpy()
    np.testing.assert_allclose(
        logq[1:], [r[tree.depth[v] - 1, tree.token[v]] for v in range(1, tree.num_nodes)]
    )
    assert logq[0] == 0.0


@given(seed=st.integers(0, 2**32 - 1), budget=st.integers(1, 64))
def test_ddtree_pops_in_non_increasing_score_order_parents_first(seed, budget):
    rows = _draft_rows(seed, 6, 50)
    tree, _ = build_ddtree(rows, budget, root_token=0)
    s = _scores(tree, rows.numpy())
    assert np.all(np.diff(s) <= 1e-12)
    assert np.all(
        tree.parent[1:] < np.arange(1, tree.num_nodes)
    )  # topological (DraftTree also checks)
    assert tree.budget == budget


def test_ddtree_with_budget_above_vocab_and_depth_keeps_going_deep():
    """Top-k per depth uses k = min(B, V); with B > V the tree still holds B nodes spread over depths."""
    rows = _draft_rows(0, 8, 3)
    tree, _ = build_ddtree(rows, 30, root_token=0)
    ref = brute_force_ddtree(rows.numpy(), 30)
    assert ordered_paths(tree) == [p for _, p in ref]


def _assert_engine_equals_simulate(q: np.ndarray, budget: int) -> None:
    """Both builders on the same rows: the simulated one takes ``q``, the engine ``log q`` as computed there."""
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    sim = ddtree(q, budget, root_token=5)
    tree, lp = build_ddtree(torch.from_numpy(logq), budget, root_token=5)
    np.testing.assert_array_equal(tree.parent, sim.tree.parent)
    np.testing.assert_array_equal(tree.token, sim.tree.token)
    np.testing.assert_array_equal(lp, sim.draft_logprob)


@given(q=tied_rows(max_vocab=5), data=st.data())
def test_engine_and_simulated_ddtree_build_identical_trees(q, data):
    total = sum(q.shape[1] ** d for d in range(1, q.shape[0] + 1))
    _assert_engine_equals_simulate(q, data.draw(st.integers(0, total + 3)))


@pytest.mark.parametrize("q, budget", TIE_CASES + SHORTAGE_CASES)
def test_engine_and_simulated_ddtree_agree_on_constructed_ties_and_shortages(q, budget):
    _assert_engine_equals_simulate(q, budget)


def _adversarial_topk(rows: torch.Tensor, k: int, dim: int = -1):
    """A legal ``topk``: the ``k`` largest values, but the highest token ids among tied values."""
    vals = rows.numpy()
    tok = np.arange(vals.shape[-1])
    idx = np.stack([np.lexsort((-tok, -row))[:k] for row in vals])
    return torch.from_numpy(np.take_along_axis(vals, idx, -1)), torch.from_numpy(idx)


def _adversarial_argpartition(a, kth, axis=-1):
    """A legal ``argpartition`` for the host selection (the last ``V - kth`` places hold the largest
    values), but the highest token ids among tied values at the cut."""
    tok = np.arange(a.shape[-1])
    return np.stack([np.lexsort((tok, row)) for row in a.reshape(-1, a.shape[-1])]).reshape(a.shape)


@pytest.mark.parametrize("selection", ["device topk", "host argpartition"])
def test_engine_ddtree_re_ranks_rows_tied_across_the_kth_place(monkeypatch, selection):
    """A selection free to pick any of the tied tokens at the cut must not change the tree: torch's
    ``topk`` (the path off a CPU) and numpy's ``argpartition`` (the CPU path) each played adversarially."""
    q = np.array([[0.1] * 10, [0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0]])
    logq = torch.from_numpy(np.log(np.where(q > 0, q, 1e-300)))
    if selection == "device topk":
        raw = _adversarial_topk(logq, 3)[1].numpy()
        monkeypatch.setattr(torch, "topk", _adversarial_topk)
        monkeypatch.setattr(single, "top_candidates", single.device_top_candidates)
    else:
        raw = _adversarial_argpartition(logq.numpy(), 7)[:, 7:]
        monkeypatch.setattr(np, "argpartition", _adversarial_argpartition)
    assert set(raw[0]) != {0, 1, 2}  # the adversary really picks other tied tokens
    for budget in (1, 2, 3, 5, 12):
        tree, _ = build_ddtree(logq, budget, root_token=0)
        ref = brute_force_ddtree(logq.numpy(), budget)
        assert ordered_paths(tree) == [p for _, p in ref], budget


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


def _batched(method, budget):
    from exitlaw.engine.builders.batched import build_trees_batch

    return lambda r: build_trees_batch(
        torch.stack([r.roll(1, 0), r]), method, budget, [0, 0], [True, True]
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda r: build_ddtree(r, 4, 0),
        lambda r: build_ddtree(r, 40, 0),
        lambda r: build_chain(r, 0),
        _batched("ddtree", 4),
        _batched("chain", 4),
    ],
    ids=["ddtree-topk", "ddtree-all", "chain", "batch-ddtree", "batch-chain"],
)
def test_one_bad_entry_anywhere_in_the_rows_is_refused(build):
    """The values check reads only each row's maximum as topk / max return it: a NaN below the
    maximum (of a row that is otherwise fine) and a positive entry off the first row must still be seen."""
    rows = torch.log_softmax(torch.randn(3, 16, generator=torch.Generator().manual_seed(0)), -1)
    low = int(rows[2].argmin())
    nan = rows.clone()
    nan[2, low] = float("nan")
    with pytest.raises(DistributionError, match="NaN"):
        build(nan)
    pos = rows.clone()
    pos[1, low] = 0.5
    with pytest.raises(DistributionError, match="log-probabilities"):
        build(pos)
    build(rows)  # the clean rows pass


@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(3, 7), (2, 4, 9), (1, 5)]),
    m=st.integers(1, 9),
    ties=st.booleans(),
)
def test_host_candidates_are_torch_topk_values_and_a_legal_token_choice(seed, shape, m, ties):
    """The CPU selection returns what ``topk`` returns, up to the order of equal values."""
    m = min(m, shape[-1])
    g = torch.Generator().manual_seed(seed)
    rows = torch.randn(shape, generator=g)
    if ties:
        rows = rows.round()  # many equal values, also across the m-th place
    rows[..., 0] = float("-inf")
    vals, toks = single.top_candidates(rows, m)
    want = torch.topk(rows, m, dim=-1).values.double().numpy()
    np.testing.assert_array_equal(vals, want)
    assert toks.dtype == np.int64 and vals.dtype == np.float64
    np.testing.assert_array_equal(np.take_along_axis(rows.double().numpy(), toks, -1), vals)
    for row in toks.reshape(-1, m):
        assert len(set(row.tolist())) == m  # distinct tokens


def test_a_nan_row_ranks_its_nan_first_on_either_path():
    rows = torch.tensor([[0.0, -1.0, float("nan"), -2.0], [-1.0, 0.0, -3.0, -2.0]])
    for select in (single.top_candidates, single.device_top_candidates):
        vals, _ = select(rows, 2)
        assert np.isnan(vals[0, 0]) and not np.isnan(vals[1]).any()
    with pytest.raises(DistributionError, match="NaN"):
        build_ddtree(rows, 3, 0)
