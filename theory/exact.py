"""Reference exit laws in plain Python arithmetic, for small trees.

The same code runs on :class:`fractions.Fraction` (exact rationals: the oracle
the tests compare JAX against) and on ``float`` (a per-node loop: the baseline
the benchmark compares ``jit`` + ``vmap`` with). No numpy arithmetic, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

from .errors import DistributionError
from .tree import DraftTree

Number = Fraction | float


@dataclass(frozen=True)
class ReferenceLaw:
    edge: list
    prefix: list
    child_mass: list
    rho: list
    w: list
    coverage: Number
    expected_length: Number


def to_fractions(rows) -> list[list[Fraction]]:
    """Exact rationals of float rows (each float is a dyadic rational, so this loses nothing)."""
    return [[Fraction(float(x)) for x in row] for row in rows]


def reference_law_from_edges(
    tree: DraftTree, edge: Sequence[Number], one: Number = Fraction(1)
) -> ReferenceLaw:
    """``P(u) = P(par u) a(u)``, ``m(v) = sum_children a``, ``rho = 1 - m``, ``w = P rho``: node by node.

    Edges only: in float arithmetic ``rho = max(1 - m, 0)`` (residual-mass rule, part 2,
    :mod:`exitlaw.theory.law`); exact rationals need no clamp."""
    n = tree.num_nodes
    if len(edge) != n:
        raise DistributionError(f"edge has {len(edge)} entries but the tree has {n} nodes")
    zero = one - one
    a = [one] + [edge[u] for u in range(1, n)]
    prefix = [one] + [zero] * (n - 1)
    mass = [zero] * n
    for u in range(1, n):
        par = int(tree.parent[u])
        prefix[u] = prefix[par] * a[u]
        mass[par] = mass[par] + a[u]
    rho = [one - m for m in mass]
    if isinstance(one, float):
        rho = [max(r, 0.0) for r in rho]
    w = [prefix[v] * rho[v] for v in range(n)]
    coverage = sum(prefix[1:], zero)
    return ReferenceLaw(a, prefix, mass, rho, w, coverage, one + coverage)


def reference_law(
    tree: DraftTree, rows: Sequence[Sequence[Number]], one: Number = Fraction(1)
) -> ReferenceLaw:
    """Reference law from full rows (``rows[v][y] = p_v(y)``); an internal node's ``rho`` is its residual
    entries summed directly (residual-mass rule, part 1, :mod:`exitlaw.theory.law`), a leaf's is 1."""
    if len(rows) != tree.num_nodes:
        raise DistributionError(
            f"rows has {len(rows)} entries but the tree has {tree.num_nodes} nodes"
        )
    edge = [one] + [rows[int(tree.parent[u])][int(tree.token[u])] for u in range(1, tree.num_nodes)]
    law = reference_law_from_edges(tree, edge, one)
    zero = one - one
    rho = list(law.rho)
    for v in range(tree.num_nodes):
        kids = {int(tree.token[c]) for c in tree.children[v]}
        if kids:
            rho[v] = sum((p for y, p in enumerate(rows[v]) if y not in kids), zero)
    w = [law.prefix[v] * rho[v] for v in range(tree.num_nodes)]
    return ReferenceLaw(
        law.edge, law.prefix, law.child_mass, rho, w, law.coverage, law.expected_length
    )


def reference_block_law(
    tree: DraftTree, rows: Sequence[Sequence[Number]], one: Number = Fraction(1)
) -> list[list[Number]]:
    """``Pr[exit = v, bonus = y] = P(v) p_v(y) [y not a child token of v]``."""
    law = reference_law(tree, rows, one)
    zero = one - one
    out = []
    for v in range(tree.num_nodes):
        kids = {int(tree.token[c]) for c in tree.children[v]}
        out.append([zero if y in kids else law.prefix[v] * p for y, p in enumerate(rows[v])])
    return out


def reference_coverage_gain(
    tree: DraftTree, rows, parent: int, token: int, one: Number = Fraction(1)
) -> Number:
    """One-step gain of adding leaf ``token`` under ``parent``: ``P(parent) * p_parent(token)``."""
    law = reference_law(tree, rows, one)
    return law.prefix[parent] * rows[parent][token]


ReferenceFn = Callable[[DraftTree, Sequence[Sequence[Number]]], ReferenceLaw]
