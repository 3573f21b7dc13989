"""Every small draft tree: rooted shapes up to isomorphism, child tokens up to relabelling.

* :func:`tree_shapes` yields each unordered rooted tree with ``n`` nodes once, as a
  parent array in depth-first preorder (``parent[u] < u``; children of a node ordered
  by the canonical order of their subtrees). Counts are OEIS A000081 (1, 1, 2, 4, 9, 20, 48, 115, ...).
* :func:`token_assignments` yields every child-token assignment in a vocabulary of ``V``
  tokens (siblings distinct) **up to a global relabelling of the vocabulary**: tokens are
  numbered in order of first use over the nodes ``1..n-1`` (a restricted growth string),
  so each orbit of the permutation group of the vocabulary is visited at least once
  (orbits of sibling subtrees that are isomorphic may be visited more than once).

Together they list the instances the bounded-exhaustive prover (:mod:`.prove`) runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import numpy as np

from exitlaw.theory import DraftTree


@lru_cache(maxsize=None)
def _rooted(n: int) -> tuple:
    """Canonical nested tuples (each a non-increasing tuple of its children) of the rooted trees with ``n`` nodes."""
    if n == 1:
        return ((),)
    # a total order on subtrees
    smaller = [(size, t) for size in range(1, n) for t in _rooted(size)]

    def forests(total: int, hi: int):
        if total == 0:
            yield ()
            return
        for i in range(hi, -1, -1):  # children listed largest first: each multiset once
            size, t = smaller[i]
            if size <= total:
                for rest in forests(total - size, i):
                    yield (t,) + rest

    return tuple(forests(n - 1, len(smaller) - 1))


def _parents(shape) -> list[int]:
    parent = [-1]

    def walk(node_shape, me):
        for child in node_shape:
            parent.append(me)
            walk(child, len(parent) - 1)

    walk(shape, 0)
    return parent


def tree_shapes(n: int) -> list[list[int]]:
    """Parent arrays of the rooted trees with ``n`` nodes, one per isomorphism class."""
    if n < 1:
        raise ValueError(f"a tree has at least one node, got {n}")
    return [_parents(s) for s in _rooted(n)]


def token_assignments(parent: list[int], vocab: int) -> Iterator[list[int]]:
    """Child tokens (``token[0] = -1``) with distinct siblings in ``0..vocab-1``, up to relabelling."""
    n = len(parent)
    children = [[] for _ in range(n)]
    for u in range(1, n):
        children[parent[u]].append(u)
    if any(len(c) > vocab for c in children):
        return
    token = [-1] * n

    def fill(u: int, used: int):
        if u == n:
            yield list(token)
            return
        siblings = {token[c] for c in children[parent[u]] if c < u}
        for y in range(min(used + 1, vocab)):
            if y in siblings:
                continue
            token[u] = y
            yield from fill(u + 1, max(used, y + 1))
        token[u] = -1

    yield from fill(1, 0)


def vocabularies(parent: list[int], vocab: int) -> range:
    """Vocabulary sizes tried for a shape: ``1..vocab``, and for a shape whose largest sibling set ``k``
    needs more, ``k`` (that node's row fully covered) and ``k + 1`` (a residual left): every shape is covered."""
    k = max([parent[1:].count(v) for v in range(len(parent))] + [0])
    return range(max(1, k), max(vocab, k + 1) + 1) if k >= vocab else range(max(1, k), vocab + 1)


def all_trees(max_nodes: int, vocab: int) -> Iterator[tuple[DraftTree, int]]:
    """``(tree, V)`` for every shape with ``1..max_nodes`` nodes, every vocabulary of :func:`vocabularies`
    and every token assignment up to relabelling (see the module docstring)."""
    for n in range(1, max_nodes + 1):
        for parent in tree_shapes(n):
            for V in vocabularies(parent, vocab):
                for token in token_assignments(parent, V):
                    yield DraftTree(parent=np.array(parent), token=np.array(token)), V


__all__ = ["tree_shapes", "token_assignments", "vocabularies", "all_trees"]
