"""Reusable Hypothesis strategies: draft trees and per-node target rows.

All parameters are keyword-only. Rows differ per node (shared rows hide
wrong-row and wrong-parent bugs) and the ``kind`` mix includes the hard cases:
exact zeros, near-one-hot rows, children covering all mass (``rho = 0``) and
vocabulary 2.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from exitlaw.theory.tree import DraftTree

ROW_KINDS = ("dirichlet", "sparse", "near_one_hot", "children_cover_all", "uniform")


@st.composite
def draft_trees(
    draw,
    *,
    min_nodes: int = 1,
    max_nodes: int = 12,
    max_depth: int = 5,
    max_branching: int = 3,
    vocab_size: int = 6,
) -> DraftTree:
    """Prefix-closed trees with at most ``max_nodes`` nodes, depth and branching bounded."""
    if vocab_size < 1:
        raise ValueError("vocab_size must be >= 1")
    target = draw(st.integers(min_value=min_nodes, max_value=max_nodes))
    parent, token, depth = [-1], [draw(st.integers(0, vocab_size - 1))], [0]
    used: list[set[int]] = [set()]
    while len(parent) < target:
        open_nodes = [
            v
            for v in range(len(parent))
            if depth[v] < max_depth and len(used[v]) < min(max_branching, vocab_size)
        ]
        if not open_nodes:
            break
        par = draw(st.sampled_from(open_nodes))
        tok = draw(st.sampled_from([t for t in range(vocab_size) if t not in used[par]]))
        used[par].add(tok)
        used.append(set())
        parent.append(par)
        token.append(tok)
        depth.append(depth[par] + 1)
    return DraftTree(parent=np.array(parent), token=np.array(token))


def _row(draw, vocab: int, kind: str, child_tokens: list[int]) -> list[Fraction]:
    """One row as exact rationals (so float64 and Fraction agree on the input)."""
    if kind == "uniform":
        return [Fraction(1, vocab)] * vocab
    if kind == "near_one_hot":
        hot = draw(st.integers(0, vocab - 1))
        eps = Fraction(1, 2 ** draw(st.integers(20, 50)))
        rest = [Fraction(0)] * vocab
        others = [y for y in range(vocab) if y != hot]
        for y in others:
            rest[y] = eps / len(others) if others else Fraction(0)
        rest[hot] = 1 - sum(rest)
        return rest
    weights = [draw(st.integers(0 if kind != "dirichlet" else 1, 20)) for _ in range(vocab)]
    if kind == "children_cover_all" and child_tokens:
        weights = [w if y in child_tokens else 0 for y, w in enumerate(weights)]
        if sum(weights) == 0:
            weights[child_tokens[0]] = 1
    if sum(weights) == 0:
        weights[draw(st.integers(0, vocab - 1))] = 1
    total = sum(weights)
    return [Fraction(w, total) for w in weights]


@st.composite
def fraction_rows(
    draw, tree: DraftTree, *, vocab_size: int, kinds=ROW_KINDS
) -> list[list[Fraction]]:
    """One exact-rational row per node of ``tree``, each of a kind drawn from ``kinds``."""
    rows = []
    for v in range(tree.num_nodes):
        kids = [int(tree.token[c]) for c in tree.children[v]]
        rows.append(_row(draw, vocab_size, draw(st.sampled_from(kinds)), kids))
    return rows


@st.composite
def trees_with_rows(
    draw,
    *,
    max_nodes: int = 12,
    max_depth: int = 5,
    max_branching: int = 3,
    vocab_sizes=(2, 3, 4, 6),
    kinds=ROW_KINDS,
):
    """``(tree, float64 rows [N, V], Fraction rows)``; vocabulary 2 is always in the mix."""
    vocab = draw(st.sampled_from(vocab_sizes))
    tree = draw(
        draft_trees(
            max_nodes=max_nodes, max_depth=max_depth, max_branching=max_branching, vocab_size=vocab
        )
    )
    exact = draw(fraction_rows(tree, vocab_size=vocab, kinds=kinds))
    floats = np.array([[float(x) for x in row] for row in exact], dtype=np.float64)
    return tree, floats, exact


@st.composite
def logits_rows(draw, num_nodes: int, *, vocab_size: int, scale: float = 4.0) -> np.ndarray:
    """Finite float64 logits ``[N, V]``, different per node."""
    flat = draw(
        st.lists(
            st.floats(-scale, scale, allow_nan=False, allow_infinity=False),
            min_size=num_nodes * vocab_size,
            max_size=num_nodes * vocab_size,
        )
    )
    return np.array(flat, dtype=np.float64).reshape(num_nodes, vocab_size)
