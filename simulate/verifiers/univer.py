"""UniVer: tree verification as conditional optimal transport, composed across levels.

Source: Weng, Hu, Yairi, "UniVer: A Unified Perspective for Multi-step and
Multi-draft Speculative Decoding" (arXiv 2605.04543). What the public record says
(abstract and summaries; read for facts only): verification of a tree of
*sampled* drafts is cast as a conditional OT problem; *prefix acceptance
probabilities* act as scaling factors that guide the *horizontal* choice among
sibling drafts; local OT plans are composed across levels under prefix
constraints, in a *top-down mass allocation* phase and a *post-order decision*
phase; lossless, optimal within its framework, and 4.2-8.5 % longer accepted
blocks than recursive rejection sampling without replacement (RRS-w/o).

The algorithm itself is not in the sources this suite can read, so this module
implements that description as follows (every choice below is an assumption):

**Tree and drafts.** Node ``v``'s children ``c_1, c_2, ..`` (node order = draw
order) were drawn from ``q_v`` *without replacement* (the kit's and Tsubame's
drafting); the first-drawn children form a *spine* ``v = v_0, v_1, .., v_g``
(``v_{k+1}`` the first child of ``v_k``), which is an autoregressive chain draft
from ``q`` (the first sibling is drawn from the unmodified row).

**One step from node v.**

1. *Top-down mass allocation (vertical).* Along the spine compute the draft
   prefix masses ``Q_k`` and the accessible target masses
   ``A_k = min(A_{k-1} p(x_k | .), Q_k)``: the prefix acceptance probabilities
   ``A_k / Q_k``. They scale the target row at each level: the level-``k`` local
   plan transports ``A_k p_k`` onto ``Q_k q_k`` (:mod:`.hsd`).
2. *Post-order decision.* Accept the whole spine with probability ``A_g / Q_g``;
   otherwise walk back from the deepest level and stop at level ``k`` with
   probability ``S+_k / S-_k`` (:func:`.hsd.hsd_spine`). Stopping at level ``k``
   yields the level's residual target ``r = norm((A_k p_k - Q_k q_k)+)``, the
   next-token law the local plan still owes.
3. *Horizontal choice among the remaining sampled drafts.* The residual ``r`` is
   transported onto the later siblings ``c_2, c_3, ..`` of level ``k`` by the
   sequential single-draft plan: ``c_j`` (drawn from ``q_v`` with ``c_1..c_{j-1}``
   removed) is accepted with probability ``min(1, r(x) / q^(j)(x))``; on rejection
   ``r <- norm((r - q^(j))+)``. An accepted sibling ``c_j`` becomes the new ``v``
   (recurse: its own spine, its own siblings); if all are rejected the round exits
   at ``v_k`` with bonus ``~ r``.

Lossless (marginally over the drafts): step 2 is HSD, exact over the spine's
draws, and its bonus draw ``y ~ r`` is replaced by a procedure whose output law
is exactly ``r`` and whose extra randomness (the later siblings, drawn given
``c_1`` only) is independent of the HSD decision; an accepted sibling's subtree
was drawn given that sibling only, so the recursion sees fresh drafts.
``property_tests/simulate/lab/test_field_verifiers.py`` checks the completed-block law by
exact enumeration.

**What is assumed where the source is silent:** the spine is the first-drawn
child at every node (not a value-ranked child); the sibling plan is the
sequential rejection plan (optimal for one draft at a time, not a joint OT over
the sibling set); a sibling that equals the spine child cannot be re-accepted
(its subtree's draws are not independent of the walk-back); streams ``accept``
(coins) and ``bonus``. On a chain this rule *is* HSD. It is exact only averaged
over the drafts: conditionally on a realised tree its ``E[L]`` may exceed
``1 + C_p(T)``. The claimed 4.2-8.5 % gain is measured, not assumed
(:mod:`exitlaw.simulate.lab.field_lab`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from exitlaw.simulate.randomness import GeneratorRandomness, Randomness
from exitlaw.simulate.verifiers.hsd import hsd_spine
from exitlaw.simulate.verifiers.procedures import row_copy, row_sum
from exitlaw.simulate.verifiers.table import sim_verifier
from exitlaw.theory import DistributionError, DraftTree, check_tree_rows


def _children(parents: Sequence[int]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in parents]
    for u in range(1, len(parents)):
        kids[int(parents[u])].append(u)
    return kids


def _spine(kids: list[list[int]], v: int) -> list[int]:
    out = [v]
    while kids[out[-1]]:
        out.append(kids[out[-1]][0])
    return out


def sibling_plan(r, q, siblings: Sequence[int], tokens: Sequence[int], rand: Randomness):
    """Transport the residual ``r`` onto ``siblings`` drawn from ``q`` without replacement, one at a time.

    ``q`` must already have the earlier-drawn siblings zeroed. Returns
    ``(accepted sibling or None, final residual row)``.
    """
    zero = r[0] - r[0]
    for u in siblings:
        x = int(tokens[u])
        sr, sq = row_sum(r, zero), row_sum(q, zero)
        rx, qx = r[x] / sr, q[x] / sq
        if not qx > zero:
            raise DistributionError(
                f"sibling node {u}: token {x} has draft probability 0 once the earlier "
                "siblings are removed (a repeated sibling, or a token the drafter cannot draw)"
            )
        if rand.bernoulli(rx / qx, stream="accept"):
            return u, r
        r = [ri / sr - qi / sq for ri, qi in zip(r, q)]
        r = [d if d > zero else zero for d in r]
        q[x] = zero
    return None, r


def univer_procedure(
    parents: Sequence[int], tokens: Sequence[int], p_rows, q_rows, rand: Randomness
) -> tuple[int, int]:
    """UniVer on a realised sampled tree: returns ``(exit_node, bonus)`` (see the module docstring)."""
    kids = _children(parents)
    zero = p_rows[0][0] - p_rows[0][0]
    v = 0
    while True:
        spine = _spine(kids, v)
        k, residual = hsd_spine(spine, tokens, p_rows, q_rows, rand)
        node = spine[k]
        if residual is None:  # the whole spine accepted: node is a leaf
            return node, rand.categorical(p_rows[node], stream="bonus")
        first, rest = kids[node][0], kids[node][1:]
        q = (
            [float(x) for x in q_rows[node]]
            if isinstance(q_rows[node], np.ndarray)
            else row_copy(q_rows[node])
        )
        q[int(tokens[first])] = zero
        accepted, r = sibling_plan(list(residual), q, rest, tokens, rand)
        if accepted is None:
            return node, rand.categorical(r, stream="bonus")
        v = accepted


@sim_verifier("univer")
def univer(
    tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """Sampling form ``f(tree, probs, draft_probs, rng)`` (conformance kit, marginal mode).

    ``draft_probs[v]`` is the law that drew ``v``'s children, siblings without replacement in node order.
    """
    p = check_tree_rows(tree, probs)
    q = check_tree_rows(tree, draft_probs)
    return univer_procedure(list(tree.parent), list(tree.token), p, q, GeneratorRandomness(rng))


def univer_fixed_tree(
    tree: DraftTree, probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """UniVer on a *fixed* tree, told its tokens were drawn from the uniform law (kit, conditional mode).

    A sampled-draft rule needs a draft law; on a tree that was not sampled there is
    none, and this form shows what the rule does to the fixed-tree law.
    """
    probs = check_tree_rows(tree, probs)
    return univer(tree, probs, np.full_like(probs, 1.0 / probs.shape[1]), rng)


__all__ = ["univer", "univer_procedure", "univer_fixed_tree", "sibling_plan"]
