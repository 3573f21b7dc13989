"""The residual-mass rule (:mod:`exitlaw.theory.law`) in the simulated TEV: its exit weights
(``tev_weights``, on numpy rows, float lists and Fractions) and the fast sampler's residual masses
(``tev_many``) sum a node's residual entries directly. A node whose children cover its row exactly gets
weight 0 and is never the exit; children covering the row up to 1e-12 or 1e-16 leave exactly that weight.
The mutant "simulated TEV weights without their tiny-residual correction" fails here."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exitlaw.simulate.verifiers import tev, tev_weights
from exitlaw.simulate.verifiers.fast import _residual_cdf, tev_many
from exitlaw.theory import DraftTree
from helpers.mutants import tev_weights_without_residual_correction

TREE = DraftTree(parent=[-1, 0, 0, 1], token=[9, 0, 1, 2])  # the root's children: tokens 0 and 1
COVER = DraftTree(parent=[-1, 0, 0, 0], token=[9, 0, 1, 2])  # the root's children: every token


def rows_with_residual(r: float) -> np.ndarray:
    return np.array([[0.3, 0.7 - r, r], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]])


SHORT_COVER = np.array(
    [[0.7, 0.2, 0.1]] + [[1 / 3] * 3] * 3
)  # 0.7 + 0.2 + 0.1 rounds to 1 - 1.1e-16


def assert_weights_keep_the_residual_mass_rule(weights) -> None:
    """``weights(tree, rows)`` gives the root exactly ``r`` for children covering its row up to ``r`` and
    exactly 0 for an exact cover whose float sum falls short of one."""
    for r in (1e-12, 1e-16, 0.0):
        w = np.asarray(weights(TREE, rows_with_residual(r)), dtype=np.float64)
        assert w[0] == r, (r, w[0])
        np.testing.assert_allclose(w, [r, 0.3 * 0.5, 0.7 - r, 0.3 * 0.5], rtol=1e-12, atol=0)
    assert 1.0 - SHORT_COVER[0].sum() > 0
    assert np.asarray(weights(COVER, SHORT_COVER), dtype=np.float64)[0] == 0.0


@pytest.mark.parametrize("rows_as", ["numpy", "list", "fraction"])
def test_simulated_tev_weights_keep_tiny_residuals_and_give_a_covered_node_no_weight(rows_as):
    convert = {
        "numpy": lambda x: x,
        "list": lambda x: x.tolist(),
        "fraction": lambda x: [[Fraction(float(v)) for v in row] for row in x],
    }[rows_as]
    assert_weights_keep_the_residual_mass_rule(lambda tree, rows: tev_weights(tree, convert(rows)))


def test_the_weights_without_their_tiny_residual_correction_fail_the_rule():
    with pytest.raises(AssertionError):
        assert_weights_keep_the_residual_mass_rule(tev_weights_without_residual_correction)


@pytest.mark.parametrize("r", [1e-12, 1e-16, 0.0])
def test_the_fast_samplers_residual_mass_is_the_residual_entries_summed(r):
    _, rest = _residual_cdf(TREE, rows_with_residual(r))
    assert rest[0] == r


def test_a_node_its_children_cover_is_never_the_exit_of_the_simulated_tev():
    rng = np.random.default_rng(7)
    exits, _ = tev_many(COVER, SHORT_COVER, rng, 20000)
    assert not np.any(exits == 0)
    assert all(tev(COVER, SHORT_COVER, rng)[0] != 0 for _ in range(300))
