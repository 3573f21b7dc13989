"""The residual-mass rule (:mod:`exitlaw.theory.law`, part 2: edges only) in the simulated trainer's
level law: ``rho = max(1 - m, 0)`` from the raw edges, never negative, a 1e-12 residual kept, with and
without the edge floor (its agreement with the engine's law: ``test_trainers_agree.py``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from exitlaw.simulate.exittrain.fast import level_law


def matrix_with_residual(r: float) -> np.ndarray:
    """Order-2 target: after token 0 the next token is 0 w.p. .3, 1 w.p. .7 - r, 2 w.p. r."""
    return np.array([[0.3, 0.7 - r, r], [0.2, 0.3, 0.5], [0.5, 0.5, 0.0]])


@pytest.mark.parametrize("alpha", [0.0, 1e-4])
@pytest.mark.parametrize("r", [1e-12, 1e-16, 0.0, -2e-16])
def test_level_law_rho_is_the_edge_residual_never_negative(alpha, r):
    # context token 2; depth 1: tokens 0, 1 (slots 0, 1); depth 2: tokens 0, 1 both under slot 0 (token 0)
    tok = jnp.array([[0, 1], [0, 1]])
    par = jnp.array([[0, 0], [0, 0]])
    sel = jnp.ones((2, 2), dtype=bool)
    _, rho, _ = level_law(2, tok, par, sel, jnp.asarray(matrix_with_residual(r)), alpha)
    rho = np.asarray(rho)
    assert np.all(rho >= 0)
    assert abs(rho[0, 0] - max(r, 0.0)) <= 4e-16
    if r == 1e-12:
        assert rho[0, 0] == pytest.approx(1e-12, rel=1e-3)
    assert rho[0, 1] == 1.0 and np.all(rho[1] == 1.0)
