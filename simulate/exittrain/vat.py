"""VAT (verification-aware training) for the simulated position-wise drafter, in ``jax.numpy``.

Source: Gu et al. 2026, "Verification-Aware Training" (VAT; huggingface.co/papers/2608.30135),
which the TEV paper cites as "VAT reweights simulated first-rejection positions". Its
abstract: verification discards every position from the first rejection onward, yet
drafter training uses a fixed per-position weight schedule (DFlash's decay
``exp(-(d - 1) / gamma)``); VAT simulates verification at every step and keeps full weight
up to each sample's first rejection, re-anchoring the decay to start there (plus a jointly
trained binary verification head).

Only the abstract was available, so exitlaw assumes (the same as the engine's
``exitlaw.engine.training.vat``, pinned equal by ``property_tests/simulate/exittrain/test_trainers_agree.py``):

1. simulated verification = exact match of the drafter's greedy token ``argmax q_d(. | c)``
   with the target continuation token ``y_d`` (the CE targets); the first rejection ``j``
   is the first mismatching depth (1-based), ``j = H`` when all match (deterministic);
2. weights ``v_d = 1`` for ``d <= j``, ``exp(-(d - j) / gamma)`` for ``d > j``, ``gamma = 4``;
3. term = ``v``-weighted mean of ``-log q_d(y_d)`` over the batch (normalisation ``batch``,
   no edge floor), replacing the tree term: ``loss = CE + lambda * vat_term``;
4. no verification head (the position-wise drafter has no hidden state to attach it to).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

VAT_GAMMA = 4.0  # decay constant after the first rejection (assumption 2)


def first_rejection(draft_top, target):
    """``j [S]`` (1-based): the first depth whose greedy draft token differs from ``target [S, H]``; ``H`` if none."""
    mismatch = draft_top != target
    return jnp.where(mismatch.any(axis=1), jnp.argmax(mismatch, axis=1) + 1, target.shape[1])


def vat_position_weights(j, horizon: int, gamma: float = VAT_GAMMA):
    """``v [S, H]``: 1 up to and at ``j``, ``exp(-(d - j) / gamma)`` after it."""
    d = jnp.arange(1, horizon + 1)[None]
    return jnp.exp(-jnp.maximum(d - j[:, None], 0) / gamma)


def vat_term(logq, cont, gamma: float = VAT_GAMMA):
    """``sum v_d (-log q_d(y_d)) / sum v_d`` for ``logq [S, H, V]`` (differentiable) and ``cont [S, H]``."""
    top = jnp.argmax(jax.lax.stop_gradient(logq), axis=-1)
    v = jax.lax.stop_gradient(
        vat_position_weights(first_rejection(top, cont), cont.shape[1], gamma)
    )
    nll = -jnp.take_along_axis(logq, cont[..., None], axis=-1)[..., 0]
    return (v * nll).sum() / v.sum()
