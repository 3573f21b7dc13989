"""HSD: hierarchical speculative decoding of a sampled chain (sequence-level, lossless marginally).

Source: Zhou et al., "Overcoming Joint Intractability with Lossless Hierarchical
Speculative Decoding" (ICLR 2026; arXiv 2601.05724). Read for facts only: the
abstract ("balancing excess and deficient probability mass across accessible
branches") and the public description of its verification step. Written here from
that description, on the two-call randomness interface, so the same code samples
and is enumerated exactly (:func:`~exitlaw.simulate.randomness.enumerate_law`).

**Setting.** A chain ``x_1..x_g`` drafted autoregressively, ``x_{k+1} ~ q_k =
q(. | c, x_<=k)``; target rows ``p_k = p(. | c, x_<=k)``. Draft prefix mass
``Q_k = prod_{j<=k} q_{j-1}(x_j)``; *accessible* (capped) target mass
``A_k = min(A_{k-1} p_{k-1}(x_k), Q_k)``, ``A_0 = Q_0 = 1`` (the target mass of the
prefix that the draft branch can carry; the rest, ``P_k - A_k``, is deficient and
is refilled from shallower levels).

**Rule (one round).**

1. Accept the whole chain with probability ``A_g / Q_g`` (bonus ``~ p_g``).
2. Otherwise walk back from level ``k = g - 1`` to ``0``. Level ``k`` has the
   excess row ``D_k(y) = A_k p_k(y) - Q_k q_k(y)``. With ``S+ = sum (D_k)+`` and
   ``S- = sum (D_k)-``, stop at level ``k`` with probability ``s_k = S+ / S-`` and
   emit ``x_<=k`` then a bonus ``y ~ norm((D_k)+)``; else step back to ``k - 1``.
   Level 0 always stops (``A_0 = Q_0`` gives ``S+ = S-``).

Why it is lossless (marginally over the draft): by induction from ``k = g``, the
joint draft mass with prefix ``x_<=k`` that is rejected and walks back past level
``k`` is ``Q_k - A_k``. So the mass arriving at level ``k`` is
``sum_y (Q_k q_k(y) - A_{k+1}(y))`` = ``S-``; stopping there sends ``S+`` to the
deficient branches, giving each next token ``y`` the mass
``min(A_k p_k(y), Q_k q_k(y)) + (D_k(y))+ = A_k p_k(y)``, and ``S- - S+ = Q_k - A_k``
walks on. Where ``A_k = Q_k`` (cumulative ratio >= 1) ``s_k = 1``: the reference
code's rule "never step back where the cumulative ratio is >= 1" holds by
construction. ``property_tests/simulate/lab/test_field_verifiers.py`` checks the completed-block
law by exact enumeration.

**Assumptions where the source is silent** (stated, not guessed silently):

* the walk-back coins use stream ``accept`` (as the full-chain coin), the bonus
  stream ``bonus``;
* the cap is applied recursively (``A_k`` above), which is what makes the
  walk-back masses telescope; a cap ``min(P_k, Q_k)`` on the uncapped products
  is not lossless (the exact enumeration rejects it);
* when ``S-`` vanishes at a level ``k > 0`` (nothing arrives, nothing to refill)
  the rule steps back (``s_k = 0``); float rounding can make ``S+`` exceed ``S-``
  by a hair, so ``s_k = S+ / max(S+, S-)``;
* at level 0 with ``p_0 = q_0`` (empty residual, reachable only through float
  rounding) the bonus is drawn from ``p_0``;
* a drafted token of draft probability zero is an error (it cannot have been drawn).

Conditionally on a realised chain this rule is *not* exact (like every rule that
uses ``q``), and its conditional ``E[L]`` may exceed ``1 + C_p(T)``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from exitlaw.simulate.randomness import GeneratorRandomness, Randomness
from exitlaw.simulate.verifiers.table import sim_verifier
from exitlaw.theory import DistributionError, DraftTree, check_tree_rows


def _norm_row(row, zero):
    """``row / sum(row)`` for numpy or list rows."""
    if isinstance(row, np.ndarray):
        return row / row.sum()
    s = sum(row, zero)
    return [x / s for x in row]


def spine_levels(spine: Sequence[int], tokens: Sequence[int], p_rows, q_rows) -> tuple[list, list]:
    """Capped target masses and draft masses ``(A_k, Q_k)``, ``k = 0..g``, along ``spine = [v_0, .., v_g]``
    (``v_{k+1}`` a child of ``v_k``): ``A_k = min(A_{k-1} p_{k-1}(x_k), Q_k)``, ``Q_k = prod q``."""
    zero = p_rows[0][0] - p_rows[0][0]
    A, Q = [zero + 1], [zero + 1]
    for k in range(1, len(spine)):
        par, x = spine[k - 1], int(tokens[spine[k]])
        qx = _norm_row(q_rows[par], zero)[x]
        if not qx > zero:
            raise DistributionError(
                f"node {spine[k]}: drafted token {x} has draft probability 0 under node {par}"
            )
        Q.append(Q[-1] * qx)
        ax = A[-1] * p_rows[par][x]
        A.append(ax if ax < Q[-1] else Q[-1])
    return A, Q


def hsd_spine(spine: Sequence[int], tokens: Sequence[int], p_rows, q_rows, rand: Randomness):
    """HSD on the chain ``spine``: ``(level k, residual)``; ``residual`` is ``None`` when the whole
    chain is accepted (bonus from ``p`` at its end), else the unnormalised bonus row ``(D_k)+``."""
    zero = p_rows[0][0] - p_rows[0][0]
    A, Q = spine_levels(spine, tokens, p_rows, q_rows)
    g = len(spine) - 1
    if g == 0 or rand.bernoulli(A[g] / Q[g], stream="accept"):
        return g, None
    for k in range(g - 1, -1, -1):
        v = spine[k]
        a = A[k]
        p, q = p_rows[v], _norm_row(q_rows[v], zero)
        d = [a * pi - Q[k] * qi for pi, qi in zip(p, q)]
        plus = [x if x > zero else zero for x in d]
        s_plus = sum(plus, zero)
        s_minus = sum((-x if x < zero else zero for x in d), zero)
        if k == 0:
            return 0, (plus if s_plus > zero else list(p))
        top = s_plus if s_plus > s_minus else s_minus
        if top > zero and rand.bernoulli(s_plus / top, stream="accept"):
            return k, plus
    raise AssertionError("unreachable: level 0 always stops")


def _chain_nodes(parents: Sequence[int]) -> list[int]:
    for u in range(1, len(parents)):
        if int(parents[u]) != u - 1:
            raise ValueError(
                f"HSD verifies a chain (parent of node u is u - 1); node {u} has parent {parents[u]}"
            )
    return list(range(len(parents)))


def hsd_procedure(
    parents: Sequence[int], tokens: Sequence[int], p_rows, q_rows, rand: Randomness
) -> tuple[int, int]:
    """HSD on a realised chain: returns ``(exit_node, bonus)`` (see the module docstring)."""
    spine = _chain_nodes(parents)
    k, residual = hsd_spine(spine, tokens, p_rows, q_rows, rand)
    row = p_rows[spine[k]] if residual is None else residual
    return spine[k], rand.categorical(row, stream="bonus")


@sim_verifier("hsd")
def hsd(
    tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """Sampling form ``f(tree, probs, draft_probs, rng)`` (conformance kit, marginal mode ``--chains-only``).

    ``draft_probs[v]`` is the draft law that drew ``v``'s child; the tree must be a chain.
    """
    p = check_tree_rows(tree, probs)
    q = check_tree_rows(tree, draft_probs)
    return hsd_procedure(list(tree.parent), list(tree.token), p, q, GeneratorRandomness(rng))


__all__ = ["hsd", "hsd_procedure", "hsd_spine", "spine_levels"]
