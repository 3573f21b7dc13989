"""OPT-Tree: the draft tree of maximum expected acceptance length for an autoregressive drafter.

Source: Wang et al., "OPT-Tree: Speculative Decoding with Adaptive Draft Tree
Structure" (TACL 2025; arXiv 2406.17276), read for facts only. Its objective is the
draft's own estimate of the expected acceptance length of a tree ``T``,

    E_q(T) = sum_{u != root} Q(u),   Q(u) = prod_{w on path(u)} q(x_w | c, x_<w),    (1)

the sum of the drafter's prefix probabilities (the draft-side analogue of
``C_p``). Because ``Q`` never increases along a path, the ``B`` prefixes of
largest ``Q`` form a prefix-closed tree and maximise (1) at budget ``B``: the
one best-first rule (:func:`exitlaw.theory.top_prefixes`, ``combine = *``) on the
autoregressive drafter's rows, exactly what the oracle tree is on the target's.

**Assumptions where the source is silent or differs:** OPT-Tree grows the tree
layer by layer on a GPU (each layer expands the best candidates, then keeps the
top ``B`` nodes by ``Q``) and stops adding layers once the layer gain falls below
a threshold; here the top-``B`` set is computed exactly by the heap, with depth
capped at ``depth`` (the number of sequential drafter calls a round may spend,
one per layer) and a fixed budget (no threshold: the budget is spent, as in the
other builders of a preset). Rows are queried lazily, ``O(B)`` drafter calls
in the simulation, charged as ``depth`` sequential calls per round
(:meth:`exitlaw.simulate.lab.presets.SimConfig.drafter_calls`).
"""

from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from exitlaw.simulate.builders.table import BuildFn, sim_builder
from exitlaw.simulate.builders.trees import Built
from exitlaw.theory import (
    DraftTree,
    candidate_width,
    check_budget,
    check_rows,
    ranked_top_k,
    top_prefixes,
)


def _draft_row(drafter, context: tuple[int, ...], prefix: tuple[int, ...]) -> np.ndarray:
    row = np.asarray(drafter.probs(context + prefix), dtype=np.float64)
    return check_rows(row[None, :], name=f"draft row after prefix {prefix}")[0]


def opt_tree(
    drafter, context: Sequence[int], budget: int, *, depth: int, root_token: int = -1
) -> Built:
    """The top-``budget`` prefixes of the autoregressive draft score ``Q`` within ``depth`` levels, eq. (1)."""
    check_budget(budget)
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    ctx = tuple(int(t) for t in context)

    def children(prefix: tuple[int, ...]) -> tuple[list[int], list[float]]:
        if len(prefix) >= depth:
            return [], []
        row = _draft_row(drafter, ctx, prefix)
        vals, toks = ranked_top_k(row[None, :], candidate_width(budget, row.size))
        return toks[0].tolist(), vals[0].tolist()

    bf = top_prefixes(children, budget, combine=operator.mul, root_score=1.0, root_token=root_token)
    tree = bf.tree
    with np.errstate(divide="ignore"):
        lp = np.log(bf.value)
    lp[0] = 0.0
    return Built(tree, lp)


def draft_expected_acceptance(drafter, context: Sequence[int], tree: DraftTree) -> float:
    """``E_q(T) = sum_{u != root} Q(u)`` of any tree under the autoregressive drafter, eq. (1)."""
    ctx = tuple(int(t) for t in context)
    Q = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        par = int(tree.parent[u])
        Q[u] = Q[par] * _draft_row(drafter, ctx, tree.path(par))[int(tree.token[u])]
    return float(Q[1:].sum())


@sim_builder("opt-tree", drafter_calls=lambda cfg, s: cfg.horizon)  # one per layer
def make_opt_tree(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: opt_tree(ar, c, cfg.budget, depth=cfg.horizon)


__all__ = ["opt_tree", "draft_expected_acceptance"]
