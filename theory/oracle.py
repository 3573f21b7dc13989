"""The oracle tree: the budget-B prefix-closed tree of maximum target coverage.

Since ``P`` never increases along a path, the ``B`` target prefixes of largest
``P`` form a prefix-closed tree, and it maximises ``C_p = sum P`` at budget
``B``. It is the one best-first rule (:mod:`exitlaw.theory.best_first`) with
score ``P(x) = P(x_<d) * p(x_d | c, x_<d)``: ties go to the shallower prefix,
then the lexicographically smaller token sequence. Rows are queried lazily,
one per chosen node, and only their top ``B`` tokens are ranked. Zero-probability
prefixes are candidates (score 0, not ``-inf``), and there is no horizon, so
the oracle always fills its budget. ``C*_p(B) - C_p(T)`` is the allocation gap
of a tree ``T`` (docs/design.md §1.5). Numpy only.
"""

from __future__ import annotations

import operator
from typing import Callable, Protocol

import numpy as np

from .best_first import candidate_width, check_budget, ranked_top_k, top_prefixes
from .distributions import ROW_SUM_ATOL, as_real_array, check_rows
from .tree import ROOT_TOKEN, DraftTree


class PrefixTarget(Protocol):
    """Anything that returns ``p(. | c, prefix)`` as a ``[V]`` array for a token tuple."""

    def __call__(self, prefix: tuple[int, ...]) -> np.ndarray: ...


def _row(target: Callable, prefix: tuple[int, ...], atol: float) -> np.ndarray:
    row = as_real_array(target(prefix), f"target row for prefix {prefix}").astype(np.float64)
    if row.ndim != 1:
        raise ValueError(f"target returned shape {row.shape} for prefix {prefix}, expected [V]")
    return check_rows(row[None, :], atol=atol, name=f"target row for prefix {prefix}")[0]


def oracle_tree(
    target: PrefixTarget, budget: int, *, root_token: int = ROOT_TOKEN, atol: float = ROW_SUM_ATOL
) -> DraftTree:
    """Top-``budget`` target prefixes by ``P``: the maximum-coverage tree (``C*_p(B)``).

    Nodes are listed breadth first (by depth, then best first within a depth).
    """
    budget = check_budget(budget)

    def children(prefix: tuple[int, ...]) -> tuple[list[int], list[float]]:
        # a node has at most `budget` children in the tree: rank only the top `budget` tokens
        row = _row(target, prefix, atol)
        vals, toks = ranked_top_k(row[None, :], candidate_width(budget, row.size))
        return toks[0].tolist(), vals[0].tolist()

    chosen = top_prefixes(
        children, budget, combine=operator.mul, root_score=1.0, root_token=root_token
    ).tree
    return DraftTree.from_paths(
        [chosen.path(v) for v in range(1, chosen.num_nodes)], root_token=root_token
    )


def tree_rows(target: PrefixTarget, tree: DraftTree, *, atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """Query ``p_v`` for every node of ``tree``: the ``[N, V]`` table the laws take."""
    return np.stack([_row(target, tree.path(v), atol) for v in range(tree.num_nodes)])


def coverage_under(target: PrefixTarget, tree: DraftTree, *, atol: float = ROW_SUM_ATOL) -> float:
    """``C_p(T) = sum_{v != root} P(v)`` with rows queried from ``target``."""
    total = 0.0
    prefix = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        par = int(tree.parent[u])
        prefix[u] = prefix[par] * _row(target, tree.path(par), atol)[tree.token[u]]
        total += prefix[u]
    return float(total)


def allocation_gap(target: PrefixTarget, tree: DraftTree, *, atol: float = ROW_SUM_ATOL) -> float:
    """``C*_p(B) - C_p(T)`` at the tree's own budget (>= 0)."""
    best = oracle_tree(target, tree.budget, atol=atol)
    return coverage_under(target, best, atol=atol) - coverage_under(target, tree, atol=atol)
