"""Fixed-tree verifiers written once over :class:`~exitlaw.simulate.randomness.Randomness`.

Each procedure takes a :class:`DraftTree`, per-node target rows ``rows[v] = p_v``
(numpy rows, or nested lists of ``float`` / ``Fraction`` for exact enumeration)
and a randomness object, and returns ``(exit_node, bonus_token)``.
docs/design.md §1.6 ("Verifiers on a fixed tree") states each rule; all three
stochastic ones have the canonical block law ``P(v) p_v(y) [y not a child token]``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from exitlaw.simulate.randomness import Randomness
from exitlaw.simulate.verifiers.table import TABLES, sim_verifier
from exitlaw.theory import DraftTree, reference_law
from exitlaw.theory.registry import PROCEDURE


def child_lookup(tree: DraftTree) -> list[dict[int, int]]:
    """``lookup[v][token] = child node`` (siblings carry distinct tokens)."""
    out: list[dict[int, int]] = [{} for _ in range(tree.num_nodes)]
    for u in range(1, tree.num_nodes):
        out[int(tree.parent[u])][int(tree.token[u])] = u
    return out


def row_copy(row):
    return row.copy() if isinstance(row, np.ndarray) else list(row)


def row_sum(row, zero):
    return row.sum() if isinstance(row, np.ndarray) else sum(row, zero)


def _zero_of(rows):
    x = rows[0][0]
    return x - x


@sim_verifier("predraw", PROCEDURE)
def predraw_procedure(tree: DraftTree, rows, rand: Randomness) -> tuple[int, int]:
    """Predraw-and-follow (DDTree): ``R_v ~ p_v`` at each node; follow the child with token ``R_v``.

    ``R_v`` is drawn lazily, only at visited nodes: the draws at unvisited nodes
    are independent of the outcome, so the law is that of drawing all of them.
    """
    kids = child_lookup(tree)
    v = 0
    while True:
        r = rand.categorical(rows[v], stream="predraw")
        nxt = kids[v].get(r)
        if nxt is None:
            return v, r
        v = nxt


@sim_verifier("residual", PROCEDURE)
def residual_procedure(
    tree: DraftTree,
    rows,
    rand: Randomness,
    child_order: Callable[[int], Sequence[int]] | None = None,
) -> tuple[int, int]:
    """Sequential residual (EAGLE-style, deterministic children), children in ``child_order(v)``.

    ``r = p_v``; accept child ``u_j`` w.p. ``r(x_j) / sum r``; on rejection ``r(x_j) = 0``
    (renormalisation is implicit in the division). All rejected: bonus ``~ r``.
    """
    zero = _zero_of(rows)
    v = 0
    while True:
        r = row_copy(rows[v])
        order = tree.children[v] if child_order is None else child_order(v)
        accepted = None
        for u in order:
            x = int(tree.token[u])
            if rand.bernoulli(r[x] / row_sum(r, zero), stream="accept"):
                accepted = int(u)
                break
            r[x] = zero
        if accepted is None:
            return v, rand.categorical(r, stream="bonus")
        v = accepted


def tev_weights(tree: DraftTree, rows) -> list:
    """Exit law ``w(v) = P(v) rho(v)`` with ``rho(v)`` the residual mass ``sum_{y not child} p_v(y)``,
    summed directly at every internal node, never as ``1 - m(v)`` (the residual-mass rule,
    :mod:`exitlaw.theory.law`): a node whose children cover its row gets weight exactly 0 (its
    residual row is all zeros) and a true residual of 1e-12 or 1e-16 stays a real weight.
    Numpy rows: ``rho = 1`` at leaves (rows are distributions), one pass over the internal rows.
    """
    if isinstance(rows, np.ndarray):  # the same quantities, vectorised for sampling runs
        edge = np.ones(tree.num_nodes)
        edge[1:] = rows[tree.parent[1:], tree.token[1:]]
        prefix = np.ones(tree.num_nodes)
        for u in range(1, tree.num_nodes):
            prefix[u] = prefix[tree.parent[u]] * edge[u]
        rest = np.ones(tree.num_nodes)
        internal = tree.internal
        if internal.size:
            # a copy: the child entries are zeroed below
            residual = rows[internal].astype(np.float64)
            slot = np.zeros(tree.num_nodes, dtype=np.int64)
            slot[internal] = np.arange(internal.size)
            residual[slot[tree.parent[1:]], tree.token[1:]] = 0.0
            rest[internal] = residual.sum(axis=1)
        return prefix * rest
    zero = _zero_of(rows)
    one = zero + 1
    law = reference_law(tree, rows, one)
    w = []
    for v in range(tree.num_nodes):
        kids = {int(tree.token[c]) for c in tree.children[v]}
        rest = sum((p for y, p in enumerate(rows[v]) if y not in kids), zero)
        w.append(law.prefix[v] * rest)
    return w


@sim_verifier("tev", PROCEDURE)
def tev_procedure(tree: DraftTree, rows, rand: Randomness) -> tuple[int, int]:
    """TEV: exit node ``V ~ w``, then bonus ``~ p_V`` with the child tokens of ``V`` masked."""
    w = tev_weights(tree, rows)
    v = rand.categorical(w, stream="exit")
    r = row_copy(rows[v])
    zero = _zero_of(rows)
    for u in tree.children[v]:
        r[int(tree.token[u])] = zero
    return v, rand.categorical(r, stream="bonus")


def _argmax(row) -> int:
    best, arg = row[0], 0
    for i in range(1, len(row)):
        if row[i] > best:
            best, arg = row[i], i
    return arg


@sim_verifier("greedy", PROCEDURE)
def greedy_procedure(tree: DraftTree, rows, rand: Randomness | None = None) -> tuple[int, int]:
    """Greedy (T = 0): follow the first argmax of ``p_v``; exit where it is not a child token."""
    kids = child_lookup(tree)
    v = 0
    while True:
        y = int(np.argmax(rows[v])) if isinstance(rows[v], np.ndarray) else _argmax(rows[v])
        nxt = kids[v].get(y)
        if nxt is None:
            return v, y
        v = nxt


PROCEDURES = TABLES[PROCEDURE]  # name -> procedure: the table the decorators above fill
