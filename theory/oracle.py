"""The oracle tree: the budget-B prefix-closed tree of maximum target coverage.

Since ``P`` never increases along a path, the ``B`` target prefixes of largest
``P`` form a prefix-closed tree, and it maximises ``C_p = sum P`` at budget
``B``. Ties break toward shallower nodes, then smaller token ids. The search is
best-first with lazy sibling enumeration: a popped node pushes its own best
child and its parent's next-best child, so only ``O(B)`` rows are sorted.
``C*_p(B) - C_p(T)`` is the allocation gap of a tree ``T`` (DESIGN.md).
Numpy only.
"""

from __future__ import annotations

import heapq
from typing import Callable, Protocol

import numpy as np

from .distributions import ROW_SUM_ATOL, check_rows
from .tree import DraftTree, ROOT_TOKEN


class PrefixTarget(Protocol):
    """Anything that returns ``p(. | c, prefix)`` as a ``[V]`` array for a token tuple."""

    def __call__(self, prefix: tuple[int, ...]) -> np.ndarray: ...


def _row(target: Callable, prefix: tuple[int, ...], atol: float) -> np.ndarray:
    row = np.asarray(target(prefix), dtype=np.float64)
    if row.ndim != 1:
        raise ValueError(f"target returned shape {row.shape} for prefix {prefix}, expected [V]")
    return check_rows(row[None, :], atol=atol, name=f"target row for prefix {prefix}")[0]


def oracle_tree(target: PrefixTarget, budget: int, *, root_token: int = ROOT_TOKEN,
                atol: float = ROW_SUM_ATOL) -> DraftTree:
    """Top-``budget`` target prefixes by ``P``: the maximum-coverage tree (``C*_p(B)``)."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    rows: dict[tuple[int, ...], np.ndarray] = {}
    order: dict[tuple[int, ...], np.ndarray] = {}

    def ranked(prefix: tuple[int, ...]) -> np.ndarray:
        # a node has at most `budget` children in the tree: rank only the top `budget`
        # tokens (plus every token tied with the last), by probability then token id
        if prefix not in order:
            row = rows[prefix] = _row(target, prefix, atol)
            k = min(budget, row.size)
            if k < row.size:
                cut = np.partition(row, row.size - k)[row.size - k]
                ids = np.flatnonzero(row >= cut)
            else:
                ids = np.arange(row.size)
            order[prefix] = ids[np.lexsort((ids, -row[ids]))][: max(k, 1)]
        return order[prefix]

    prefix_prob = {(): 1.0}
    heap: list[tuple[float, int, int, tuple[int, ...], int]] = []

    def push(parent: tuple[int, ...], rank: int) -> None:
        ids = ranked(parent)
        if rank >= ids.size:
            return
        tok = int(ids[rank])
        p = prefix_prob[parent] * rows[parent][tok]
        heapq.heappush(heap, (-p, len(parent) + 1, tok, parent, rank))

    push((), 0)
    chosen: list[tuple[int, ...]] = []
    while heap and len(chosen) < budget:
        neg_p, _, tok, parent, rank = heapq.heappop(heap)
        node = parent + (tok,)
        prefix_prob[node] = -neg_p
        chosen.append(node)
        push(parent, rank + 1)
        push(node, 0)
    if len(chosen) < budget:
        raise ValueError(f"the target's vocabulary admits only {len(chosen)} prefixes, fewer than budget {budget}")
    return DraftTree.from_paths(chosen, root_token=root_token)


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
