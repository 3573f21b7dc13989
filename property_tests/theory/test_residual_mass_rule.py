"""The residual-mass rule (:mod:`exitlaw.theory.law`) in theory's exit laws: with the rows at hand a node's
exit probability is its residual entries summed directly, so children covering their parent's row up to
1e-12 or 1e-16 leave a real exit weight of exactly that size, and an exact cover leaves exactly 0; from
edges only, ``rho = max(1 - m, 0)`` is never negative."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exitlaw.theory import DraftTree, block_law, exit_law, exit_law_from_edges, reference_law
from exitlaw.theory.exact import reference_block_law

# root -> {0: node 1, 1: node 2}; node 1 -> {2: node 3}. The root's children cover its row up to r.
TREE = DraftTree(parent=[-1, 0, 0, 1], token=[9, 0, 1, 2])
RESIDUALS = (1e-12, 1e-16, 0.0)


def rows_with_residual(r: float) -> np.ndarray:
    return np.array([[0.3, 0.7 - r, r], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]])


@pytest.mark.parametrize("r", RESIDUALS)
def test_children_covering_the_row_up_to_r_leave_the_root_an_exit_weight_of_exactly_r(r):
    rows = rows_with_residual(r)
    for w in (
        np.asarray(exit_law(TREE, rows).w),
        np.asarray(reference_law(TREE, rows.tolist(), one=1.0).w),
        np.asarray(block_law(TREE, rows)).sum(axis=1),
    ):
        assert w[0] == r  # summed directly: no cancellation at all
        assert np.all(w >= 0)
        np.testing.assert_allclose(w[1:], [0.3 * 0.5, 0.7 - r, (0.3) * 0.5], rtol=1e-12)


def test_fraction_oracle_agrees_on_the_hard_rows():
    for r in RESIDUALS:
        exact = [[Fraction(x) for x in row] for row in rows_with_residual(r)]
        ref = reference_law(TREE, exact)
        assert ref.w[0] == exact[0][2]
        assert sum(reference_block_law(TREE, exact)[0]) == ref.w[0]


def test_an_exact_cover_whose_float_sum_falls_short_of_one_gets_no_exit_weight():
    """``0.7 + 0.2 + 0.1`` rounds to ``1 - 1.1e-16``: ``1 - m`` would give the root a positive weight although
    its residual row is empty."""
    assert 1.0 - (0.7 + 0.2 + 0.1) > 0
    tree = DraftTree(parent=[-1, 0, 0, 0], token=[9, 0, 1, 2])
    rows = np.array([[0.7, 0.2, 0.1], [1 / 3] * 3, [1 / 3] * 3, [1 / 3] * 3])
    assert float(exit_law(tree, rows).w[0]) == 0.0
    assert reference_law(tree, rows.tolist(), one=1.0).w[0] == 0.0


@pytest.mark.parametrize("r", RESIDUALS)
def test_from_edges_rho_is_never_negative_and_within_rounding_of_r(r):
    edges = [1.0, 0.3, 0.7 - r, 0.5]
    for law in (exit_law_from_edges(TREE, edges), reference_law_from_edges_float(edges)):
        rho = np.asarray(law.rho, dtype=np.float64)
        assert np.all(rho >= 0)
        assert abs(rho[0] - r) <= 4e-16  # edges only: r is known to rounding
    over = [1.0, 0.3, 0.7 + 5e-6, 0.5]  # child mass above one, within the tolerance
    assert float(exit_law_from_edges(TREE, over).rho[0]) == 0.0
    assert float(exit_law_from_edges(TREE, over).w[0]) == 0.0


def reference_law_from_edges_float(edges):
    from exitlaw.theory.exact import reference_law_from_edges

    return reference_law_from_edges(TREE, edges, one=1.0)
