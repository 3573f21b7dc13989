"""Builders: prefix-closed trees of exactly the budget; DDTree = top-B factorised prefixes;
the oracle bounds every builder; CaDDTree's greedy stop is optimal on convex costs only."""

import itertools

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from exitlaw.simulate.builders.caddtree import (
    LatencyModel,
    caddtree,
    first_decrease,
    first_decrease_misses,
    throughput_curve,
)
from exitlaw.simulate.builders.trees import (
    chain,
    ddtree,
    ddtree_order,
    eagle_dynamic,
    oracle,
    static_tree,
    tsubame,
)
from exitlaw.simulate.lab.models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter
from exitlaw.theory import DraftTree, coverage_under


@st.composite
def marginals(draw, *, max_vocab=5, max_horizon=4):
    V = draw(st.integers(2, max_vocab))
    H = draw(st.integers(1, max_horizon))
    seed = draw(st.integers(0, 2**32 - 1))
    conc = draw(st.sampled_from([0.2, 1.0, 5.0]))
    q = np.random.default_rng(seed).dirichlet(np.full(V, conc), size=H)
    q = np.maximum(q, 1e-300)  # keep every token reachable
    return q / q.sum(1, keepdims=True)


def _check_shape(tree: DraftTree, budget: int, vocab: int, horizon: int) -> None:
    # DraftTree's constructor already rejects non-prefix-closed trees and equal siblings
    assert tree.budget == budget
    tree.check_vocab(vocab)
    assert tree.num_nodes == 1 or tree.max_depth <= horizon
    for v in range(tree.num_nodes):
        toks = tree.token[tree.children[v]]
        assert len(set(toks.tolist())) == toks.size


def _all_prefix_scores(q):
    H, V = q.shape
    out = {}
    for d in range(1, H + 1):
        for path in itertools.product(range(V), repeat=d):
            out[path] = float(sum(np.log(q[i, t]) for i, t in enumerate(path)))
    return out


@given(q=marginals(), data=st.data())
def test_ddtree_is_the_top_budget_prefixes_of_the_factorised_draft_score(q, data):
    scores = _all_prefix_scores(q)
    B = data.draw(st.integers(0, len(scores)))
    built = ddtree(q, B)
    _check_shape(built.tree, B, q.shape[1], q.shape[0])
    chosen = sorted(
        (scores[built.tree.path(v)] for v in range(1, built.tree.num_nodes)), reverse=True
    )
    best = sorted(scores.values(), reverse=True)[:B]
    note(f"chosen {chosen}\nbest {best}")
    np.testing.assert_allclose(chosen, best, rtol=0, atol=1e-9)
    # draft_logprob holds log q_depth(u)(x_u)
    t = built.tree
    np.testing.assert_allclose(built.draft_logprob[1:], np.log(q[t.depth[1:] - 1, t.token[1:]]))


@given(q=marginals(), data=st.data())
def test_ddtree_pop_order_prefixes_are_the_smaller_budget_ddtrees(q, data):
    total = sum(q.shape[1] ** d for d in range(1, q.shape[0] + 1))
    B = data.draw(st.integers(1, total))
    tree, lp, score = ddtree_order(q, B)
    assert np.all(np.diff(score[1:]) <= 1e-12)  # pops come out in non-increasing score
    n = data.draw(st.integers(0, B))
    small = ddtree(q, n).tree
    np.testing.assert_array_equal(small.parent, tree.parent[: n + 1])
    np.testing.assert_array_equal(small.token, tree.token[: n + 1])


@given(q=marginals(max_vocab=4, max_horizon=5), data=st.data())
def test_chain_static_and_tsubame_return_prefix_closed_trees_of_exactly_the_budget(q, data):
    H, V = q.shape
    c = chain(q, data.draw(st.integers(0, H)))
    _check_shape(c.tree, c.tree.budget, V, H)
    assert c.tree.num_nodes == 1 or c.tree.max_depth == c.tree.budget
    branching = data.draw(st.lists(st.integers(1, V), min_size=1, max_size=H))
    full = sum(int(np.prod(branching[: k + 1])) for k in range(len(branching)))
    B = data.draw(st.integers(0, full))
    _check_shape(static_tree(q, B, branching).tree, B, V, H)
    total = sum(V**d for d in range(1, H + 1))
    B = data.draw(st.integers(0, total))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    ts = tsubame(q, B, rng)
    _check_shape(ts.tree, B, V, H)
    np.testing.assert_array_equal(
        ts.tree.parent, ddtree(q, B).tree.parent
    )  # pass 1 topology is kept


def test_tsubame_second_pass_samples_tokens_from_the_draft_rows():
    q = np.array([[0.7, 0.2, 0.1]])
    rng = np.random.default_rng(0)
    first = np.array([tsubame(q, 1, rng).tree.token[1] for _ in range(4000)])
    freq = np.bincount(first, minlength=3) / first.size
    # a single child is one draw from q_1: within 5 s.e. of q
    assert np.all(np.abs(freq - q[0]) < 5 * np.sqrt(q[0] * (1 - q[0]) / first.size))


@given(
    seed=st.integers(0, 10_000),
    B=st.integers(1, 30),
    noise=st.sampled_from([0.0, 0.5, 2.0]),
    order=st.integers(2, 3),
)
def test_oracle_coverage_bounds_every_builder(seed, B, noise, order):
    target = NGramTarget(6, order=order, zipf=1.0, seed=seed)
    pos = PositionWiseDrafter(target, noise=noise, seed=seed + 1)
    ar = AutoregressiveDrafter(target, noise=noise, seed=seed + 2)
    ctx = (seed % 6, (seed // 6) % 6)
    H = 4
    q = pos.marginals(ctx, H)
    ptarget = target.prefix_target(ctx)
    best = oracle(target, ctx, B)
    _check_shape(best.tree, B, 6, B)
    c_star = coverage_under(ptarget, best.tree)
    lat = LatencyModel(draft=1.0, base=5.0, linear=0.1, quadratic=0.01)
    trees = {
        "ddtree": ddtree(q, B).tree,
        "chain": chain(q, min(B, H)).tree,
        "static": static_tree(q, B, (3, 3, 3, 2)).tree,
        "eagle": eagle_dynamic(ar, ctx, B, depth=4, top_k=4).tree,
        "tsubame": tsubame(q, B, np.random.default_rng(seed)).tree,
        "caddtree": caddtree(q, lat, max_budget=B)[0].tree,
    }
    for name, tree in trees.items():
        if name != "chain" and name != "caddtree":
            _check_shape(tree, B, 6, H)
        n_star = coverage_under(ptarget, oracle(target, ctx, tree.budget).tree)
        cov = coverage_under(ptarget, tree)
        note(f"{name}: C_p={cov} oracle={n_star}")
        assert cov <= n_star + 1e-12
    assert coverage_under(ptarget, trees["ddtree"]) <= c_star + 1e-12


def test_eagle_keeps_the_top_budget_candidates_by_cumulative_draft_score():
    target = NGramTarget(8, order=2, zipf=1.0, seed=1)
    ar = AutoregressiveDrafter(target, noise=0.8, seed=5)
    built = eagle_dynamic(ar, (3,), 12, depth=3, top_k=3)
    t = built.tree
    _check_shape(t, 12, 8, 3)
    score = np.zeros(t.num_nodes)
    for v in range(1, t.num_nodes):
        score[v] = score[t.parent[v]] + built.draft_logprob[v]
        assert built.draft_logprob[v] == pytest.approx(
            np.log(ar.probs((3,) + t.path(t.parent[v]))[t.token[v]])
        )
    # every kept node scores at least as well as every expanded candidate that was dropped
    kept = {t.path(v) for v in range(1, t.num_nodes)}
    frontier, dropped = [((), 0.0)], []
    for _ in range(3):
        layer = []
        for path, s in frontier:
            row = np.log(ar.probs((3,) + path))
            for tok in np.argsort(-row, kind="stable")[:3]:
                child = (path + (int(tok),), s + row[tok])
                layer.append(child)
                if child[0] not in kept:
                    dropped.append(child[1])
        layer.sort(key=lambda c: -c[1])
        frontier = layer[:3]
    assert min(score[1:]) >= max(dropped) - 1e-12


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 200),
    draft=st.floats(0.01, 10),
    base=st.floats(0.01, 50),
    linear=st.floats(0, 2),
    quadratic=st.floats(0, 0.1),
)
def test_caddtree_first_decrease_is_the_global_maximum_under_convex_verify_cost(
    seed, n, draft, base, linear, quadratic
):
    rng = np.random.default_rng(seed)
    scores = np.concatenate([[0.0], np.sort(np.log(rng.uniform(1e-6, 1.0, size=n)))[::-1]])
    lat = LatencyModel(draft=draft, base=base, linear=linear, quadratic=quadratic)
    assert lat.convex
    curve = throughput_curve(scores, lat)
    note(f"stop {first_decrease(curve)} argmax {int(np.argmax(curve))}")
    assert not first_decrease_misses(curve, rtol=1e-12)


def test_caddtree_first_decrease_fails_under_a_tiled_non_convex_cost():
    # 40 equally likely pops; a verify cost that jumps every 16 tokens (GPU tiles)
    scores = np.concatenate([[0.0], np.log(np.linspace(0.9, 0.5, 40))])
    lat = LatencyModel(draft=1.0, base=10.0, linear=0.0, quadratic=0.0, tile=16, tile_cost=6.0)
    assert not lat.convex
    curve = throughput_curve(scores, lat)
    stop, best = first_decrease(curve), int(np.argmax(curve))
    assert first_decrease_misses(curve)
    assert (
        stop == 15 and best == 31
    )  # stops at a full first tile (16 tokens), misses the full second tile
    assert curve[best] > 1.2 * curve[stop]


@given(q=marginals(max_vocab=4, max_horizon=4), data=st.data())
def test_caddtree_returns_the_ddtree_at_its_chosen_budget(q, data):
    total = sum(q.shape[1] ** d for d in range(1, q.shape[0] + 1))
    max_b = data.draw(st.integers(1, total))
    lat = LatencyModel(
        draft=data.draw(st.floats(0.1, 5)),
        base=5.0,
        linear=data.draw(st.floats(0, 1)),
        quadratic=data.draw(st.floats(0, 0.05)),
    )
    built, n = caddtree(q, lat, max_budget=max_b)
    assert 1 <= n <= max_b and built.tree.budget == n
    assert built.tree == ddtree(q, n).tree
    _, _, score = ddtree_order(q, max_b)
    curve = throughput_curve(score, lat)
    assert curve[n] >= curve.max() * (1 - 1e-12)


def test_builders_reject_impossible_budgets():
    q = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="horizon"):
        chain(q, 3)
    with pytest.raises(ValueError, match="fewer than budget"):
        static_tree(q, 5, (2,))
    with pytest.raises(ValueError, match="budget"):
        ddtree(q, -1)
    with pytest.raises(ValueError, match="tile"):
        LatencyModel(tile=0, tile_cost=1.0)
    with pytest.raises(ValueError, match="latency"):
        LatencyModel(draft=-1.0)


def test_ddtree_short_of_candidates_returns_every_possible_prefix():
    """The shortage rule: 3 + 9 prefixes within horizon 2 at budget 13, one impossible token at depth 1."""
    q = np.full((2, 3), 1 / 3)
    built = ddtree(q, 13)
    assert built.tree.budget == 12 and built.tree.max_depth == 2
    q0 = np.array([[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    tree = ddtree(q0, 20).tree
    assert tree.budget == 8
    assert {tree.path(v) for v in range(1, 9)} == {(a,) for a in (0, 1)} | {
        (a, b) for a in (0, 1) for b in range(3)
    }
    ts = tsubame(q0, 20, np.random.default_rng(0))
    assert ts.tree.budget == 8
    built, n = caddtree(
        q0, LatencyModel(draft=0.0, base=1.0, linear=0.0, quadratic=0.0), max_budget=20
    )
    assert n == 8 and built.tree.budget == 8  # free verification: the whole tree
    built, n = caddtree(q0, LatencyModel(), max_budget=20, min_budget=10)
    assert n == 8 and built.tree.budget == 8  # min_budget above the candidates: the whole tree


def test_builders_reject_rows_that_are_not_distributions():
    from exitlaw.theory import DistributionError

    with pytest.raises(DistributionError, match="draft marginals row 1"):
        ddtree(np.array([[0.5, 0.5], [0.7, 0.7]]), 2)
    with pytest.raises(DistributionError, match="negative"):
        chain(np.array([[1.5, -0.5]]), 1)
    with pytest.raises(ValueError, match=r"\[H, V\]"):
        ddtree(np.array([0.5, 0.5]), 1)
