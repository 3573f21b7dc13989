"""The residual-mass rule (:mod:`exitlaw.theory.law`, part 2: edges only) in ExitTrain's law: ``rho =
max(1 - m, 0)`` from the raw edges, with or without the edge floor. Children covering their parent's
row up to 1e-12 leave that exit weight (to float64 rounding), up to 1e-16 a weight of rounding size,
exactly (also a float sum a rounding above one) none; ``rho`` is never negative, and a child mass above
one beyond the row tolerance is an input error."""

from __future__ import annotations

import pytest
import torch

from exitlaw.engine.training.law import TreeBatch, tree_law
from exitlaw.theory import DistributionError, DraftTree

TREE = DraftTree(parent=[-1, 0, 0, 1], token=[9, 0, 1, 2])  # the root's children: nodes 1 and 2


def edges(second: float) -> torch.Tensor:
    return torch.tensor([[1.0, 0.3, second, 0.5]], dtype=torch.float64)


@pytest.mark.parametrize("floor", [None, 1e-4])
@pytest.mark.parametrize("r", [1e-12, 1e-16, 0.0, -2e-16, -5e-6])
def test_exittrain_rho_is_the_edge_residual_never_negative(floor, r):
    trees = TreeBatch.from_trees([TREE])
    law = tree_law(trees, edges(0.7 - r), floor)
    rho = law.rho[0]
    assert bool((rho >= 0).all()) and bool((law.w >= 0).all())
    assert abs(float(rho[0]) - max(r, 0.0)) <= 4e-16
    if r == 1e-12:
        assert float(law.w[0, 0]) == pytest.approx(
            1e-12, rel=1e-3
        )  # a real weight, not rounded to 0
    assert float(rho[1]) == pytest.approx(0.5, rel=1e-12) and float(rho[2]) == 1.0


def test_a_child_mass_above_one_beyond_the_tolerance_is_an_input_error():
    with pytest.raises(DistributionError, match="node 0 carry edge mass"):
        tree_law(TreeBatch.from_trees([TREE]), edges(0.75))
