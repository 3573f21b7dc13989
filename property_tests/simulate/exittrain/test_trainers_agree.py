"""The simulated (JAX) and the engine (torch) ExitTrain trainers give identical node weights on the same inputs.

``exitlaw.simulate`` may not import ``exitlaw.engine`` nor the reverse (docs/architecture.md §1), so each
keeps its own formula; this test pins them to each other on a hand-made batch that holds a dead tree
(zero exit mass), with and without the authors' edge floor, for every weight and normalisation.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.training.exittrain import TreeBatch, objective_weights, tree_law
from exitlaw.simulate.exittrain.objectives import AUTHORS_ALPHA, Objective, node_coefficients
from exitlaw.theory import DraftTree

# A: root -> 1 -> 2, root -> 3 (a = .5, .4, .3); B: chain (a = .9, .5); C: root -> 1 with a = 0 (dead);
# D: root -> 1 -> 2 with a = .6, 1e-6 (the floor matters)
TREES = [
    DraftTree(parent=np.array([-1, 0, 1, 0]), token=np.array([0, 1, 2, 3])),
    DraftTree.chain([1, 2]),
    DraftTree.chain([1]),
    DraftTree.chain([4, 5]),
]
EDGE = torch.tensor(
    [[1.0, 0.5, 0.4, 0.3], [1.0, 0.9, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 0.6, 1e-6, 0.0]],
    dtype=torch.float64,
)


@pytest.mark.parametrize("floor", [None, AUTHORS_ALPHA])
@pytest.mark.parametrize("weight", ["prefix", "exit", "exit-depth"])
@pytest.mark.parametrize("norm", ["batch", "tree", "nodes"])
def test_both_trainers_give_the_same_weights_on_a_batch_with_a_dead_tree(weight, norm, floor):
    trees = TreeBatch.from_trees(TREES, num_nodes=4)
    law = tree_law(trees, EDGE, floor)
    engine = objective_weights(weight, law, trees, norm).numpy()
    sim = np.asarray(
        node_coefficients(
            Objective(weight, norm, 1.0, floor or 0.0),
            law.prefix.numpy(),
            law.rho.numpy(),
            trees.depth.numpy().astype(float),
            trees.nonroot.numpy(),
        )
    )
    np.testing.assert_allclose(sim, engine, rtol=1e-12, atol=1e-15)
    if floor is None:
        assert np.all(sim[2] == 0)  # the dead tree carries nothing in either
    else:
        assert sim[2, 1] > 0  # the floor gives its edge P = alpha: alive again
    assert engine.sum() > 0


def test_prefix_batch_is_the_matched_control_in_both_trainers_not_p_over_sum_p():
    # by hand on A and B: W_A = .8, W_B = .9, Z = 1.7; A's P [.5, .2, .3] sums to 1, B's [.9, .45] to 1.35
    trees = TreeBatch.from_trees(TREES[:3], num_nodes=4)
    law = tree_law(trees, EDGE[:3])
    want = [
        [0, 0.5 * 0.8 / 1.7, 0.2 * 0.8 / 1.7, 0.3 * 0.8 / 1.7],
        [0, 0.9 * (0.9 / 1.35) / 1.7, 0.45 * (0.9 / 1.35) / 1.7, 0],
        [0, 0, 0, 0],
    ]
    sim = np.asarray(
        node_coefficients(
            Objective("prefix", "batch"),
            law.prefix.numpy(),
            law.rho.numpy(),
            trees.depth.numpy().astype(float),
            trees.nonroot.numpy(),
        )
    )
    np.testing.assert_allclose(sim, want, atol=1e-12)
    np.testing.assert_allclose(
        objective_weights("prefix", law, trees, "batch").numpy(), want, atol=1e-12
    )
