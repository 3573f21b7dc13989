"""ExitTrain in miniature: objective weights, loss, exact evaluation, and a tiny end-to-end run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.simulate.builders.trees import ddtree
from exitlaw.simulate.exittrain.mini import (
    OBJECTIVES,
    Regime,
    draft_logprobs,
    evaluate,
    format_table,
    init_params,
    loss_fn,
    run_exittrain_mini,
    stationary,
    tree_weights,
)
from exitlaw.simulate.exittrain.objectives import Objective, ObjectiveError
from exitlaw.simulate.lab.models import NGramTarget
from exitlaw.theory import coverage_under, reference_law_from_edges

TINY = Regime(
    "tiny",
    vocab=6,
    zipf=1.2,
    horizon=3,
    rank=2,
    train_budget=8,
    batch=4,
    pretrain_steps=3,
    steps=3,
    eval_budgets=(4, 8),
)


def _trees(seed: int, vocab: int = 6, budget: int = 8):
    rng = np.random.default_rng(seed)
    ctx = rng.integers(0, vocab, size=3)
    q = rng.dirichlet(np.ones(vocab), size=(3, 3))
    return [ddtree(q[i], budget).tree for i in range(3)], ctx


@given(seed=st.integers(0, 10_000))
def test_objective_weights_are_w_and_p_normalised_over_non_root_nodes(seed):
    target = NGramTarget(6, order=2, zipf=1.2, seed=seed % 7)
    m = target.transition_matrix()
    trees, ctx = _trees(seed)
    ws = {o: tree_weights(trees, ctx, m, o) for o in OBJECTIVES}
    assert np.all(ws["token-only"][2] == 0)
    for obj, law_field in (("exit-guided", "w"), ("prefix-weighted", "prefix")):
        depth, token, s = ws[obj]
        s = s * len(trees)  # norm "tree": each tree's share of the batch is 1 / S
        np.testing.assert_allclose(s.sum(-1), 1.0, atol=1e-12)  # same total non-root weight
        assert np.all(s[:, 0] == 0)
        for i, tree in enumerate(trees):
            np.testing.assert_array_equal(token[i, : tree.num_nodes], tree.token.clip(0))
            edge = np.array(
                [1.0]
                + [
                    target.probs(((ctx[i],) + tree.path(int(tree.parent[u])))[-1:])[tree.token[u]]
                    for u in range(1, tree.num_nodes)
                ]
            )
            law = reference_law_from_edges(tree, edge.tolist(), 1.0)  # float reference law
            ref = np.asarray(getattr(law, law_field))[1:]
            np.testing.assert_allclose(s[i, 1 : tree.num_nodes], ref / ref.sum(), atol=1e-12)
            leaves = tree.leaves[tree.leaves > 0]
            np.testing.assert_allclose(
                np.asarray(law.w)[leaves], np.asarray(law.prefix)[leaves]
            )  # w = P at leaves


@pytest.mark.parametrize("rank", [None, 2])
def test_loss_is_cross_entropy_plus_lambda_times_weighted_node_nll(rank):
    reg = Regime("t", vocab=5, horizon=3, rank=rank)
    params = init_params(reg, jax.random.PRNGKey(1))
    rng = np.random.default_rng(0)
    prev = jnp.asarray(rng.integers(0, 5, size=4))
    cont = jnp.asarray(rng.integers(0, 5, size=(4, 3)))
    depth = jnp.asarray(np.tile([0, 1, 2, 2, 3], (4, 1)))
    token = jnp.asarray(rng.integers(0, 5, size=(4, 5)))
    weight = jnp.asarray(
        np.concatenate([np.zeros((4, 1)), rng.dirichlet(np.ones(4), size=4)], axis=1)
    )
    logq = np.asarray(jax.jit(draft_logprobs)(params, prev))
    np.testing.assert_allclose(np.exp(logq).sum(-1), 1.0, atol=1e-12)
    ce = -np.mean([logq[b, d, int(cont[b, d])] for b in range(4) for d in range(3)])
    tree = -np.sum(
        [
            sum(
                float(weight[b, n]) * logq[b, max(int(depth[b, n]) - 1, 0), int(token[b, n])]
                for n in range(5)
            )
            for b in range(4)
        ]
    )  # coefficients are normalised over the batch
    assert float(jax.jit(loss_fn)(params, prev, cont, depth, token, weight, 0.7)) == pytest.approx(
        ce + 0.7 * tree, rel=1e-10
    )
    # lambda = 0 (token-only): the gradient ignores the tree entirely
    grad = jax.jit(jax.grad(loss_fn))
    g0 = grad(params, prev, cont, depth, token, weight, 0.0)
    g1 = grad(params, prev, cont, depth, token, jnp.zeros_like(weight), 0.0)
    for k in g0:
        np.testing.assert_array_equal(np.asarray(g0[k]), np.asarray(g1[k]))


def test_evaluation_is_one_plus_the_stationary_mean_of_exact_ddtree_coverage():
    target = NGramTarget(TINY.vocab, order=2, zipf=TINY.zipf, seed=TINY.target_seed)
    m1 = target.transition_matrix()
    pi = stationary(m1)
    np.testing.assert_allclose(pi @ m1, pi, atol=1e-12)
    params = init_params(TINY, jax.random.PRNGKey(3))
    got = evaluate(params, TINY, {"T=1": m1}, pi)
    q = np.exp(np.asarray(draft_logprobs(params, jnp.arange(TINY.vocab))))
    for B in TINY.eval_budgets:
        cov = [
            coverage_under(target.prefix_target((c,)), ddtree(q[c], B).tree)
            for c in range(TINY.vocab)
        ]
        assert got[f"B={B},T=1"] == pytest.approx(1 + pi @ np.array(cov), abs=1e-12)


def test_tiny_exittrain_run_gives_a_full_table_bounded_by_the_oracle():
    res = run_exittrain_mini(TINY, seed=0)
    table = res["table"]
    assert set(table) == {"pretrained", *OBJECTIVES, "oracle"}
    for name, row in table.items():
        assert set(row) == {f"B={b},{t}" for b in TINY.eval_budgets for t in ("T=0", "T=1")}
        for col, tau in row.items():
            assert 1.0 <= tau <= table["oracle"][col] + 1e-12, (name, col)
            if name != "oracle":
                assert tau <= 1 + TINY.horizon
    assert "exit-guided" in format_table(res)


def test_legacy_labels_are_the_tree_normalised_objectives_and_other_weights_work_in_the_mini_trainer():
    target = NGramTarget(6, order=2, zipf=1.2, seed=3)
    m = target.transition_matrix()
    trees, ctx = _trees(5)
    for label, weight in (
        ("exit-guided", "exit"),
        ("prefix-weighted", "prefix"),
        ("token-only", "token"),
    ):
        np.testing.assert_array_equal(
            tree_weights(trees, ctx, m, label)[2], tree_weights(trees, ctx, m, Objective(weight))[2]
        )
    # exit-depth / nodes: c(v) = w(v) depth(v) / (number of non-root nodes), w from the float reference law
    _, _, c = tree_weights(trees, ctx, m, Objective("exit-depth", "nodes"))
    count = sum(t.num_nodes - 1 for t in trees)
    for i, tree in enumerate(trees):
        edge = [1.0] + [
            target.probs(((ctx[i],) + tree.path(int(tree.parent[u])))[-1:])[tree.token[u]]
            for u in range(1, tree.num_nodes)
        ]
        w = np.asarray(reference_law_from_edges(tree, edge, 1.0).w)
        np.testing.assert_allclose(
            c[i, 1 : tree.num_nodes], w[1:] * tree.depth[1:] / count, atol=1e-12
        )
    with pytest.raises(ObjectiveError):
        tree_weights(trees, ctx, m, "exit")  # a weight name is not a legacy label: ambiguous norm
    with pytest.raises(ObjectiveError):
        tree_weights(trees, ctx, m, Objective("draft-opd", "batch"))
