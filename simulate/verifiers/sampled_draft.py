"""Verifiers over *sampled* drafts (docs/design.md §1.8, "Verifiers over sampled drafts").

The tree's tokens are drawn from the drafter ``q`` and verified with rules that
use ``q``: chain speculative sampling, SpecInfer recursive rejection (i.i.d.
children), its without-replacement variant (EAGLE-2 / Sequoia) and a
Tsubame-style two-pass (plan a topology from draft scores, re-sample the node
tokens, verify by recursive rejection). These are exact only *averaged over
the draft randomness*; conditionally on the realised tree they are not, and
their conditional ``E[L]`` can exceed ``1 + C_p(T)``.

Realised drafts are plain ``parents`` / ``tokens`` lists: i.i.d. children may
repeat a token, which a :class:`DraftTree` forbids.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from exitlaw.simulate.randomness import GeneratorRandomness, Randomness
from exitlaw.simulate.verifiers.procedures import row_copy, row_sum
from exitlaw.simulate.verifiers.table import sim_verifier
from exitlaw.theory import DraftTree, check_tree_rows, oracle_tree
from exitlaw.theory.registry import VERIFIERS

# chain, specinfer, without_replacement
RULES = tuple(v.rule for v in VERIFIERS if v.rule is not None)


def _children(parents: Sequence[int]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in parents]
    for u in range(1, len(parents)):
        kids[parents[u]].append(u)
    return kids


def _path(parents, tokens, v) -> tuple[int, ...]:
    out = []
    while v > 0:
        out.append(int(tokens[v]))
        v = parents[v]
    return tuple(reversed(out))


def verify_sampled(
    parents: Sequence[int],
    tokens: Sequence[int],
    p_rows,
    q_rows,
    rand: Randomness,
    *,
    without_replacement: bool,
) -> tuple[int, int]:
    """Recursive rejection sampling on a realised draft; returns ``(exit_node, bonus)``.

    At node ``v`` with residual ``r = p_v`` and draft ``q = q_v``: accept child ``x``
    w.p. ``min(1, r(x) / q(x))`` (both normalised); on rejection
    ``r <- norm((r - q)+)`` and, without replacement, ``q(x) <- 0`` (renormalised).
    All rejected: bonus ``~ r``; at a leaf: bonus ``~ p_v``.
    """
    kids = _children(parents)
    zero = p_rows[0][0] - p_rows[0][0]
    v = 0
    while True:
        r, q = row_copy(p_rows[v]), row_copy(q_rows[v])
        accepted = None
        for u in kids[v]:
            x = int(tokens[u])
            sr, sq = row_sum(r, zero), row_sum(q, zero)
            rx, qx = r[x] / sr, q[x] / sq
            ratio = (zero + 1) if qx <= zero else rx / qx
            if rand.bernoulli(ratio, stream="accept"):
                accepted = u
                break
            diff = [ri / sr - qi / sq for ri, qi in zip(r, q)]
            r = [d if d > zero else zero for d in diff]
            if isinstance(q_rows[v], np.ndarray):
                r = np.array(r)
            if without_replacement:
                q[x] = zero
        if accepted is None:
            return v, rand.categorical(r, stream="bonus")
        v = accepted


def draw_draft(
    topology: Sequence[int],
    draft: Callable,
    rand: Randomness,
    *,
    without_replacement: bool,
    context: Sequence[int] = (),
) -> list[int]:
    """Tokens for a topology (``topology[u]`` = parent of ``u``) drawn from ``q(. | path)``, stream ``draft``."""
    zero_tokens = [0] * len(topology)
    tokens = list(zero_tokens)
    drawn: dict[int, list[int]] = {}
    for u in range(1, len(topology)):
        par = topology[u]
        q = row_copy(draft(tuple(context) + _path(topology, tokens, par)))
        if without_replacement:
            zero = q[0] - q[0]
            for t in drawn.get(par, []):
                q[t] = zero
            if not row_sum(q, zero) > zero:
                raise ValueError(
                    f"node {u}: the draft row under node {par} has fewer positive tokens "
                    "than the topology has siblings (without replacement)"
                )
        tokens[u] = rand.categorical(q, stream="draft")
        drawn.setdefault(par, []).append(tokens[u])
    return tokens


def speculative_round(
    topology: Sequence[int],
    target: Callable,
    draft: Callable,
    rand: Randomness,
    *,
    rule: str,
    context: Sequence[int] = (),
) -> tuple[tuple[int, ...], list[int]]:
    """Draft a tree on ``topology`` with ``q``, verify with ``rule``; returns ``(block, tokens)``."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    topology = [int(p) for p in topology]
    if rule == "chain" and any(topology[u] != u - 1 for u in range(1, len(topology))):
        raise ValueError("rule 'chain' needs a chain topology (parent of u is u - 1)")
    wr = rule == "without_replacement"
    tokens = draw_draft(topology, draft, rand, without_replacement=wr, context=context)
    ctx = tuple(context)
    p_rows = [target(ctx + _path(topology, tokens, v)) for v in range(len(topology))]
    q_rows = [draft(ctx + _path(topology, tokens, v)) for v in range(len(topology))]
    v, y = verify_sampled(topology, tokens, p_rows, q_rows, rand, without_replacement=wr)
    return _path(topology, tokens, v) + (int(y),), tokens


def plan_topology(draft: Callable, budget: int, context: Sequence[int] = ()) -> list[int]:
    """Tsubame pass 1: the top-``budget`` prefixes by draft score (best-first); parents only."""
    ctx = tuple(context)
    tree = oracle_tree(
        lambda prefix: np.array([float(x) for x in draft(ctx + tuple(prefix))]), budget
    )
    return [int(p) for p in tree.parent]


@sim_verifier("tsubame")
def tsubame_round(
    target: Callable, draft: Callable, rand: Randomness, *, budget: int, context: Sequence[int] = ()
) -> tuple[int, ...]:
    """Tsubame-style two-pass: plan a topology from draft scores, re-sample its tokens, verify."""
    topology = plan_topology(draft, budget, context)
    block, _ = speculative_round(
        topology, target, draft, rand, rule="without_replacement", context=context
    )
    return block


# ----- conditional sampling forms on a realised DraftTree ------------------------------
def _verify_tree(
    tree: DraftTree,
    probs: np.ndarray,
    draft_probs: np.ndarray,
    rng: np.random.Generator,
    without_replacement: bool,
) -> tuple[int, int]:
    """Recursive rejection on a realised tree (:func:`verify_sampled`), rows checked against it."""
    return verify_sampled(
        list(tree.parent),
        list(tree.token),
        check_tree_rows(tree, probs),
        check_tree_rows(tree, draft_probs),
        GeneratorRandomness(rng),
        without_replacement=without_replacement,
    )


@sim_verifier("chain-speculative")
def chain_speculative(
    tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """Chain speculative sampling on a realised chain: accept ``min(1, p/q)``, bonus ``norm((p-q)+)``."""
    if tree.num_nodes > 1 and tree.max_depth != tree.budget:
        raise ValueError("chain_speculative needs a chain (one child per node)")
    return _verify_tree(tree, probs, draft_probs, rng, without_replacement=False)


@sim_verifier("specinfer")
def specinfer(
    tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """SpecInfer recursive rejection (children assumed i.i.d. from ``q``)."""
    return _verify_tree(tree, probs, draft_probs, rng, without_replacement=False)


@sim_verifier("specinfer-without-replacement")
def specinfer_without_replacement(
    tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
) -> tuple[int, int]:
    """Recursive rejection for siblings drawn without replacement (EAGLE-2 / Sequoia)."""
    return _verify_tree(tree, probs, draft_probs, rng, without_replacement=True)
