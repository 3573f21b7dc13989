"""Chain speculative samplers ``f(tree, probs, draft_probs, rng) -> (exit_node, bonus_token)`` for the kit's
marginal and boundary tests: an exact one whose acceptance is ``coin < p / q`` and its twin with
``coin <= p / q`` (the comparison of a widely used chain implementation), both with float32 coins as
``torch.rand`` draws them. Written for these tests from the algorithm (Leviathan et al. 2023); none is
upstream code."""

from __future__ import annotations

import numpy as np

from helpers.mutants import inverse_cdf


def _chain(tree, probs, draft_probs, rng, leq: bool):
    p = np.asarray(probs, dtype=np.float64)
    q = np.asarray(draft_probs, dtype=np.float64)
    p, q = p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)
    v = 0
    for u in range(1, tree.num_nodes):
        x = int(tree.token[u])
        ratio = p[v, x] / q[v, x] if q[v, x] > 0 else np.inf
        coin = rng.random(dtype=np.float32)
        if coin < ratio or (leq and coin == ratio):
            v = u
            continue
        return v, inverse_cdf(
            np.maximum(p[v] - q[v], 0.0), rng.random()
        )  # the residual norm((p - q)+)
    return v, inverse_cdf(p[v], rng.random())


def chain_lt_coin(tree, probs, draft_probs, rng):
    """Chain speculative sampling, accept iff ``coin < p(x) / q(x)``: exact (a coin of 0 never accepts p = 0)."""
    return _chain(tree, probs, draft_probs, rng, leq=False)


def chain_leq_coin(tree, probs, draft_probs, rng):
    """Boundary mutant: accept iff ``coin <= p(x) / q(x)``; a coin of exactly 0 (2^-24 per float32 draw)
    accepts a draft token the target gives probability 0. No feasible sample size sees it."""
    return _chain(tree, probs, draft_probs, rng, leq=True)
