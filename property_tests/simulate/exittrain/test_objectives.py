"""ExitTrain objective weights and normalisations against numbers computed by hand on small trees."""

import jax.numpy as jnp
import numpy as np
import pytest

from exitlaw.simulate.exittrain.objectives import (
    AUTHORS_ALPHA,
    Objective,
    ObjectiveError,
    node_coefficients,
    parse_objective,
    prefix_and_exit,
)
from exitlaw.theory import DraftTree

# Tree A: root -> 1 (a=0.5) -> 3 (a=0.6) -> 4 (a=5e-5); root -> 2 (a=0.25).
# By hand: P = [1, .5, .25, .3, 1.5e-5]; child mass m = [.75, .6, 0, 5e-5, 0];
# rho = [.25, .4, 1, .99995, 1]; w = P rho = [.25, .2, .25, .299985, 1.5e-5] (sums to 1).
TREE_A = DraftTree(np.array([-1, 0, 0, 1, 3]), np.array([-1, 7, 8, 9, 9]))
EDGE_A = np.array([1.0, 0.5, 0.25, 0.6, 5e-5])
# Tree B: root -> 1 (a=0.8) -> 2 (a=0.5), padded to 5 nodes. P = [1, .8, .4]; rho = [.2, .5, 1]; w = [.2, .4, .4].
TREE_B = DraftTree(np.array([-1, 0, 1]), np.array([-1, 3, 4]))
EDGE_B = np.array([1.0, 0.8, 0.5, 0.0, 0.0])


def _law(tree, edge, alpha):
    t = tree.padded(5)
    log_floored = np.where(
        np.arange(5) == 0, 0.0, np.log(np.maximum(np.where(t.valid, edge, 1.0), alpha))
    )
    p, rho = prefix_and_exit(
        jnp.asarray(log_floored),
        jnp.asarray(np.where(t.valid, edge, 0.0)),
        jnp.asarray(t.ancestor),
        jnp.asarray(t.child),
        alpha,
    )
    return np.asarray(p), np.asarray(rho), t


def test_prefix_and_exit_match_hand_numbers_with_and_without_the_edge_floor():
    p, rho, _ = _law(TREE_A, EDGE_A, 0.0)
    np.testing.assert_allclose(p, [1, 0.5, 0.25, 0.3, 1.5e-5], rtol=1e-12)
    np.testing.assert_allclose(rho, [0.25, 0.4, 1.0, 0.99995, 1.0], rtol=1e-12)
    np.testing.assert_allclose(p * rho, [0.25, 0.2, 0.25, 0.299985, 1.5e-5], rtol=1e-12)
    # authors' floor: P uses max(a, 1e-4) (node 4: 0.3 * 1e-4), rho still uses the raw edges
    pf, rhof, _ = _law(TREE_A, EDGE_A, AUTHORS_ALPHA)
    np.testing.assert_allclose(pf, [1, 0.5, 0.25, 0.3, 3e-5], rtol=1e-12)
    np.testing.assert_allclose(rhof, [0.25, 0.4, 1.0, 0.99995, 1.0], rtol=1e-12)


def _batch(alpha=0.0):
    pa, ra, ta = _law(TREE_A, EDGE_A, alpha)
    pb, rb, tb = _law(TREE_B, EDGE_B, alpha)
    mask = np.stack([ta.valid, tb.valid]) & (np.arange(5) > 0)
    return (
        np.stack([pa, pb]),
        np.stack([ra, rb]),
        np.stack([ta.depth, tb.depth]).astype(float),
        mask,
    )


# Hand-computed coefficients c(v) (node order 0..4; root and padding 0).
HAND = {
    # s = P; tree: each tree's non-root P sums to 1 (A: 1.050015, B: 1.2), then / 2 trees
    ("prefix", "tree"): [
        [0, 0.5 / 2.10003, 0.25 / 2.10003, 0.3 / 2.10003, 1.5e-5 / 2.10003],
        [0, 1 / 3, 1 / 6, 0, 0],
    ],
    # batch, the paper's matched control: P * (W_t / sum_t P) / (W_A + W_B) with W_A = .75, W_B = .8, so
    # A: P * (.75 / 1.050015) / 1.55; B: P * (.8 / 1.2) / 1.55 = [.8, .4] * (2/3) / 1.55
    ("prefix", "batch"): [
        [
            0,
            0.5 * 0.75 / 1.050015 / 1.55,
            0.25 * 0.75 / 1.050015 / 1.55,
            0.3 * 0.75 / 1.050015 / 1.55,
            1.5e-5 * 0.75 / 1.050015 / 1.55,
        ],
        [0, 0.8 * 2 / 3 / 1.55, 0.4 * 2 / 3 / 1.55, 0, 0],
    ],
    # nodes: / 6 non-root nodes, no rescaling
    ("prefix", "nodes"): [[0, 0.5 / 6, 0.25 / 6, 0.05, 2.5e-6], [0, 0.8 / 6, 0.4 / 6, 0, 0]],
    # s = w; A's non-root w sums to .75, B's to .8
    ("exit", "tree"): [[0, 0.2 / 1.5, 0.25 / 1.5, 0.19999, 1e-5], [0, 0.25, 0.25, 0, 0]],
    ("exit", "batch"): [
        [0, 0.2 / 1.55, 0.25 / 1.55, 0.299985 / 1.55, 1.5e-5 / 1.55],
        [0, 0.4 / 1.55, 0.4 / 1.55, 0, 0],
    ],
    ("exit", "nodes"): [[0, 0.2 / 6, 0.25 / 6, 0.299985 / 6, 2.5e-6], [0, 0.4 / 6, 0.4 / 6, 0, 0]],
    # s = w * depth: A [.2, .25, .59997, 4.5e-5] (sum 1.050015), B [.4, .8] (sum 1.2)
    ("exit-depth", "tree"): [
        [0, 0.2 / 2.10003, 0.25 / 2.10003, 0.59997 / 2.10003, 4.5e-5 / 2.10003],
        [0, 1 / 6, 1 / 3, 0, 0],
    ],
    ("exit-depth", "batch"): [
        [0, 0.2 / 2.250015, 0.25 / 2.250015, 0.59997 / 2.250015, 4.5e-5 / 2.250015],
        [0, 0.4 / 2.250015, 0.8 / 2.250015, 0, 0],
    ],
    ("exit-depth", "nodes"): [
        [0, 0.2 / 6, 0.25 / 6, 0.099995, 7.5e-6],
        [0, 0.4 / 6, 0.8 / 6, 0, 0],
    ],
}


@pytest.mark.parametrize("weight,norm", sorted(HAND))
def test_node_coefficients_match_hand_numbers(weight, norm):
    got = np.asarray(node_coefficients(Objective(weight, norm), *_batch()))
    np.testing.assert_allclose(got, HAND[(weight, norm)], rtol=1e-10, atol=1e-15)


def test_authors_configuration_floors_p_then_divides_by_the_node_count():
    # exit-depth, nodes, alpha 1e-4: node 4 of A gets 3e-5 * 1 * 3 / 6 = 1.5e-5 (raw P would give 7.5e-6)
    got = np.asarray(
        node_coefficients(
            Objective("exit-depth", "nodes", 0.1, AUTHORS_ALPHA), *_batch(AUTHORS_ALPHA)
        )
    )
    np.testing.assert_allclose(got[0], [0, 0.2 / 6, 0.25 / 6, 0.099995, 1.5e-5], rtol=1e-10)
    got = np.asarray(
        node_coefficients(Objective("prefix", "nodes", 0.1, AUTHORS_ALPHA), *_batch(AUTHORS_ALPHA))
    )
    np.testing.assert_allclose(got[0], [0, 0.5 / 6, 0.25 / 6, 0.05, 5e-6], rtol=1e-10)


def test_token_weights_are_zero_and_a_tree_with_zero_weights_contributes_nothing():
    p, rho, depth, mask = _batch()
    assert np.all(np.asarray(node_coefficients(Objective("token"), p, rho, depth, mask)) == 0)
    rho0 = rho.copy()
    rho0[1] = 0.0  # tree B: every w = 0 -> under "tree" its row is 0, tree A keeps its 1/2 share
    got = np.asarray(node_coefficients(Objective("exit", "tree"), p, rho0, depth, mask))
    assert np.all(got[1] == 0)
    assert got[0].sum() == pytest.approx(0.5, rel=1e-12)


def test_matched_prefix_control_gives_each_tree_its_exit_total_and_a_dead_tree_nothing():
    p, rho, depth, mask = _batch()
    got = np.asarray(node_coefficients(Objective("prefix", "batch"), p, rho, depth, mask))
    # per-tree totals are those of exit/batch: W_A / 1.55 and W_B / 1.55
    np.testing.assert_allclose(got.sum(1), [0.75 / 1.55, 0.8 / 1.55], rtol=1e-12)
    rho0 = rho.copy()
    rho0[1] = (
        0.0  # tree B keeps its prefix mass but has zero exit mass: it gets nothing, A gets everything
    )
    got = np.asarray(node_coefficients(Objective("prefix", "batch"), p, rho0, depth, mask))
    assert np.all(got[1] == 0)
    np.testing.assert_allclose(
        got[0, 1:], np.array([0.5, 0.25, 0.3, 1.5e-5]) / 1.050015, rtol=1e-12
    )
    rho0[0] = 0.0  # every tree dead: all zero, never NaN
    got = np.asarray(node_coefficients(Objective("prefix", "batch"), p, rho0, depth, mask))
    assert np.all(got == 0)


def test_objective_names_round_trip_and_bad_objectives_are_named_errors():
    objs = [
        Objective("token"),
        Objective("exit", "tree", 0.1),
        Objective("exit-depth", "nodes", 0.1, AUTHORS_ALPHA),
        Objective("draft-opd", "batch", 1.0),
        Objective("prefix", "batch", 1.0),
    ]
    for o in objs:
        assert parse_objective(o.name) == (o if o.weight != "token" else Objective("token"))
    assert objs[2].name == "exit-depth/nodes/lambda=0.1/floor=0.0001"
    assert Objective("token", lam=1.0).code()[6] == 0.0  # token ignores lambda
    for bad in (
        dict(weight="exitt"),
        dict(weight="exit", norm="mean"),
        dict(weight="exit", lam=-1.0),
        dict(weight="exit", edge_floor=1.0),
        dict(weight="token", edge_floor=1e-4),
        dict(weight="draft-opd", norm="tree"),
    ):
        with pytest.raises(ObjectiveError):
            Objective(**bad)
    for bad in ("exit", "exit/tree/0.1", "exit/tree/lambda=x"):
        with pytest.raises(ObjectiveError):
            parse_objective(bad)
