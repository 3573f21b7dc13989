"""VAT (verification-aware training) in both trainers: hand-computed first rejections, position weights and
terms on a tiny batch, and the simulated (JAX) and engine (torch) terms and gradients equal on the same inputs."""

from __future__ import annotations

import math

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from exitlaw.engine.training.exittrain import draft_log_normalisers, exittrain_loss
from exitlaw.engine.training.objectives import ObjectiveError, check_objective
from exitlaw.engine.training.vat import first_rejection, vat_position_weights, vat_term
from exitlaw.simulate.exittrain import vat as sim
from exitlaw.simulate.exittrain.objectives import Objective
from exitlaw.simulate.exittrain.objectives import ObjectiveError as SimObjectiveError

E = math.exp(-1 / 4)  # one step past the first rejection, gamma = 4
L5, L2 = -math.log(0.5), -math.log(0.2)
# drafter rows over V = 3 (probabilities .5 on the greedy token, .3 and .2 on the others):
#   sample 0: greedy [0, 1, 2], targets [0, 2, 2]: depth 2 rejected (j = 2); nll [L5, L2, L5]; v = [1, 1, e^-1/4]
#   sample 1: greedy [1, 1, 1], targets [1, 1, 1]: nothing rejected (j = 3); nll [L5, L5, L5]; v = [1, 1, 1]
ROWS = {0: [0.5, 0.3, 0.2], 1: [0.3, 0.5, 0.2], 2: [0.2, 0.3, 0.5]}
PROBS = np.array([[ROWS[0], ROWS[1], ROWS[2]], [ROWS[1], ROWS[1], ROWS[1]]])
TARGETS = np.array([[0, 2, 2], [1, 1, 1]])


def _engine(valid=None):
    logits = torch.tensor(np.log(PROBS), dtype=torch.float32, requires_grad=True)
    targets = torch.tensor(TARGETS)
    valid = torch.ones(2, 3, dtype=torch.bool) if valid is None else torch.tensor(valid)
    return logits, targets, valid


def test_first_rejection_and_weights_match_hand_numbers_in_both_trainers():
    logits, targets, valid = _engine()
    j = first_rejection(logits.argmax(-1), targets, valid)
    assert j.tolist() == [2, 3]
    np.testing.assert_allclose(
        vat_position_weights(j, valid).numpy(), [[1, 1, E], [1, 1, 1]], rtol=1e-12
    )
    js = sim.first_rejection(jnp.argmax(jnp.log(PROBS), -1), jnp.asarray(TARGETS))
    assert np.asarray(js).tolist() == [2, 3]
    np.testing.assert_allclose(
        np.asarray(sim.vat_position_weights(js, 3)), [[1, 1, E], [1, 1, 1]], rtol=1e-6
    )
    # a rejection at the first depth re-anchors the decay there: v = [1, e^-1/4, e^-2/4]
    j1 = first_rejection(
        torch.tensor([[0, 0, 0]]), torch.tensor([[1, 0, 0]]), torch.ones(1, 3, dtype=torch.bool)
    )
    assert j1.tolist() == [1]
    np.testing.assert_allclose(
        vat_position_weights(j1, torch.ones(1, 3, dtype=torch.bool)).numpy(),
        [[1, E, E * E]],
        rtol=1e-12,
    )


def test_invalid_positions_are_never_rejections_and_weigh_nothing():
    # sample 0's depth 2 mismatch is masked out: j = 3 there; sample 1's depth 3 is padding
    logits, targets, _ = _engine()
    valid = torch.tensor([[True, False, True], [True, True, False]])
    j = first_rejection(logits.argmax(-1), targets, valid)
    assert j.tolist() == [3, 3]
    np.testing.assert_allclose(vat_position_weights(j, valid).numpy(), [[1, 0, 1], [1, 1, 0]])
    # term: (L5 + L5 + L5 + L5) / 4
    term = vat_term(logits, draft_log_normalisers(logits), targets, valid)
    assert term.item() == pytest.approx(L5, rel=1e-6)


def test_vat_term_and_loss_match_the_hand_formula():
    want = (L5 + L2 + E * L5 + 3 * L5) / (5 + E)
    logits, targets, valid = _engine()
    term = vat_term(logits, draft_log_normalisers(logits), targets, valid)
    assert term.item() == pytest.approx(want, rel=1e-6)
    assert float(sim.vat_term(jnp.log(jnp.asarray(PROBS)), jnp.asarray(TARGETS))) == pytest.approx(
        want, rel=1e-6
    )
    # the engine loss: CE (plain mean, (5 L5 + L2) / 6) + lambda * term; needs no trees
    terms = exittrain_loss(logits, targets, valid, None, None, objective="vat", lam=0.5)
    assert terms.ce.item() == pytest.approx((5 * L5 + L2) / 6, rel=1e-6)
    assert terms.total.item() == pytest.approx((5 * L5 + L2) / 6 + 0.5 * want, rel=1e-6)


def test_both_trainers_give_the_same_vat_term_and_gradient_on_random_inputs():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 5, 7)) * 2
    targets = np.where(
        rng.random((6, 5)) < 0.6, logits.argmax(-1), rng.integers(0, 7, (6, 5))
    )  # some rejections
    t_logits = torch.tensor(logits, dtype=torch.float32, requires_grad=True)
    t_targets = torch.tensor(targets)
    valid = torch.ones(6, 5, dtype=torch.bool)
    term = vat_term(t_logits, torch.logsumexp(t_logits, -1), t_targets, valid)
    term.backward()

    def sim_term(z):
        return sim.vat_term(jax.nn.log_softmax(z, axis=-1), jnp.asarray(targets))

    value, grad = jax.value_and_grad(sim_term)(jnp.asarray(logits, dtype=jnp.float32))
    assert float(value) == pytest.approx(term.item(), rel=1e-5)
    np.testing.assert_allclose(np.asarray(grad), t_logits.grad.numpy(), rtol=1e-4, atol=1e-6)
    js = first_rejection(t_logits.argmax(-1), t_targets, valid)
    assert set(js.tolist()) != {5}  # the inputs do exercise rejections


def test_vat_needs_batch_normalisation_and_no_edge_floor_in_both_trainers():
    check_objective("vat", "batch")
    for norm in ("tree", "nodes"):
        with pytest.raises(ObjectiveError, match="vat"):
            check_objective("vat", norm)
        with pytest.raises(SimObjectiveError, match="vat"):
            Objective("vat", norm)
    with pytest.raises(ObjectiveError, match="floor"):
        check_objective("vat", "batch", 1e-4)
    with pytest.raises(SimObjectiveError, match="floor"):
        Objective("vat", "batch", 1.0, 1e-4)
    code = Objective("vat", "batch", 0.1).code()
    assert code[9] == 1.0 and code[7] == 0.0 and code[6] == 0.1 and not code[:3].any()


def test_the_simulated_trainer_adds_lambda_times_the_vat_term_to_its_ce():
    from exitlaw.simulate.exittrain.fast import loss_one
    from exitlaw.simulate.exittrain.mini import Regime, draft_logprobs, init_params
    from exitlaw.simulate.lab.models import NGramTarget

    reg = Regime("t", vocab=6, zipf=2.0, horizon=3, rank=2, batch=4)
    m = jnp.asarray(NGramTarget(6, order=2, zipf=2.0, seed=0).transition_matrix())
    params = init_params(reg, jax.random.PRNGKey(0))
    ctx, cont = jnp.array([0, 1, 2, 3]), jnp.array([[1, 2, 3], [0, 0, 1], [5, 4, 3], [2, 2, 2]])

    def loss(obj, p=params):
        return loss_one(
            p, jnp.asarray(obj.code()), ctx, cont, jax.random.PRNGKey(1), m, 4, draft_logprobs
        )

    logq = draft_logprobs(params, ctx)
    ce = -jnp.take_along_axis(logq, cont[..., None], axis=-1).mean()
    assert float(loss(Objective("token"))) == pytest.approx(float(ce), rel=1e-6)
    assert float(loss(Objective("vat", "batch", 0.3))) == pytest.approx(
        float(ce + 0.3 * sim.vat_term(logq, cont)), rel=1e-6
    )

    # its gradient is not CE's rescaled: the positions after a first rejection weigh less
    def flat_grad(objective):
        """The flattened gradient of the one sequence's loss under ``objective``."""
        return jax.flatten_util.ravel_pytree(jax.grad(lambda p: loss(objective, p))(params))[0]

    g_tok = flat_grad(Objective("token"))
    g_vat = flat_grad(Objective("vat", "batch", 1.0))
    cos = float(g_tok @ g_vat / jnp.linalg.norm(g_tok) / jnp.linalg.norm(g_vat))
    assert cos < 1 - 1e-6
